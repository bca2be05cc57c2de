#!/usr/bin/env bash
# ensure-e2e.sh installs what the end-to-end suite in e2e/ needs, and only what is missing:
#   - Debian's chromium at /usr/bin/chromium (the tests drive it with playwright-core;
#     playwright's own browser download cannot work on machines without internet);
#   - e2e/node_modules, by `npm ci`, when it is missing or older than e2e/package-lock.json.
# Idempotent and quiet when everything is in place. Called by `make deps-e2e`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
e2e="$root/e2e"

die() {
	echo "ensure-e2e: $*" >&2
	exit 1
}

# as_root runs a command as root: directly when we are root, through sudo when it needs
# no password, and otherwise says what to run by hand.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		die "need root to run: $* (run it as root, or give this user passwordless sudo)"
	fi
}

if [[ ! -x /usr/bin/chromium ]]; then
	command -v apt-get >/dev/null || die "/usr/bin/chromium is missing and there is no apt-get to install Debian's chromium"
	echo "ensure-e2e: installing Debian's chromium..."
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
	[[ -x /usr/bin/chromium ]] || die "apt-get installed chromium but /usr/bin/chromium is still missing"
fi

command -v node >/dev/null || die "node is missing: the e2e suite needs Node.js 20 or newer"
command -v npm >/dev/null || die "npm is missing: the e2e suite needs npm with Node.js 20 or newer"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 20)) || die "node $(node --version) is too old: the e2e suite needs Node.js 20 or newer"

# npm ci writes node_modules/.package-lock.json last, so its age tells whether the
# installed tree is at least as new as the lockfile.
stamp="$e2e/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$e2e/package-lock.json" -nt "$stamp" ]]; then
	echo "ensure-e2e: npm ci in e2e/..."
	(cd "$e2e" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in $e2e"
	touch "$stamp"
fi
