#!/usr/bin/env bash
# e2e.sh runs the end-to-end suite (every e2e/*.test.mjs, with node's test runner)
# against a real Parley: bin/parley serving on a free loopback port, with its embedded
# Postgres in a fresh temporary directory. Called by `make test-e2e`, which builds
# bin/parley first; `make deps-e2e` installs e2e/node_modules and chromium.
#
# The tests find the server in PARLEY_URL. The script exits with the tests' status; when
# they fail it prints the tail of the server's log. The server is stopped (SIGTERM, so
# it stops its Postgres too) and the temporary directory removed however the script
# ends. Set PARLEY_E2E_KEEP=1 to keep the directory (data and server.log) for a look.
#
# Tunables: PARLEY_E2E_READY_TIMEOUT (seconds to wait for /readyz, default 90: a cold
# initdb on a small machine), PARLEY_E2E_TEST_TIMEOUT (milliseconds per test file,
# default 300000), PARLEY_E2E_CONCURRENCY (test files run at once, default 1: the
# browser test and the others contend on small CI machines).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin/parley"
e2e="$root/e2e"
ready_timeout=${PARLEY_E2E_READY_TIMEOUT:-90}
test_timeout=${PARLEY_E2E_TEST_TIMEOUT:-300000}
concurrency=${PARLEY_E2E_CONCURRENCY:-1}

die() {
	echo "e2e: $*" >&2
	exit 1
}

[[ -x $bin ]] || die "$bin is missing: build it first (make build; make test-e2e does both)"
command -v node >/dev/null || die "node is missing: the e2e suite needs Node.js 20 or newer (make deps-e2e checks)"
[[ -d $e2e/node_modules ]] || die "$e2e/node_modules is missing: run make deps-e2e (scripts/ensure-e2e.sh)"
shopt -s nullglob
tests=("$e2e"/*.test.mjs)
shopt -u nullglob
((${#tests[@]} > 0)) || die "no *.test.mjs files in $e2e"

# Postgres runs as the postgres user when we are root, and must traverse every directory
# above its data directory; mktemp makes a 0700 directory, so open it up. Nothing secret
# lives here: a throwaway cluster reached over a socket inside this directory.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/parley-e2e.XXXXXX")
chmod 0755 "$tmp"
log="$tmp/server.log"
pid=""
testpid=""
status=1

# stop_server sends SIGTERM and waits (with a deadline) for parley to stop its HTTP server
# and its Postgres; if it will not, it is killed, and so is the Postgres it left behind,
# so the directory can be removed.
stop_server() {
	[[ -n $pid ]] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 40))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "e2e: parley (pid $pid) did not stop within 40s of SIGTERM; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			local pm="$tmp/data/pgdata/postmaster.pid"
			if [[ -f $pm ]]; then
				local pgpid
				pgpid=$(head -n 1 "$pm")
				# SIGQUIT: Postgres's immediate shutdown.
				[[ $pgpid =~ ^[0-9]+$ ]] && kill -QUIT "$pgpid" 2>/dev/null || true
			fi
		fi
	fi
	wait "$pid" 2>/dev/null || true
	pid=""
}

print_log() {
	if [[ -s $log ]]; then
		echo "e2e: last 80 lines of the server log ($log):" >&2
		tail -n 80 "$log" | sed 's/^/  | /' >&2
	fi
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $testpid ]]; then
		kill -TERM "$testpid" 2>/dev/null || true
		wait "$testpid" 2>/dev/null || true
	fi
	stop_server
	if ((rc != 0)); then
		print_log
	fi
	if [[ ${PARLEY_E2E_KEEP:-} == 1 ]]; then
		echo "e2e: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The kernel picks the port (--addr 127.0.0.1:0) and parley prints the address it got,
# so no other process can take the port between choosing it and listening on it. A
# DATABASE_URL in the environment (CI may set one for the Go tests) would make parley
# use that database instead of a fresh one, and the playground needs introspection.
start=$SECONDS
env -u DATABASE_URL -u PARLEY_INTROSPECTION \
	"$bin" serve --addr 127.0.0.1:0 --data-dir "$tmp/data" >"$log" 2>&1 </dev/null &
pid=$!

# ready_probe succeeds when GET $1 answers 200 within two seconds.
if command -v curl >/dev/null; then
	ready_probe() { curl -fsS --max-time 2 -o /dev/null "$1" 2>/dev/null; }
else
	ready_probe() {
		node -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1"
	}
fi

url=""
deadline=$((SECONDS + ready_timeout))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid" && rc=0 || rc=$?
		pid=""
		die "parley exited (status $rc) before it was ready"
	fi
	if [[ -z $url ]]; then
		# "Parley is serving GraphQL at http://127.0.0.1:PORT/graphql (playground at ...)"
		url=$(grep -oE -m 1 'serving GraphQL at http://127\.0\.0\.1:[0-9]+' "$log" | grep -oE 'http://.*' || true)
	fi
	if [[ -n $url ]] && ready_probe "$url/readyz"; then
		break
	fi
	((SECONDS < deadline)) || die "parley was not ready within ${ready_timeout}s (url: ${url:-not printed yet})"
	sleep 0.2
done
echo "e2e: parley ready at $url after $((SECONDS - start))s; running ${#tests[@]} test file(s)"

export PARLEY_URL=$url
# In the background, so that a SIGTERM or SIGINT to this script is handled at once (bash
# runs traps only between foreground commands) and cleanup stops the tests too.
(
	cd "$e2e" &&
		exec node --test --test-reporter=spec --test-concurrency="$concurrency" --test-timeout="$test_timeout" \
			"${tests[@]##*/}" </dev/null
) &
testpid=$!
wait "$testpid" && status=0 || status=$?
testpid=""
echo "e2e: tests finished with status $status after $((SECONDS - start))s"
exit "$status"
