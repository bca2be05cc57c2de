#!/usr/bin/env bash
# update-assets.sh refreshes the third-party files in playground/assets/ from the npm
# registry: it fetches the pinned package versions with `npm pack` into a temporary
# directory, checks each tarball against its pinned integrity hash, copies the browser
# builds and licences, and rewrites assets/VERSIONS. Nothing is bundled: GraphiQL 3.x
# ships a ready UMD build, React 18 ships UMD builds too.
#
# To move to another version, change the pins below (take the integrity from
# `npm view PKG@VERSION dist.integrity`), run this script, then `go test ./playground/`
# and the e2e test. playground.js and playground.css are Parley's own and are not touched.
set -euo pipefail

# package@version integrity
PINS=(
	"graphiql@3.9.0 sha512-rJYFlHdBbug9+YbFSwRVvgfPjCayC7wHecZkx/qB4XLuQPFQZw/yB9pmHFtOJV6RiNBBHro3u1GdocKa3YcGRA=="
	"react@18.3.1 sha512-wS+hAgJShR0KhEvPJArfuPVN1+Hz1t0Y6n5jLrGQbkb4urgPE/0Rve+1kMB1v/oWgHgm4WIcV+i7F2pTVj+2iQ=="
	"react-dom@18.3.1 sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw=="
)

# package: file in its tarball -> file in assets/
FILES=(
	"graphiql package/graphiql.min.js graphiql.min.js"
	"graphiql package/graphiql.min.css graphiql.min.css"
	"graphiql package/LICENSE LICENSE.graphiql"
	"react package/umd/react.production.min.js react.production.min.js"
	"react package/LICENSE LICENSE.react"
	"react-dom package/umd/react-dom.production.min.js react-dom.production.min.js"
	"react-dom package/LICENSE LICENSE.react-dom"
)

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/vendor-npm.sh
source "$here/../scripts/vendor-npm.sh"
vendor_npm "$here/assets" playground \
	"graphiql.min.js is GraphiQL's UMD build: it bundles graphql-js, CodeMirror 5, the" \
	"@graphiql/toolkit fetcher and the graphql-ws client (graphql-transport-ws), each MIT." \
	"playground.js and playground.css are Parley's own."
