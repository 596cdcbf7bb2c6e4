#!/usr/bin/env bash
# Runs the headline benchmark pairs and prints a table of their ratios.
# Each pair is timed alternately, call by call, inside one benchmark
# (internal/benchpair), so machine drift moves both sides alike; every
# pair runs COUNT times (default 5) and the table shows the median ratio.
# The pairs at the end run each side alone in a process of its own
# instead, the two sides alternated process by process, PAIR_BENCHTIME
# (default 4000x) calls a process.
#
#   scripts/bench.sh            # all pairs, 5 runs each
#   COUNT=9 scripts/bench.sh    # more runs
#   ONLY=MCP scripts/bench.sh   # only the pairs whose description has MCP
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-5}"

# package | benchmark | what the ratio is (subject / base) | goal | subject
# (optional: the subject's name, to print its median time per call too, for
# goals stated in time)
pairs=(
	"./internal/tools/files|BenchmarkReadFiles|read_files: root handle / path string|<= 1.1"
	"./internal/tools/run|BenchmarkRunProcessTrue|run_process true: sandboxed / unsandboxed|<= 1.1"
	"./internal/app|BenchmarkRunProcessTrue|run_process true recorded / os/exec|<= 2"
	"./internal/runner|BenchmarkContainedVsExec|true contained (runner) / os/exec|"
	"./internal/app|BenchmarkShellCommand|session_shell_exec / run_shell (kernel, recorded)|<= 0.4|session_shell_exec"
	"./internal/tools/sessionshell|BenchmarkShellExec|session_shell_exec / run_shell (tool package)|<= 0.4"
	"./internal/jobs|BenchmarkRunSyncOverhead|job manager / runner alone|"
	"./internal/transport/mcpserver|BenchmarkToolsCallRecordedVsBare|MCP read: recorded WebCodex / bare go-sdk (time)|<= 1.25|webcodex_recorded"
	"./internal/app|BenchmarkReadEditRecordedVsUnrecorded|read+edit round trip: recorded / unrecorded|<= 1.25"
	"./internal/app|BenchmarkRecordedMutationOnTmpfs|write_project_file on tmpfs: recorded / unrecorded|"
	"./internal/kernel|BenchmarkMutatingCallOverhead|no-op mutation on tmpfs: kernel recorded / handler|<= 0.2 ms|kernel_recorded"
	"./internal/workflow/workflowdb|BenchmarkBoardPostVsAppend|message post (board full) / ledger append|<= 1.25"
	"./internal/transport/mcpserver|BenchmarkStdioSmallCall/read_unrecorded|stdio read_files 4 KiB / hand-written floor|"
	"./internal/transport/mcpserver|BenchmarkStdioSmallCall/write_unrecorded|stdio write_project_file 4 KiB / floor|"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/literal|search literal: ours / rg (generated tree)|<= 2"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/regex|search regex: ours / rg (generated tree)|<= 2"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/caseless|search case-insensitive: ours / rg (generated tree)|<= 2"
	"./internal/memory/memorydb|BenchmarkMemorySetVsInsert|memory_set (new key) / plain SQLite insert|<= 2"
	"./internal/tools/files|BenchmarkReadThroughTheBoundary|read_files effect: in-process runner boundary / direct|<= 1.05"
	"./internal/app|BenchmarkReadFilesRunnerVsInProcess|read_files recorded: loopback runner / in-process|<= 1.5|runner"
	"./internal/app|BenchmarkToolCallOAuthVsPAT|tool call over HTTP: external issuer's access token / wc_pat_|<= 1.05"
	"./internal/app|BenchmarkMCPToolCallBuiltinOAuthVsPAT|MCP tools/call: built-in OAuth access token / wc_pat_|<= 1.05"
)

# Pairs whose sides each run alone in a process of their own, the two
# alternated process by process (a closed loop per side: ns/op is the mean
# time per call, so the ratio is one of throughputs, garbage collection and
# behind-the-response work included):
# package | benchmark | base side | subject side | what the ratio is | goal
procpairs=(
	"./internal/transport/mcpserver|BenchmarkToolsCallThroughput|bare_sdk|webcodex_recorded|MCP read: recorded / bare go-sdk (mean, own process)|<= 1.25"
	"./internal/transport/mcpserver|BenchmarkToolsCallThroughput|bare_sdk|bare_sdk_audited|  audit floor: bare audited / bare (own process)|"
	"./internal/transport/mcpserver|BenchmarkToolsCallThroughput|bare_sdk_audited|webcodex_recorded|  recorded / bare audited (own process)|"
)

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-52s %8s %8s  %s\n' "pair" "median" "goal" "runs"
for p in "${pairs[@]}"; do
	IFS='|' read -r pkg bench what goal subject <<<"$p"
	if [ -n "${ONLY:-}" ] && [[ "$what" != *"$ONLY"* ]]; then
		continue
	fi
	out=$(go test "$pkg" -run '^$' -bench "^${bench}\$" -count "$count" 2>/dev/null)
	ratios=$(awk '{for (i = 2; i <= NF; i++) if ($i == "ratio") print $(i-1)}' <<<"$out")
	if [ -z "$ratios" ]; then
		printf '%-52s %8s %8s  %s\n' "$what" "failed" "${goal:--}" ""
		continue
	fi
	extra=""
	if [ -n "$subject" ]; then
		ns=$(awk -v m="${subject}-median-ns" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' <<<"$out" | median)
		extra=$(awk -v ns="$ns" 'BEGIN {printf "  (%s %.3f ms a call)", "'"$subject"'", ns / 1e6}')
	fi
	printf '%-52s %8.3f %8s  %s%s\n' "$what" "$(printf '%s\n' $ratios | median)" "${goal:--}" "$(echo $ratios | tr '\n' ' ')" "$extra"
	# A benchmark's further ratios (metrics named <what>-ratio, such as
	# the MCP read's audited-ratio), each on its own row below its pair.
	for m in $(awk '{for (i = 2; i <= NF; i++) if ($i ~ /.-ratio$/) print $i}' <<<"$out" | sort -u); do
		rs=$(awk -v m="$m" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' <<<"$out")
		printf '  %-50s %8.3f %8s  %s\n' "${m%-ratio}" "$(printf '%s\n' $rs | median)" "-" "$(echo $rs | tr '\n' ' ')"
	done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in "${procpairs[@]}"; do
	IFS='|' read -r pkg bench base subject what goal <<<"$p"
	if [ -n "${ONLY:-}" ] && [[ "$what" != *"$ONLY"* ]]; then
		continue
	fi
	go test -c -o "$tmp/pair.test" "$pkg"
	nsop() { (cd "$pkg" && "$tmp/pair.test" -test.run '^$' -test.benchtime "${PAIR_BENCHTIME:-4000x}" -test.bench "^${bench}\$/^$1\$" 2>/dev/null) | awk '$1 ~ /^Benchmark/ {print $3}'; }
	ratios="" bases="" subjects=""
	for _ in $(seq "$count"); do
		b=$(nsop "$base") s=$(nsop "$subject")
		if [ -z "$b" ] || [ -z "$s" ]; then
			ratios=""
			break
		fi
		bases="$bases $b" subjects="$subjects $s"
		ratios="$ratios $(awk -v b="$b" -v s="$s" 'BEGIN {printf "%.4g", s / b}')"
	done
	if [ -z "$ratios" ]; then
		printf '%-52s %8s %8s  %s\n' "$what" "failed" "${goal:--}" ""
		continue
	fi
	extra=$(awk -v b="$(printf '%s\n' $bases | median)" -v s="$(printf '%s\n' $subjects | median)" \
		'BEGIN {printf "  (%.3f / %.3f ms a call)", s / 1e6, b / 1e6}')
	printf '%-52s %8.3f %8s  %s%s\n' "$what" "$(printf '%s\n' $ratios | median)" "${goal:--}" "${ratios# }" "$extra"
done
