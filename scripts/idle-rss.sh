#!/usr/bin/env bash
# scripts/idle-rss.sh: measure the idle resident memory of freshly started
# servers, alternating binaries start by start, and print each start's
# VmRSS and its parts (RssAnon, RssFile, RssShmem, in kB, from
# /proc/PID/status) and the median of each column per binary.
#
# Each start uses a fresh data directory and a fresh git repository as its
# project, waits until the server answers (serve: GET /healthz; mcp:
# initialize and tools/list over stdio), waits SETTLE seconds and reads
# the status. Linux only. Decision 0058 records the figures.
#
#   scripts/idle-rss.sh BIN...             # each BIN alternately, 5 starts each
#   COUNT=9 scripts/idle-rss.sh old new    # more starts
#   MODE=mcp scripts/idle-rss.sh old new   # webcodex mcp over stdio
#   LIST=1 scripts/idle-rss.sh old new     # serve: one /api/tools/list first
#
# Build the binaries to compare first, for example
#   git stash; go build -o /tmp/wc-old ./cmd/webcodex; git stash pop
#   go build -o /tmp/wc-new ./cmd/webcodex
# A binary's mapped file pages count in RssFile; on kernels that map page
# cache folios with huge pages (see smaps FilePmdMapped) that part depends
# on the kernel and on how the file came into the page cache, so compare
# RssAnon as well as VmRSS.
set -euo pipefail
count="${COUNT:-5}"
mode="${MODE:-serve}"
settle="${SETTLE:-2}"
fields='VmRSS|RssAnon|RssFile|RssShmem'

if [[ $# -eq 0 ]]; then
	sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# status PID prints the fields of /proc/PID/status, values only, in order.
status() {
	awk -v re="^($fields):" '$0 ~ re {printf "%s ", $2} END {print ""}' "/proc/$1/status"
}

# start_serve BIN DIR REPO: one serve start; prints its status line.
start_serve() {
	local bin=$1 dir=$2 repo=$3 pid base="" tok
	"$bin" serve --data-dir "$dir" --listen 127.0.0.1:0 --project "$repo" >"$dir.out" 2>"$dir.err" &
	pid=$!
	for _ in $(seq 1 300); do
		base=$(sed -n 's/.* listening on \(http:\/\/[^ ]*\).*/\1/p' "$dir.out" | head -n 1)
		[[ -n $base ]] && break
		sleep 0.05
	done
	curl -sf "$base/healthz" >/dev/null
	if [[ -n ${LIST:-} ]]; then
		tok=$(grep -A1 'Admin token (shown once' "$dir.out" | tail -n 1 | tr -d ' ')
		curl -sf -X POST -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
			-d '{}' "$base/api/tools/list" >/dev/null
	fi
	sleep "$settle"
	status "$pid"
	kill -TERM "$pid"
	wait "$pid" || true
}

# start_mcp BIN DIR REPO: one `webcodex mcp` start; prints its status line.
start_mcp() {
	local bin=$1 dir=$2 repo=$3 pid line
	coproc srv { exec "$bin" mcp --data-dir "$dir" --project "$repo" 2>"$dir.err"; }
	pid=$srv_PID
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle-rss","version":"1"}}}' >&"${srv[1]}"
	read -r -t 30 line <&"${srv[0]}"
	printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&"${srv[1]}"
	read -r -t 30 line <&"${srv[0]}"
	sleep "$settle"
	status "$pid"
	exec {srv[1]}>&-
	wait "$pid" || true
}

for i in $(seq 1 "$count"); do
	for bin in "$@"; do
		dir="$tmp/data-$i-$(basename "$bin")"
		repo="$tmp/repo-$i-$(basename "$bin")"
		git init -q "$repo"
		line=$("start_$mode" "$bin" "$dir" "$repo")
		echo "$line" >>"$tmp/$(basename "$bin").rows"
		echo "$(basename "$bin") start $i: $line"
	done
done
echo "medians (kB): VmRSS RssAnon RssFile RssShmem"
for bin in "$@"; do
	printf '%s:' "$(basename "$bin")"
	for col in 1 2 3 4; do
		printf ' %s' "$(cut -d' ' -f"$col" "$tmp/$(basename "$bin").rows" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
	done
	echo
done
