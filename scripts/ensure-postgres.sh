#!/usr/bin/env bash
# ensure-postgres.sh makes sure the PostgreSQL server binaries (initdb and postgres) are
# installed, since parley runs its own private cluster from them (package localpg). When
# they are missing it installs Debian's postgresql package (PostgreSQL 15 on Debian 12).
# Idempotent and quiet when everything is in place. Called by `make deps`.
set -euo pipefail

die() {
	echo "ensure-postgres: $*" >&2
	exit 1
}

howto="install the PostgreSQL server package yourself: apt-get install postgresql (Debian, Ubuntu), dnf install postgresql-server (Fedora), brew install postgresql (macOS)"

# as_root runs a command as root: directly when we are root, through sudo when it needs
# no password, and otherwise says what to install by hand.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		die "PostgreSQL server binaries (initdb, postgres) not found, and installing them needs root (or passwordless sudo); $howto"
	fi
}

# has_server_binaries looks where localpg looks: `pg_config --bindir`, then
# /usr/lib/postgresql/*/bin, then PATH. Debian's pg_config alone (libpq-dev) is not enough:
# the directory must hold both programs.
has_server_binaries() {
	local dirs=() d
	if command -v pg_config >/dev/null; then
		dirs+=("$(pg_config --bindir 2>/dev/null || true)")
	fi
	for d in /usr/lib/postgresql/*/bin; do
		dirs+=("$d")
	done
	if command -v initdb >/dev/null; then
		dirs+=("$(dirname "$(command -v initdb)")")
	fi
	for d in "${dirs[@]}"; do
		if [[ -n $d && -x $d/initdb && -x $d/postgres ]]; then
			return 0
		fi
	done
	return 1
}

# clusters lists Debian's system clusters as "version/name", if postgresql-common is here.
clusters() {
	if command -v pg_lsclusters >/dev/null; then
		pg_lsclusters --no-header 2>/dev/null | awk '{ print $1 "/" $2 }'
	fi
}

if has_server_binaries; then
	exit 0
fi
command -v apt-get >/dev/null || die "PostgreSQL server binaries (initdb, postgres) not found and there is no apt-get; $howto"

before=$(clusters)
as_root true # fail before announcing an install that cannot happen
echo "ensure-postgres: PostgreSQL server not found; installing Debian's postgresql package" >&2
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql
has_server_binaries || die "installed the postgresql package, but still found no initdb and postgres under /usr/lib/postgresql/*/bin; $howto"

# Installing the package creates and starts a system cluster ("15/main"). Parley never
# uses it, so stop it and keep it from starting at boot, leaving it otherwise intact.
# Clusters that existed before this install are not ours to touch.
for cluster in $(clusters); do
	if grep -qxF "$cluster" <<<"$before"; then
		continue
	fi
	version=${cluster%%/*} name=${cluster#*/}
	as_root pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
	if [[ -f /etc/postgresql/$version/$name/start.conf ]]; then
		echo manual | as_root tee "/etc/postgresql/$version/$name/start.conf" >/dev/null || true
	fi
	echo "ensure-postgres: stopped Debian's unused system cluster $cluster and set it to start manually" \
		"(/etc/postgresql/$version/$name/start.conf); parley runs its own private cluster" >&2
done
