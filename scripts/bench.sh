#!/usr/bin/env bash
# bench.sh is `make bench`: it installs the benchmark's Node packages when they are
# missing (PostGraphile, from bench/package-lock.json), builds bin/parley and the
# benchmark program (bench/), and runs it. The benchmark starts its own PostgreSQL,
# Parley and PostGraphile on loopback, times `parley import` of a generated 100,000-message
# Claude Code session, runs the realtime fan-out benchmark (bench/fanout) when it is in
# the tree, includes the optional sections below (benchmarks of their own, make bench-*)
# when their targets exist, and writes bench/report.md, bench/report.svg and
# bench/results.json.
# Arguments are passed to the benchmark (make bench BENCH_ARGS=...), e.g. -runs 3
# -duration 2s for a quicker look; bin/parley-bench -h lists them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

die() {
	echo "bench: $*" >&2
	exit 1
}

command -v go >/dev/null || die "go is missing"
command -v node >/dev/null || die "node is missing: the benchmark runs PostGraphile, which needs Node.js 20 or newer"
command -v npm >/dev/null || die "npm is missing: it installs PostGraphile into bench/node_modules"
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 20)) || die "node $(node --version) is too old: PostGraphile needs Node.js 20 or newer here"

# npm ci installs exactly the lockfile; redo it when the lockfile changed since.
stamp=bench/node_modules/.package-lock.json
if [[ ! -f $stamp || bench/package-lock.json -nt $stamp ]]; then
	echo "bench: installing PostGraphile (npm ci in bench/)"
	(cd bench && npm ci --no-audit --no-fund --loglevel=error)
fi

mkdir -p bin
go build -o bin/parley ./cmd/parley
go build -o bin/parley-bench ./bench
fanout=()
if [[ -d bench/fanout ]]; then # the realtime fan-out benchmark (make bench-realtime)
	go build -o bin/parley-fanout ./bench/fanout
	fanout=(-fanout bin/parley-fanout)
fi

# Optional sections: benchmarks of their own, each a make target that writes a Markdown
# report, included in bench/report.md when the target exists in this tree. One line each:
# "make target|report file|title". A target that prints its report on stdout (as
# bench-streaming does) gets stdout saved to the file; one that writes the file itself
# (bench-search, bench-tree) is taken as written, provided it was written by this run.
# They run before the main benchmark, one at a time, so that none shares the machine with
# another; a section that fails is reported as failed, and the rest still run.
optional_sections=(
	"bench-streaming|bench/streaming-report.md|Live messages (bench/streaming, make bench-streaming)"
	"bench-search|bench/search-report.md|Search (bench/search, make bench-search)"
	"bench-tree|bench/tree-report.md|Conversation trees (bench/tree, make bench-tree)"
)
sections=()
only=0
for a in "$@"; do [[ $a == -only || $a == -only=* || $a == -from || $a == -from=* ]] && only=1; done
if ((only == 0)); then
	for entry in "${optional_sections[@]}"; do
		IFS='|' read -r target file title <<<"$entry"
		if ! grep -q "^$target:" Makefile; then
			echo "bench: no make $target in this tree: section \"$title\" left out"
			continue
		fi
		echo "bench: make $target (for \"$title\")"
		stamp=$(mktemp)
		out=$(mktemp)
		if make --no-print-directory -s "$target" >"$out"; then
			if [[ ! $file -nt $stamp ]]; then
				cp "$out" "$file" # the report came on stdout
			fi
			sections+=(-section "$title=$file")
		else
			echo "bench: make $target failed: section \"$title\" reported as failed" >&2
			sections+=(-section "$title=")
		fi
		rm -f "$stamp" "$out"
	done
fi
exec bin/parley-bench -parley bin/parley "${fanout[@]}" "${sections[@]}" "$@"
