#!/usr/bin/env bash
# Runs the headline benchmark pairs and prints a table of their ratios.
# Each pair is timed alternately, call by call, inside one benchmark
# (internal/benchpair), so machine drift moves both sides alike; every
# pair runs COUNT times (default 5) and the table shows the median ratio.
#
#   scripts/bench.sh            # all pairs, 5 runs each
#   COUNT=9 scripts/bench.sh    # more runs
set -euo pipefail
cd "$(dirname "$0")/.."
count="${COUNT:-5}"

# package | benchmark | what the ratio is (subject / base) | goal
pairs=(
	"./internal/tools/files|BenchmarkReadFiles|read_files: root handle / path string|<= 1.1"
	"./internal/tools/run|BenchmarkRunProcessTrue|run_process true: sandboxed / unsandboxed|<= 1.1"
	"./internal/app|BenchmarkRunProcessTrue|run_process true recorded / os/exec|"
	"./internal/app|BenchmarkShellCommand|session_shell_exec / run_shell (kernel, recorded)|<= 0.4"
	"./internal/tools/sessionshell|BenchmarkShellExec|session_shell_exec / run_shell (tool package)|<= 0.4"
	"./internal/jobs|BenchmarkRunSyncOverhead|job manager / runner alone|"
	"./internal/transport/mcpserver|BenchmarkToolsCallRecordedVsBare|MCP read: recorded WebCodex / bare go-sdk (time)|<= 1.25"
	"./internal/app|BenchmarkReadEditRecordedVsUnrecorded|read+edit round trip: recorded / unrecorded|<= 1.25"
	"./internal/app|BenchmarkRecordedMutationOnTmpfs|write_project_file on tmpfs: recorded / unrecorded|"
	"./internal/kernel|BenchmarkMutatingCallOverhead|no-op mutation on tmpfs: kernel recorded / handler|"
	"./internal/workflow/workflowdb|BenchmarkBoardPostVsAppend|message post (board full) / ledger append|<= 1.25"
	"./internal/transport/mcpserver|BenchmarkStdioSmallCall/read_unrecorded|stdio read_files 4 KiB / hand-written floor|"
	"./internal/transport/mcpserver|BenchmarkStdioSmallCall/write_unrecorded|stdio write_project_file 4 KiB / floor|"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/literal|search literal: ours / rg (generated tree)|<= 2"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/regex|search regex: ours / rg (generated tree)|<= 2"
	"./internal/tools/search|BenchmarkSearchVsRipgrep/caseless|search case-insensitive: ours / rg (generated tree)|<= 2"
	"./internal/memory/memorydb|BenchmarkMemorySetVsInsert|memory_set (new key) / plain SQLite insert|<= 2"
)

printf '%-52s %8s %8s  %s\n' "pair" "median" "goal" "runs"
for p in "${pairs[@]}"; do
	IFS='|' read -r pkg bench what goal <<<"$p"
	ratios=$(go test "$pkg" -run '^$' -bench "^${bench}\$" -count "$count" 2>/dev/null |
		awk '{for (i = 2; i <= NF; i++) if ($i == "ratio") print $(i-1)}')
	if [ -z "$ratios" ]; then
		printf '%-52s %8s %8s  %s\n' "$what" "failed" "${goal:--}" ""
		continue
	fi
	median=$(printf '%s\n' $ratios | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
	printf '%-52s %8.3f %8s  %s\n' "$what" "$median" "${goal:--}" "$(echo $ratios | tr '\n' ' ')"
done
