# vendor-npm.sh is sourced by playground/update-assets.sh and viewer/update-assets.sh:
# vendor_npm fetches the pinned npm packages with `npm pack` into a temporary directory,
# checks each tarball against its pinned integrity hash, copies the listed files into an
# assets directory and rewrites its VERSIONS file. The caller sets two arrays first:
#   PINS:  "package@version integrity", one per package
#   FILES: "package file-in-its-tarball file-in-assets", one per file
# Usage: vendor_npm ASSETS_DIR WHAT NOTE...  (WHAT names the assets in messages; each NOTE
# is a comment line for VERSIONS, without its "# ").

vendor_npm() {
	local out=$1 what=$2
	shift 2
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local to this function
	trap "rm -rf '$tmp'" EXIT

	command -v npm >/dev/null || { echo "update-assets.sh: npm is required" >&2; exit 1; }

	local pin spec want name got tgz integrity
	for pin in "${PINS[@]}"; do
		read -r spec want <<<"$pin"
		name=${spec%@*}
		# npm pack verifies the download against the registry's integrity; we also check it
		# against our pin so a re-published or substituted package is noticed.
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
	local f pkg src dst
	for f in "${FILES[@]}"; do
		read -r pkg src dst <<<"$f"
		cp "$tmp/$pkg/$src" "$out/$dst"
	done

	local note lic
	{
		echo "# Third-party files in this directory, written by ../update-assets.sh. Do not edit."
		for note in "$@"; do
			echo "# $note"
		done
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

	echo "$what assets updated:"
	(cd "$out" && ls -l "${FILES[@]##* }")
}
