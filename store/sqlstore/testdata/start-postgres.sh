#!/usr/bin/env bash
# start-postgres.sh starts a throwaway PostgreSQL server for the store tests
# and prints its DSN on stdout (everything else goes to stderr):
#
#   export FLOE_TEST_PG_DSN="$(store/sqlstore/testdata/start-postgres.sh)"
#   go test -race ./store/...
#
# Usage: start-postgres.sh [port [datadir]]     start (default port 55432)
#        start-postgres.sh stop [port [datadir]] stop it
#
# It is idempotent: it installs the Debian postgresql package if no server
# binaries are found (needs root), runs initdb only if datadir is empty, and
# leaves an already running server alone. The server listens on 127.0.0.1
# only, trusts every local connection, and runs with fsync off: it is for
# tests, never for data. Run as root, it runs the server as the postgres user.
set -euo pipefail

action=start
if [[ "${1:-}" == stop ]]; then
	action=stop
	shift
fi
port="${1:-${FLOE_PG_PORT:-55432}}"
data="${2:-${FLOE_PG_DATA:-/tmp/floe-pgdata-$port}}"
sock=/tmp

log() { echo "start-postgres: $*" >&2; }

find_bin() {
	local d
	d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
	if [[ -n "$d" && -x "$d/postgres" ]]; then
		echo "$d"
	fi
}

bin="$(find_bin)"
if [[ -z "$bin" ]]; then
	if [[ "$action" == stop ]]; then
		log "no PostgreSQL installed; nothing to stop"
		exit 0
	fi
	log "installing postgresql"
	sudo=()
	if [[ "$(id -u)" != 0 ]]; then
		sudo=(sudo -n)
	fi
	"${sudo[@]}" apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq postgresql >&2
	bin="$(find_bin)"
	if [[ -z "$bin" ]]; then
		log "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found"
		exit 1
	fi
fi

# as runs a command as the server's owner: postgres when we are root.
as() {
	if [[ "$(id -u)" == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

if [[ "$action" == stop ]]; then
	if [[ -f "$data/postmaster.pid" ]]; then
		as "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
	else
		log "no server running in $data"
	fi
	exit 0
fi

if [[ ! -f "$data/PG_VERSION" ]]; then
	log "initdb $data"
	mkdir -p "$data"
	if [[ "$(id -u)" == 0 ]]; then
		chown postgres: "$data"
	fi
	chmod 700 "$data"
	as "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >&2 ||
		as "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --no-locale >&2
fi

if as "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
	log "already running in $data"
else
	log "starting on 127.0.0.1:$port ($data)"
	as "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
		-o "-p $port -k $sock -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
		start >&2
fi

for _ in $(seq 1 60); do
	if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then
		echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
		exit 0
	fi
	sleep 0.5
done
log "server did not become ready; see $data/server.log"
exit 1
