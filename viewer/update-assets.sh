#!/usr/bin/env bash
# update-assets.sh refreshes the third-party files in viewer/assets/ from the npm
# registry, as playground/update-assets.sh does for the playground: it fetches the
# pinned versions with `npm pack`, checks each tarball against its pinned integrity,
# copies the browser builds and licences, and rewrites assets/VERSIONS. Nothing is
# bundled or built: graphql-ws ships a UMD build (the graphqlWs global), and
# highlight.js's cdn-assets package ships its "common" bundle (about 40 languages, the
# hljs global) and its themes ready to serve.
#
# To move to another version, change the pins (integrity from `npm view PKG@VERSION
# dist.integrity`), run this script, then `go test ./viewer/` and the e2e suite.
# viewer.js, viewer.css and the templates are Parley's own and are not touched.
set -euo pipefail

# package@version integrity
PINS=(
	"graphql-ws@6.4.2 sha512-wxhPhhOGJo8PbGDkBYVE76sZLDrS+GkyrR4bZECSLVbo0pZZNKs0HtBh2Ip/uaUuiVUxwO9ssI9R92buQfNSqQ=="
	"@highlightjs/cdn-assets@11.11.1 sha512-VEPdHzwelZ12hEX18BHduqxMZGolcUsrbeokHYxOUIm8X2+M7nx5QPtPeQgRxR9XjhdLv4/7DD5BWOlSrJ3k7Q=="
)

# package: file in its tarball -> file in assets/
FILES=(
	"graphql-ws package/umd/graphql-ws.min.js graphql-ws.min.js"
	"graphql-ws package/LICENSE.md LICENSE.graphql-ws"
	"@highlightjs/cdn-assets package/highlight.min.js highlight.min.js"
	"@highlightjs/cdn-assets package/styles/github.min.css hljs-light.min.css"
	"@highlightjs/cdn-assets package/styles/github-dark.min.css hljs-dark.min.css"
	"@highlightjs/cdn-assets package/LICENSE LICENSE.highlight.js"
)

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../scripts/vendor-npm.sh
source "$here/../scripts/vendor-npm.sh"
vendor_npm "$here/assets" viewer \
	"viewer.js, viewer.css and the templates are Parley's own."
