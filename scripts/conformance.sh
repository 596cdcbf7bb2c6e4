#!/usr/bin/env bash
# scripts/conformance.sh: run the official MCP conformance suite
# (@modelcontextprotocol/conformance, server side) against a real
# `webcodex serve` on a free loopback port.
#
# Optional lane: needs Node/npx and the npm registry (Node 22 is fetched
# through npx as the `node@22` package); .ci/run does not call it.
#
#   scripts/conformance.sh                      # every scenario below
#   scripts/conformance.sh 2026-07-28:caching   # only the named SPEC:SCENARIO pairs
#   scripts/conformance.sh authorization        # the authorization-server leg instead:
#                                               # scripts/conformance/authorization.sh
#                                               # against `webcodex serve --oauth`
#
# Environment:
#   CONFORMANCE_PKG   conformance package (default @modelcontextprotocol/conformance@0.2.0-alpha.12)
#   CONFORMANCE_KEEP  1 keeps the temp dir (server logs, checks.json per scenario)
#   CONFORMANCE_BASELINE  expected-failures file (default scripts/conformance/expected-failures.yml)
#
# Authentication: WebCodex serves /mcp only behind bearer authentication and
# `conformance server` has no option to send request headers. The server is
# started with a random WEBCODEX_TOKEN, and the conformance CLI runs with
# scripts/conformance/bearer-preload.mjs (node --import), which adds
# `Authorization: Bearer <token>` to the CLI's requests to exactly that
# server origin, and changes nothing else. The server runs unmodified, with
# its whole HTTP stack (Host/Origin checks, auth, body limits) in front of
# /mcp. A preflight checks that an unauthenticated POST /mcp is still
# rejected with 401.
#
# Baseline: scripts/conformance/expected-failures.yml (format of the CLI's
# --expected-failures; each entry explains why it is expected). The script
# exits non-zero when a scenario has an unexpected failure or warning, when a
# baseline entry has become stale (now passing), or when the CLI fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == authorization ]]; then
	shift
	exec "$root/scripts/conformance/authorization.sh" "$@"
fi
prog=conformance
# shellcheck source=scripts/serve-lib.sh
. "$root/scripts/serve-lib.sh"
conf_pkg=${CONFORMANCE_PKG:-@modelcontextprotocol/conformance@0.2.0-alpha.12}
node_pkg=node@22
baseline=${CONFORMANCE_BASELINE:-$root/scripts/conformance/expected-failures.yml}
preload="$root/scripts/conformance/bearer-preload.mjs"

# SPEC:SCENARIO pairs that apply to WebCodex (no reference fixture tools,
# no prompts/resources content, stateless HTTP). The tools-call-*, prompts-*,
# resources-* and input-required-* scenarios need the suite's fixture server.
default_scenarios=(
	2026-07-28:server-stateless
	2026-07-28:caching
	2026-07-28:http-header-validation
	2026-07-28:dns-rebinding-protection
	2026-07-28:tools-list
	2025-11-25:server-initialize
	2025-11-25:tools-list
	2025-11-25:dns-rebinding-protection
)
if (($# > 0)); then
	scenarios=("$@")
else
	scenarios=("${default_scenarios[@]}")
fi
for s in "${scenarios[@]}"; do
	if [[ $s != *:* ]]; then
		echo "conformance: argument $s is not SPEC:SCENARIO (e.g. 2026-07-28:caching)" >&2
		exit 2
	fi
done

require_cmds go npx
run_timeout=()
if command -v timeout >/dev/null 2>&1; then
	run_timeout=(timeout 600)
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/webcodex-conformance.XXXXXX")
server_pid=""
keep=${CONFORMANCE_KEEP:-}
trap lane_cleanup EXIT
trap 'exit 130' INT TERM

echo "== build"
(cd "$root" && go build -o "$tmp/webcodex" ./cmd/webcodex)

mkdir -p "$tmp/data" "$tmp/project" "$tmp/results"
printf '# conformance fixture\n' >"$tmp/project/README.md"
token="wc-conformance-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"

echo "== start webcodex serve"
# Only the variables this run sets reach the server's configuration.
env -u WEBCODEX_LISTEN -u WEBCODEX_ALLOWED_ORIGINS -u WEBCODEX_PUBLIC_URL -u WEBCODEX_DATA \
	WEBCODEX_TOKEN="$token" WEBCODEX_SHUTDOWN_TIMEOUT=5s \
	"$tmp/webcodex" serve --data-dir "$tmp/data" --project "conformance=$tmp/project" --listen 127.0.0.1:0 \
	>"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!
wait_for_server "$tmp/serve.out" "$tmp/serve.err"
url="$base/mcp"
echo "server: $url (pid $server_pid)"

if command -v curl >/dev/null 2>&1; then
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data '{}' "$url" || true)
	if [[ $code != 401 ]]; then
		echo "conformance: preflight: unauthenticated POST /mcp answered $code, want 401" >&2
		exit 1
	fi
	echo "preflight: unauthenticated POST /mcp -> 401"
fi

# The CLI's command line, run by npx in a shell; values travel in the
# environment so no quoting reaches that shell.
export WEBCODEX_CONFORMANCE_TOKEN="$token" WEBCODEX_CONFORMANCE_ORIGIN="$base"
export WC_CONF_PRELOAD="$preload" WC_CONF_URL="$url" WC_CONF_BASELINE="$baseline"
# shellcheck disable=SC2016 # expanded by npx's shell
cli='node --import "$WC_CONF_PRELOAD" "$(command -v conformance)" server --url "$WC_CONF_URL" --scenario "$WC_CONF_SCENARIO" --spec-version "$WC_CONF_SPEC" --expected-failures "$WC_CONF_BASELINE" -o "$WC_CONF_OUT"'

strip() { sed 's/\x1b\[[0-9;]*m//g'; }

declare -a summary=()
declare -a expected_list=()
declare -a problem_list=()
failed=0
for pair in "${scenarios[@]}"; do
	spec=${pair%%:*}
	scenario=${pair#*:}
	out="$tmp/results/$spec/$scenario"
	log="$out.log"
	mkdir -p "$out"
	echo "== $spec $scenario"
	rc=0
	WC_CONF_SPEC="$spec" WC_CONF_SCENARIO="$scenario" WC_CONF_OUT="$out" \
		"${run_timeout[@]}" npx -y -p "$node_pkg" -p "$conf_pkg" -c "$cli" >"$log" 2>&1 || rc=$?
	strip <"$log" | grep -v -e '^npm warn' -e '^npm WARN' >"$log.txt" || true
	counts=$(grep -E '^Passed: [0-9]+/[0-9]+' "$log.txt" | tail -n 1 || true)
	expected=$(awk '/^Expected failures \(in baseline\):/{f=1;next} f&&/^  ~ /{sub(/^  ~ /,"");print;next} f{f=0}' "$log.txt")
	unexpected=$(awk '/^Unexpected failures \(not in baseline\):/{f=1;next} f&&/^  ✗ /{sub(/^  ✗ /,"");print;next} f{f=0}' "$log.txt")
	stale=$(awk '/^Stale baseline entries/{f=1;next} f&&/^  ✓ /{sub(/^  ✓ /,"");print;next} f{f=0}' "$log.txt")
	n_expected=$(grep -c . <<<"$expected" || true)
	status=ok
	if [[ -z $counts ]] || grep -q '^SKIPPED' "$log.txt"; then
		status=ERROR
	fi
	if ((rc != 0)) || [[ -n $unexpected || -n $stale ]]; then
		status=FAIL
	fi
	if [[ $status != ok ]]; then
		failed=1
		# Show what went wrong: the CLI's failed checks and baseline verdict.
		grep -E 'FAILURE|WARNING|Error|Unexpected|Stale|  ✗ |  ✓ |SKIPPED|timed out|exited with code' "$log.txt" | head -n 60 | sed 's/^/    /' || true
	fi
	summary+=("$(printf '%-10s  %-26s  %-44s  expected=%-2s  %s' "$spec" "$scenario" "${counts:-no result}" "$n_expected" "$status")")
	while IFS= read -r e; do [[ -n $e ]] && expected_list+=("$spec  $e"); done <<<"$expected"
	while IFS= read -r e; do [[ -n $e ]] && problem_list+=("$spec  unexpected: $e"); done <<<"$unexpected"
	while IFS= read -r e; do [[ -n $e ]] && problem_list+=("$spec  stale baseline entry (now passing): $e"); done <<<"$stale"
	if ((rc != 0)) && [[ -z $unexpected && -z $stale ]]; then
		problem_list+=("$spec  $scenario: conformance CLI exited $rc (see log: CONFORMANCE_KEEP=1)")
	fi
done

echo
echo "== summary ($conf_pkg against $url)"
printf '%s\n' "${summary[@]}"
if ((${#expected_list[@]} > 0)); then
	echo "expected failures ($baseline):"
	printf '  ~ %s\n' "${expected_list[@]}"
fi
if ((${#problem_list[@]} > 0)); then
	echo "problems:"
	printf '  ✗ %s\n' "${problem_list[@]}"
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
	echo "conformance: the server exited during the run:" >&2
	tail -n 20 "$tmp/serve.err" >&2
	failed=1
fi
if ((failed)); then
	echo "conformance: FAILED"
	exit 1
fi
echo "conformance: OK (only baseline failures)"
