#!/usr/bin/env bash
# scripts/client-sweep.sh: every tool's success and failure through the
# official TypeScript MCP SDK v1 and v2 clients and the MCP Inspector CLI,
# against a real `webcodex serve` (full profile) on a free loopback port
# (decision 0046).
#
# Optional lane, like scripts/conformance.sh: needs Go, git, Node/npx, the
# npm registry (the clients are installed into a temp dir; Node 22, which
# the Inspector requires, is fetched through npx as the `node@22` package),
# and go, cargo and node for the fixture project's validation tools.
# .ci/run and `go test ./...` do not call it.
#
#   scripts/client-sweep.sh                  # sdk-v1 sdk-v2 inspector inspector-modern oauth-sdk-v1 oauth-sdk-v2
#   scripts/client-sweep.sh sdk-v1           # only the named clients
#
# The TypeScript SDKs and the Inspector negotiate 2025-11-25 with WebCodex;
# inspector-modern is the Inspector with --protocol-era modern (2026-07-28).
#
# For each client a fresh server and fixture project are started and
# scripts/client-sweep/sweep.mjs drives every listed tool to a real success
# and a real failure; a client that rejects a result (for example TS SDK
# v1's -32602 "Structured content does not match the tool's output
# schema", which it raises for a failure too, since it validates
# structuredContent whatever isError says) fails the sweep. Then
# `inspector --cli --method tools/list --strict` checks the schemas'
# portability in both eras (exit 6 on a portability error).
#
# oauth-sdk-v1 and oauth-sdk-v2 are the TS SDKs' OAuth client flow instead
# of the sweep: the server runs with --oauth (the built-in authorization
# server) and no bootstrap token; a wc_pat_ API token created offline
# (`webcodex token create`, default scopes) is the person who approves on
# the console; scripts/client-sweep/oauth.mjs connects with an
# OAuthClientProvider from the 401 (discovery, DCR, consent approved over
# HTTP, code exchange), lists the tools, calls project_overview, makes the
# SDK refresh after a 401 and checks a revoked token is refused.
#
# Environment:
#   SWEEP_SDK_V1     TS SDK v1 package (default @modelcontextprotocol/sdk@1.32.2)
#   SWEEP_SDK_V2     TS SDK v2 client package (default @modelcontextprotocol/client@2.4.0)
#   SWEEP_INSPECTOR  Inspector package (default @modelcontextprotocol/inspector@2.12.0)
#   SWEEP_KEEP       1 keeps the temp dir (server logs, installed clients)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
prog=client-sweep
# shellcheck source=scripts/serve-lib.sh
. "$root/scripts/serve-lib.sh"
sdk_v1=${SWEEP_SDK_V1:-@modelcontextprotocol/sdk@1.32.2}
sdk_v2=${SWEEP_SDK_V2:-@modelcontextprotocol/client@2.4.0}
inspector=${SWEEP_INSPECTOR:-@modelcontextprotocol/inspector@2.12.0}
node_pkg=node@22

clients=("$@")
if ((${#clients[@]} == 0)); then
	clients=(sdk-v1 sdk-v2 inspector inspector-modern oauth-sdk-v1 oauth-sdk-v2)
fi
for c in "${clients[@]}"; do
	case $c in
	sdk-v1 | sdk-v2 | inspector | inspector-modern | oauth-sdk-v1 | oauth-sdk-v2) ;;
	*)
		echo "client-sweep: unknown client $c (sdk-v1, sdk-v2, inspector, inspector-modern, oauth-sdk-v1, oauth-sdk-v2)" >&2
		exit 2
		;;
	esac
done
require_cmds go git npm npx node cargo

tmp=$(mktemp -d "${TMPDIR:-/tmp}/webcodex-sweep.XXXXXX")
server_pid=""
keep=${SWEEP_KEEP:-}
trap lane_cleanup EXIT
trap 'exit 130' INT TERM

echo "== build"
(cd "$root" && go build -o "$tmp/webcodex" ./cmd/webcodex)

echo "== install $sdk_v1 $sdk_v2 $inspector"
mkdir -p "$tmp/npm"
cp "$root/scripts/client-sweep/sweep.mjs" "$root/scripts/client-sweep/oauth.mjs" "$tmp/npm/"
(cd "$tmp/npm" && printf '{"private":true,"type":"module"}\n' >package.json &&
	npm install --no-audit --no-fund --loglevel=error "$sdk_v1" "$sdk_v2" "$inspector" >"$tmp/npm-install.log" 2>&1) || {
	tail -n 20 "$tmp/npm-install.log" >&2
	exit 1
}

# fixture writes the project the sweep works on: a Go module whose Add
# subtracts (go_test fails until the sweep fixes it), a node test and a
# Rust crate, committed in git.
fixture() {
	local dir=$1
	mkdir -p "$dir/crate/src" "$dir/docs/notes"
	printf 'module example.com/calc\n\ngo 1.21\n' >"$dir/go.mod"
	printf 'package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n' >"$dir/calc.go"
	printf 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf("Add(2, 3) = %%d, want 5", got)\n\t}\n}\n' >"$dir/calc_test.go"
	printf "const test = require('node:test');\ntest('adds', () => {});\n" >"$dir/calc.test.js"
	printf '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n' >"$dir/crate/Cargo.toml"
	printf 'pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n' >"$dir/crate/src/lib.rs"
	printf 'target/\n' >"$dir/.gitignore"
	printf 'notes\n' >"$dir/docs/notes/read.md"
	git -C "$dir" -c init.defaultBranch=main init -q
	git -C "$dir" add .
	git -C "$dir" -c user.name=sweep -c user.email=sweep@example.com commit -q -m init
}

token="wc-sweep-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
url=""
# start_server runs `webcodex serve` (full profile) over a fresh data
# directory and fixture project named $1, and sets url. For an oauth-*
# client it creates a wc_pat_ API token in the data directory first
# (exported as WEBCODEX_SWEEP_CONSOLE_TOKEN) and serves with --oauth and no
# bootstrap token.
start_server() {
	local run=$tmp/$1
	mkdir -p "$run/data"
	fixture "$run/calc"
	local -a wc_env=(env -u WEBCODEX_LISTEN -u WEBCODEX_ALLOWED_ORIGINS -u WEBCODEX_PUBLIC_URL -u WEBCODEX_DATA
		-u WEBCODEX_TOKEN -u WEBCODEX_OAUTH WEBCODEX_SHUTDOWN_TIMEOUT=5s WEBCODEX_TOOL_PROFILE=full)
	local -a extra=()
	if [[ $1 == oauth-* ]]; then
		WEBCODEX_SWEEP_CONSOLE_TOKEN=$("${wc_env[@]}" "$tmp/webcodex" --data-dir "$run/data" token create --name sweep-console --json |
			node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')
		export WEBCODEX_SWEEP_CONSOLE_TOKEN
		extra=(--oauth)
	else
		wc_env+=(WEBCODEX_TOKEN="$token")
	fi
	"${wc_env[@]}" "$tmp/webcodex" serve "${extra[@]}" --data-dir "$run/data" --project "calc=$run/calc" --listen 127.0.0.1:0 \
		>"$run/serve.out" 2>"$run/serve.err" &
	server_pid=$!
	local base
	wait_for_server "$run/serve.out" "$run/serve.err"
	url="$base/mcp"
}

export WEBCODEX_SWEEP_TOKEN="$token"
failed=0
declare -a summary=()
for c in "${clients[@]}"; do
	echo "== $c"
	start_server "$c"
	rc=0
	script=sweep.mjs
	[[ $c == oauth-* ]] && script=oauth.mjs
	(cd "$tmp/npm" && npx -y -p "$node_pkg" -c "node $script $c $url") >"$tmp/$c.log" 2>&1 || rc=$?
	# (|| true: head closing the pipe early is no failure of the sweep.)
	grep -v -e '^npm warn' -e '^npm WARN' "$tmp/$c.log" | sed 's/^/    /' | head -n 80 || true
	summary+=("$(grep -E "^$c: " "$tmp/$c.log" | tail -n 1 || echo "$c: no result (exit $rc)")")
	((rc == 0)) || failed=1
	if [[ $c == inspector ]]; then
		for era in modern legacy; do
			rc=0
			(cd "$tmp/npm" && npx -y -p "$node_pkg" -c "node node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js \
				--transport http --server-url $url --header 'Authorization: Bearer $token' --protocol-era $era \
				--method tools/list --strict" >/dev/null 2>"$tmp/strict-$era.log") || rc=$?
			findings=$(grep -cE '^(Error|Warning): tool' "$tmp/strict-$era.log" || true)
			summary+=("inspector --strict tools/list ($era): exit $rc, $findings portability findings")
			if ((rc != 0 || findings != 0)); then
				failed=1
				grep -v -e '^npm warn' "$tmp/strict-$era.log" | head -n 40 | sed 's/^/    /' || true
			fi
		done
	fi
	stop_server
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
