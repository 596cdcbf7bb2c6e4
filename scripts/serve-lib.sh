# scripts/serve-lib.sh: shell functions shared by the optional lanes that
# run a real `webcodex serve` (scripts/conformance.sh,
# scripts/client-sweep.sh). Source it after setting prog (the prefix of
# messages); the functions use server_pid (the server's process id), tmp
# (the lane's temporary directory) and keep.

# require_cmds NAME...: exits 2 unless every NAME is on PATH.
require_cmds() {
	local cmd
	for cmd in "$@"; do
		if ! command -v "$cmd" >/dev/null 2>&1; then
			echo "$prog: $cmd is required" >&2
			exit 2
		fi
	done
}

# stop_server stops the server with SIGTERM, waits up to 10s, then kills
# it, and clears server_pid.
stop_server() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$server_pid" 2>/dev/null; then
			echo "$prog: server did not stop on SIGTERM; killing it" >&2
			kill -KILL "$server_pid" 2>/dev/null || true
		fi
		wait "$server_pid" 2>/dev/null || true
	fi
	server_pid=""
}

# wait_for_server OUT ERR sets base to the address the server (its
# stdout in OUT, stderr in ERR) reports; it exits 1 when the server ends
# first or reports nothing within 30s.
wait_for_server() {
	base=""
	for _ in $(seq 1 300); do
		base=$(sed -n 's/.* listening on \(http:\/\/[^ ]*\).*/\1/p' "$1" | head -n 1)
		[[ -n $base ]] && break
		if ! kill -0 "$server_pid" 2>/dev/null; then
			echo "$prog: webcodex serve exited early:" >&2
			tail -n 20 "$2" >&2
			exit 1
		fi
		sleep 0.1
	done
	if [[ -z $base ]]; then
		echo "$prog: webcodex serve did not report its address within 30s" >&2
		exit 1
	fi
}

# lane_cleanup, the lanes' EXIT trap, stops the server, removes tmp
# (keeps it, saying so, when keep is 1) and exits with the status the
# script was exiting with.
lane_cleanup() {
	local rc=$?
	stop_server
	if [[ $keep == 1 ]]; then
		echo "$prog: kept $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$rc"
}
