#!/usr/bin/env bash
# scripts/pgcluster.sh: a throwaway PostgreSQL cluster for the tests, with
# Debian's postgresql binaries (initdb, pg_ctl), no Docker and no root
# daemon: a temporary directory holds the data and the unix socket, the
# server listens on no TCP port, fsync is off (these clusters hold test
# data only; durability tests run elsewhere).
#
#   eval "$(scripts/pgcluster.sh start)"   # prints export WEBCODEX_TEST_DATABASE_URL=… and PGCLUSTER_DIR=…
#   go test ./...
#   scripts/pgcluster.sh stop              # stops the cluster in $PGCLUSTER_DIR and removes it
#
# Durability tests start their own cluster with fsync, synchronous_commit
# and full_page_writes on, crash it (an immediate stop: no checkpoint, no
# flush beyond what commits already forced) and start it again, which
# replays its WAL:
#
#   scripts/pgcluster.sh start --durable
#   scripts/pgcluster.sh crash DIR
#   scripts/pgcluster.sh restart DIR
#
# As root (CI containers), initdb and postgres refuse to run: the cluster
# is run by the unprivileged user nobody.
set -euo pipefail

bindir() {
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v pg_ctl)"
		return
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [[ -z $d ]]; then
		echo "pgcluster: no initdb/pg_ctl (apt-get install postgresql)" >&2
		exit 1
	fi
	echo "$d"
}

as_owner() {
	if [[ $(id -u) == 0 ]]; then
		runuser -u nobody -- "$@"
	else
		"$@"
	fi
}

# serve starts the cluster in $1 with the options saved at its creation.
serve() {
	as_owner "$(bindir)/pg_ctl" -D "$1/data" -l "$1/server.log" -w -o "$(cat "$1/options")" start >/dev/null ||
		{ cat "$1/server.log" >&2; exit 1; }
}

case "${1:-}" in
start)
	bin=$(bindir)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/webcodex-pg.XXXXXX")
	chmod 0755 "$dir"
	if [[ $(id -u) == 0 ]]; then
		chown nobody "$dir"
	fi
	as_owner "$bin/initdb" --no-sync -U postgres --auth=trust -D "$dir/data" >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; exit 1; }
	opts="-c listen_addresses= -k $dir -c max_connections=200"
	if [[ ${2:-} != --durable ]]; then
		opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	fi
	echo "$opts" >"$dir/options"
	serve "$dir"
	echo "export PGCLUSTER_DIR=$dir"
	echo "export WEBCODEX_TEST_DATABASE_URL='postgres://postgres@/postgres?host=$dir'"
	;;
stop)
	dir=${2:-${PGCLUSTER_DIR:-}}
	if [[ -z $dir || ! -d $dir/data ]]; then
		echo "pgcluster: no cluster directory (PGCLUSTER_DIR)" >&2
		exit 1
	fi
	as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null || true
	rm -rf "$dir"
	;;
crash)
	as_owner "$(bindir)/pg_ctl" -D "$2/data" -m immediate stop >/dev/null
	;;
restart)
	serve "$2"
	;;
*)
	echo "usage: scripts/pgcluster.sh start [--durable] | stop [DIR] | crash DIR | restart DIR" >&2
	exit 2
	;;
esac
