#!/usr/bin/env bash
# bench.sh is `make bench`: it installs the benchmark's Node packages when they are
# missing (PostGraphile, from bench/package-lock.json), builds bin/parley and the
# benchmark program (bench/), and runs it. The benchmark starts its own PostgreSQL,
# Parley and PostGraphile on loopback, times `parley import` of a generated 100,000-message
# Claude Code session, runs the realtime fan-out benchmark (bench/fanout) when it is in
# the tree, and writes bench/report.md, bench/report.svg and bench/results.json.
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
exec bin/parley-bench -parley bin/parley "${fanout[@]}" "$@"
