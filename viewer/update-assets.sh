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
out="$here/assets"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v npm >/dev/null || { echo "update-assets.sh: npm is required" >&2; exit 1; }

for pin in "${PINS[@]}"; do
	read -r spec want <<<"$pin"
	name=${spec%@*}
	got=$(cd "$tmp" && npm pack --silent --json "$spec" | node -e '
		let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
			const [r] = JSON.parse(s); console.log(r.filename + " " + r.integrity);
		});')
	read -r tgz integrity <<<"$got"
	if [[ "$integrity" != "$want" ]]; then
		echo "update-assets.sh: $spec integrity is $integrity, pinned $want" >&2
		exit 1
	fi
	mkdir -p "$tmp/$name"
	tar -xzf "$tmp/$tgz" -C "$tmp/$name"
done

mkdir -p "$out"
for f in "${FILES[@]}"; do
	read -r pkg src dst <<<"$f"
	cp "$tmp/$pkg/$src" "$out/$dst"
done

{
	echo "# Third-party files in this directory, written by ../update-assets.sh. Do not edit."
	echo "# viewer.js, viewer.css and the templates are Parley's own."
	echo "# package@version  licence  npm integrity"
	for pin in "${PINS[@]}"; do
		read -r spec want <<<"$pin"
		name=${spec%@*}
		lic=$(node -p "require('$tmp/$name/package/package.json').license")
		echo "$spec  $lic  $want"
	done
	echo
	echo "# sha256  file"
	for f in "${FILES[@]}"; do
		read -r _ _ dst <<<"$f"
		(cd "$out" && sha256sum "$dst")
	done
} >"$out/VERSIONS"

echo "viewer assets updated:"
(cd "$out" && ls -l "${FILES[@]##* }")
