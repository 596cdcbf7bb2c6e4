#!/usr/bin/env bash
# scripts/conformance/authorization.sh: the official MCP conformance suite's
# authorization-server leg (`conformance authorization`: scenarios
# authorization-server-metadata-endpoint and authorization-code-grant)
# against the built-in OAuth authorization server of a real
# `webcodex serve --oauth` on a free loopback port. Run it as
# `scripts/conformance.sh authorization`, which hands over to this file.
#
# Optional lane, like scripts/conformance.sh: needs Go, curl, Node/npx and
# the npm registry (Node 22 is fetched through npx as the `node@22`
# package); .ci/run does not call it.
#
#   scripts/conformance.sh authorization
#
# Environment:
#   CONFORMANCE_PKG   conformance package (default @modelcontextprotocol/conformance@0.2.0-alpha.12)
#   CONFORMANCE_KEEP  1 keeps the temp dir (server logs, CLI logs, checks.json per scenario)
#
# What runs, with nothing of the server stubbed:
#   - an API token (wc_pat_, default scopes) is created offline with
#     `webcodex token create` before the server starts: the person who
#     signs in to the Runtime Console to approve;
#   - a public client (token_endpoint_auth_method none) is registered by
#     DCR, POST /oauth/register, with the portless loopback redirect URI
#     http://127.0.0.1/callback: the CLI listens on a port of its own and
#     the server must accept any loopback port (RFC 8252). The CLI never
#     registers itself. It is given no --client-secret: with a secret it
#     would still pick `none` whenever the server advertises it, so a
#     confidential client cannot be exercised through it;
#   - the CLI runs twice over that client: once with --resource <base>/mcp
#     (RFC 8707, as an MCP client sends it) and once without (a plain OAuth
#     client; the server binds the grant to its own resource);
#   - the browser is curl with a cookie jar: when the CLI prints its
#     authorization URL, the script signs in (POST /console/login with the
#     token), opens the URL following redirects only on the server to the
#     consent page, reads the consent form's hidden fields (the request and
#     csrf_token), posts decision=approve (project empty: all projects)
#     with the server's Origin, and opens the 303's Location, the CLI's
#     callback, so the CLI receives the code and exchanges it.
#
# The authorization command has no --expected-failures option; every check
# must pass. The script exits non-zero when a check is a FAILURE or a
# WARNING (for example client_id_metadata_document_supported missing), when
# the CLI fails or reports nothing, or when a browser step goes wrong
# (each says which step and what the server answered).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
prog=conformance-authorization
# shellcheck source=scripts/serve-lib.sh
. "$root/scripts/serve-lib.sh"
conf_pkg=${CONFORMANCE_PKG:-@modelcontextprotocol/conformance@0.2.0-alpha.12}
node_pkg=node@22
# scenarios are the authorization-server scenarios the CLI runs (all of
# them, in this order: the code grant reads the metadata the first found).
scenarios=(authorization-server-metadata-endpoint authorization-code-grant)
# callback_wait is how long (0.1s steps) the script waits for the CLI to
# print its authorization URL: npx may install the packages first.
callback_wait=3000

if (($# > 0)); then
	echo "$prog: takes no arguments (got $*)" >&2
	exit 2
fi
require_cmds go curl node npx

tmp=$(mktemp -d "${TMPDIR:-/tmp}/webcodex-conformance-auth.XXXXXX")
server_pid=""
cli_pid=""
keep=${CONFORMANCE_KEEP:-}
# cleanup, the EXIT trap, also ends the CLI, then hands the exit status on
# to lane_cleanup (set +e: the `exit` that passes it on is not a failure).
cleanup() {
	local rc=$?
	set +e
	if [[ -n $cli_pid ]] && kill -0 "$cli_pid" 2>/dev/null; then
		kill -TERM -- "-$cli_pid" 2>/dev/null || kill -TERM "$cli_pid" 2>/dev/null || true
		wait "$cli_pid" 2>/dev/null || true
	fi
	(exit "$rc")
	lane_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build"
(cd "$root" && go build -o "$tmp/webcodex" ./cmd/webcodex)

mkdir -p "$tmp/data" "$tmp/project"
printf '# conformance fixture\n' >"$tmp/project/README.md"
wc_env=(env -u WEBCODEX_LISTEN -u WEBCODEX_ALLOWED_ORIGINS -u WEBCODEX_PUBLIC_URL -u WEBCODEX_DATA
	-u WEBCODEX_TOKEN -u WEBCODEX_OAUTH)
# json_field NAME prints the string member NAME of the JSON object on stdin.
json_field() {
	node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];if(typeof v==="string")console.log(v)})' "$1"
}
token=$("${wc_env[@]}" "$tmp/webcodex" --data-dir "$tmp/data" token create --name conformance-console --json | json_field token)
if [[ $token != wc_pat_* ]]; then
	echo "$prog: webcodex token create printed no wc_pat_ token" >&2
	exit 1
fi

echo "== start webcodex serve --oauth"
"${wc_env[@]}" WEBCODEX_SHUTDOWN_TIMEOUT=5s \
	"$tmp/webcodex" serve --oauth --data-dir "$tmp/data" --project "conformance=$tmp/project" --listen 127.0.0.1:0 \
	>"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!
wait_for_server "$tmp/serve.out" "$tmp/serve.err"
echo "issuer: $base (pid $server_pid)"

# DCR: a public client with the portless loopback callback.
reg=$(curl -sS -X POST -H 'Content-Type: application/json' -w '\n%{http_code}' "$base/oauth/register" --data \
	'{"client_name":"MCP conformance suite","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"]}')
if [[ ${reg##*$'\n'} != 201 ]]; then
	echo "$prog: POST /oauth/register answered ${reg##*$'\n'}: ${reg%$'\n'*}" >&2
	exit 1
fi
client_id=$(json_field client_id <<<"${reg%$'\n'*}")
echo "client: $client_id (DCR, public, redirect http://127.0.0.1/callback)"

strip() { sed 's/\x1b\[[0-9;]*m//g'; }

# html_unescape decodes the entities html/template writes in attribute values.
html_unescape() {
	sed -e 's/&#43;/+/g' -e 's/&#34;/"/g' -e 's/&quot;/"/g' -e "s/&#39;/'/g" -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g'
}

# approve AUTH_URL CALLBACK_PREFIX plays the person's browser: it signs in to
# the console, opens AUTH_URL to the consent page, approves, and opens the
# redirect (which must start with CALLBACK_PREFIX) so the CLI gets its code.
approve() {
	local auth_url=$1 callback=$2 dir=$3 jar="$3/cookies" out code loc page
	out=$(curl -sS -o /dev/null -w '%{http_code} %{redirect_url}' -c "$jar" -b "$jar" -H "Origin: $base" \
		--data-urlencode "token=$token" "$base/console/login")
	if [[ ${out%% *} != 303 ]]; then
		echo "$prog: console sign-in answered $out (want 303 and the wc_console cookie)" >&2
		return 1
	fi
	# Follow redirects while they stay on the server (authorize -> consent page).
	loc=$auth_url
	for _ in 1 2 3 4 5; do
		out=$(curl -sS -o "$dir/page.html" -w '%{http_code} %{redirect_url}' -c "$jar" -b "$jar" "$loc")
		code=${out%% *}
		if [[ $code != 30[1237] ]]; then
			break
		fi
		loc=${out#* }
		if [[ $loc != "$base"/* ]]; then
			echo "$prog: $auth_url redirected off the server, to $loc, before the consent page" >&2
			return 1
		fi
	done
	if [[ $code != 200 || $loc != "$base/console/oauth/consent?"* ]]; then
		echo "$prog: consent page: HTTP $code at $loc: $(head -c 600 "$dir/page.html")" >&2
		return 1
	fi
	page=$(sed -n '/<form[^>]*action="\/console\/oauth\/consent"/,/<\/form>/p' "$dir/page.html")
	local -a form=()
	local name value
	while IFS=$'\t' read -r name value; do
		form+=(--data-urlencode "$name=$(html_unescape <<<"$value")")
	done < <(sed -n 's/.*<input type="hidden" name="\([^"]*\)" value="\([^"]*\)">.*/\1\t\2/p' <<<"$page")
	if ! grep -q 'name="csrf_token"' <<<"$page" || ! grep -q 'name="client_id"' <<<"$page"; then
		echo "$prog: the consent page has no consent form with csrf_token and client_id" >&2
		return 1
	fi
	out=$(curl -sS -o "$dir/decision.html" -w '%{http_code} %{redirect_url}' -c "$jar" -b "$jar" -H "Origin: $base" \
		"${form[@]}" --data-urlencode decision=approve --data-urlencode project= "$base/console/oauth/consent")
	loc=${out#* }
	if [[ ${out%% *} != 303 || $loc != "$callback"* ]]; then
		echo "$prog: consent approval answered ${out%% *}, Location '$loc' (want 303 to $callback...): $(head -c 600 "$dir/decision.html")" >&2
		return 1
	fi
	echo "  approved; redirect: ${loc%%\?*}?$(sed 's/code=[^&]*/code=…/' <<<"${loc#*\?}")"
	out=$(curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' "$loc")
	if [[ $out != 200 ]]; then
		echo "$prog: the CLI's callback answered $out" >&2
		return 1
	fi
}

# free_port prints a loopback port that was free a moment ago.
free_port() {
	node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# The CLI's command line, run by npx in a shell; values travel in the
# environment so no quoting reaches that shell.
# shellcheck disable=SC2016 # expanded by npx's shell
cli='conformance authorization --url "$WC_CONF_URL" --client-id "$WC_CONF_CLIENT" -p "$WC_CONF_PORT" -o "$WC_CONF_OUT" ${WC_CONF_RESOURCE:+--resource "$WC_CONF_RESOURCE"}'
export WC_CONF_URL="$base" WC_CONF_CLIENT="$client_id"

declare -a summary=()
failed=0
for leg in resource plain; do
	dir="$tmp/$leg"
	mkdir -p "$dir/out"
	port=$(free_port)
	resource=""
	[[ $leg == resource ]] && resource="$base/mcp"
	echo "== authorization ($leg: callback port $port${resource:+, --resource $resource})"
	# set -m: the CLI gets a process group of its own, which cleanup ends.
	set -m
	WC_CONF_PORT="$port" WC_CONF_OUT="$dir/out" WC_CONF_RESOURCE="$resource" \
		npx -y -p "$node_pkg" -p "$conf_pkg" -c "$cli" >"$dir/cli.log" 2>&1 &
	cli_pid=$!
	set +m
	auth_url=""
	for _ in $(seq 1 "$callback_wait"); do
		auth_url=$(grep -m 1 "^$base/oauth/authorize?" "$dir/cli.log" || true)
		[[ -n $auth_url ]] && break
		kill -0 "$cli_pid" 2>/dev/null || break
		sleep 0.1
	done
	step=ok
	if [[ -z $auth_url ]]; then
		echo "$prog: the CLI printed no authorization URL:" >&2
		strip <"$dir/cli.log" | grep -v -i '^npm warn' | tail -n 20 >&2
		step="no authorization URL"
		kill -TERM -- "-$cli_pid" 2>/dev/null || true
	elif ! approve "$auth_url" "http://127.0.0.1:$port/callback?" "$dir"; then
		step="browser step failed"
		kill -TERM -- "-$cli_pid" 2>/dev/null || true
	fi
	rc=0
	wait "$cli_pid" || rc=$?
	cli_pid=""
	strip <"$dir/cli.log" | grep -v -i '^npm warn' >"$dir/cli.txt" || true
	# Every check of every scenario: SCENARIO<TAB>ID<TAB>STATUS<TAB>MESSAGE.
	checks=$(node -e '
		const fs = require("fs"), path = require("path");
		const dir = process.argv[1];
		for (const d of fs.readdirSync(dir).sort()) {
			const scenario = d.replace(/^authorization-server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
			const f = path.join(dir, d, "checks.json");
			if (!fs.existsSync(f)) continue;
			for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
				console.log([scenario, c.id, c.status, (c.errorMessage ?? "").replace(/\s+/g, " ")].join("\t"));
		}' "$dir/out" || true)
	n_ok=$(grep -c $'\tSUCCESS\t' <<<"$checks" || true)
	n_all=$(grep -c . <<<"$checks" || true)
	bad=$(grep -v $'\tSUCCESS\t' <<<"$checks" || true)
	status=ok
	note=""
	[[ $step != ok ]] && note="  ($step)"
	for scenario in "${scenarios[@]}"; do
		if ! grep -q "^$scenario"$'\t' <<<"$checks"; then
			note+="  (no result for $scenario)"
		fi
	done
	if [[ -n $note || $rc != 0 || -n $bad ]]; then
		status=FAIL
		failed=1
	fi
	summary+=("$(printf '%-9s  %s/%s checks passed  cli exit %s  %s%s' "$leg" "$n_ok" "$n_all" "$rc" "$status" "$note")")
	while IFS=$'\t' read -r scenario id st msg; do
		[[ -n $scenario ]] && summary+=("    ✗ $scenario / $id: $st${msg:+: $msg}")
	done <<<"$bad"
	if [[ $status != ok ]]; then
		grep -E 'SUMMARY|✓|✗|Total|Error|error' "$dir/cli.txt" | head -n 30 | sed 's/^/    /' || true
	fi
done

echo
echo "== summary ($conf_pkg authorization against $base)"
printf '%s\n' "${summary[@]}"
if ! kill -0 "$server_pid" 2>/dev/null; then
	echo "$prog: the server exited during the run:" >&2
	tail -n 20 "$tmp/serve.err" >&2
	failed=1
fi
if ((failed)); then
	echo "$prog: FAILED"
	exit 1
fi
echo "$prog: OK (every check passed)"
