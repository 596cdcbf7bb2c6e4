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
	as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
		-o "-c listen_addresses= -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
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
*)
	echo "usage: scripts/pgcluster.sh start | stop [DIR]" >&2
	exit 2
	;;
esac
