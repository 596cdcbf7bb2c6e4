// scripts/client-sweep/sweep.mjs: drive every tool of a running WebCodex
// server (full profile) to a real success and a real failure through one
// third-party MCP client, and report whether the client accepted each
// result (decision 0046). Run by scripts/client-sweep.sh, which installs
// the clients next to this file and starts the server.
//
//   node sweep.mjs CLIENT URL     CLIENT: sdk-v1 | sdk-v2 | inspector | inspector-modern
//
// The TypeScript SDKs and the Inspector negotiate 2025-11-25 with this
// server; inspector-modern runs the Inspector with --protocol-era modern
// (2026-07-28).
//
// The bearer token is read from WEBCODEX_SWEEP_TOKEN. A result is accepted
// when the client hands it over (a success with success=true, or a tool
// error with isError and success=false); a client that throws instead (for
// example -32602 "Structured content does not match the tool's output
// schema") rejects it. The script exits 1 when any call was rejected, any
// outcome differs from the expected one, or any listed tool did not reach
// both a success and a failure.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const [client, url] = process.argv.slice(2);
const token = process.env.WEBCODEX_SWEEP_TOKEN;
if (!client || !url || !token) {
	console.error('usage: WEBCODEX_SWEEP_TOKEN=... node sweep.mjs sdk-v1|sdk-v2|inspector|inspector-modern URL');
	process.exit(2);
}
const headers = { Authorization: `Bearer ${token}` };
const require = createRequire(import.meta.url);

// sdkSession connects a TypeScript SDK Client (v1 or v2) over its
// streamable HTTP transport and returns what connect returns.
async function sdkSession(Client, StreamableHTTPClientTransport) {
	const c = new Client({ name: 'webcodex-sweep', version: '1' });
	await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
	const { tools } = await c.listTools();
	return {
		names: tools.map((t) => t.name),
		call: (name, args, meta) => c.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }),
	};
}

// connect returns call(tool, args, window) -> {isError, structuredContent}
// (throwing when the client rejects the result) and the listed tool names.
async function connect() {
	if (client === 'sdk-v1') {
		const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
		const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
		return sdkSession(Client, StreamableHTTPClientTransport);
	}
	if (client === 'sdk-v2') {
		const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
		return sdkSession(Client, StreamableHTTPClientTransport);
	}
	if (client === 'inspector' || client === 'inspector-modern') {
		const cli = require.resolve('@modelcontextprotocol/inspector/package.json').replace(/package\.json$/, 'clients/cli/build/index.js');
		const base = ['--transport', 'http', '--server-url', url, '--header', `Authorization: Bearer ${token}`, '--format', 'json',
			'--protocol-era', client === 'inspector' ? 'auto' : 'modern'];
		const run = (extra) => spawnSync(process.execPath, [cli, ...base, ...extra], { encoding: 'utf8', timeout: 300_000 });
		const listed = run(['--method', 'tools/list']);
		if (listed.status !== 0) throw new Error(`inspector tools/list exited ${listed.status}: ${listed.stderr}`);
		const names = JSON.parse(listed.stdout).result.tools.map((t) => t.name);
		return {
			names,
			call: (name, args, meta) => {
				const extra = ['--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(args)];
				for (const [k, v] of Object.entries(meta ?? {})) extra.push('--metadata', `${k}=${v}`);
				const r = run(extra);
				// 0: a result; 5: a tool error (isError) with its result.
				if (r.status !== 0 && r.status !== 5) {
					throw new Error(`inspector exited ${r.status}: ${(r.stderr || r.stdout).trim().slice(0, 600)}`);
				}
				const line = r.stdout.trim().split('\n').filter(Boolean).pop();
				const env = JSON.parse(line);
				if (!env.result) throw new Error(`inspector exited ${r.status} without a result: ${line.slice(0, 600)}`);
				return env.result;
			},
		};
	}
	throw new Error(`unknown client ${client}`);
}

const { names, call } = await connect();
const succeeded = new Set();
const failed = new Set();
const problems = [];
let calls = 0;
let window = '';

// act calls tool and checks that the client accepted the result and that
// its outcome is the expected one; it returns the output (or {}).
async function act(tool, args, wantSuccess) {
	calls++;
	let res;
	try {
		res = await call(tool, args, window ? { 'openai/session': window } : undefined);
	} catch (err) {
		problems.push(`${tool} (want success=${wantSuccess}): rejected by ${client}: ${String(err?.message ?? err).slice(0, 400)}`);
		return {};
	}
	const sc = res.structuredContent;
	if (!sc || typeof sc.success !== 'boolean') {
		problems.push(`${tool}: no structuredContent ToolResult`);
		return {};
	}
	if (sc.success !== wantSuccess || Boolean(res.isError) === sc.success) {
		problems.push(`${tool}: success=${sc.success} isError=${res.isError}, want success=${wantSuccess}: ${JSON.stringify(sc).slice(0, 300)}`);
	}
	(sc.success ? succeeded : failed).add(tool);
	return sc.output ?? {};
}

const field = (out, ...path) => {
	let v = out;
	for (const p of path) v = Array.isArray(v) ? v[0]?.[p] : v?.[p];
	return v ?? '';
};
const proj = 'agent:local:calc';
const noSess = 'wc_sess_00000000000000000000000000000000';
const env = { CARGO_NET_OFFLINE: 'true' };

// Sessions, files, search, edits, git.
const sess = field(await act('work_on_project', { project: proj, instruction: 'Fix Add: it subtracts' }, true), 'session_id');
await act('work_on_project', { project: proj, instruction: 'x', session_id: noSess }, false);
await act('list_sessions', { project: proj }, true);
await act('list_sessions', { project: 'agent:local:nope' }, false);
await act('session_summary', { session_id: sess }, true);
await act('session_summary', { session_id: noSess }, false);
await act('update_session_context', { session_id: sess, default_shell: 'sh' }, true);
await act('update_session_context', { session_id: noSess, default_shell: 'sh' }, false);
await act('project_overview', { project: proj, session_id: sess }, true);
await act('project_overview', { project: 'agent:local:nope' }, false);
await act('list_project_files', { project: proj, session_id: sess }, true);
await act('list_project_files', { project: proj, path: 'nowhere' }, false);
const rv = field(await act('read_files', { project: proj, session_id: sess, files: [{ path: 'calc.go' }] }, true), 'files', 'read_revision');
await act('read_files', { project: proj, session_id: sess, files: [{ path: 'missing.go' }] }, false);
await act('search_project_texts', { project: proj, session_id: sess, queries: [{ query: 'a - b' }] }, true);
await act('search_project_texts', { project: proj, queries: [{ query: '(', regex: true }] }, false);
await act('go_test', { project: proj, session_id: sess, packages: ['./...'] }, false);
const edit = { path: 'calc.go', op: 'replace', expected_read_revision: rv, edits: [{ old_text: 'a - b', new_text: 'a + b' }] };
await act('apply_text_edits', { project: proj, session_id: sess, changes: [edit] }, true);
await act('apply_text_edits', { project: proj, session_id: sess, changes: [edit] }, false);
await act('write_project_file', { project: proj, session_id: sess, path: 'NOTES.md', content: 'notes\n' }, true);
await act('write_project_file', { project: proj, path: '../outside.txt', content: 'x' }, false);
await act('git_status', { project: proj, session_id: sess }, true);
await act('git_status', { project: 'agent:local:nope' }, false);
await act('git_diff', { project: proj, session_id: sess }, true);
await act('git_diff', { project: proj, recording_session_id: noSess }, false);

// Processes and jobs.
await act('run_process', { project: proj, session_id: sess, argv: ['git', '--version'] }, true);
await act('run_process', { project: proj, session_id: sess, argv: ['sh', '-c', 'exit 3'] }, false);
await act('run_shell', { project: proj, session_id: sess, command: 'echo hi' }, true);
await act('run_shell', { project: proj, session_id: sess, command: 'exit 3' }, false);
await act('run_script', { project: proj, session_id: sess, interpreter: 'sh', script: 'echo hi\n' }, true);
await act('run_script', { project: proj, session_id: sess, interpreter: 'sh', script: 'exit 3\n' }, false);
const job = field(await act('run_job', { project: proj, session_id: sess, command: 'echo job' }, true), 'job', 'job_id');
await act('run_job', { project: 'agent:local:nope', command: 'echo job' }, false);
await act('observe_jobs', { project: proj, session_id: sess, job_ids: [job], wait_seconds: 30, wake_on: 'all_terminal' }, true);
await act('observe_jobs', { project: proj, job_ids: ['job_missing'] }, false);
await act('read_job_tail', { project: proj, session_id: sess, job_id: job }, true);
await act('read_job_tail', { project: proj, session_id: sess, job_id: 'job_missing' }, false);
await act('list_jobs', { project: proj, session_id: sess }, true);
await act('list_jobs', { project: 'agent:local:nope' }, false);
await act('stop_job', { project: proj, session_id: sess, job_id: job }, true);
await act('stop_job', { project: proj, session_id: sess, job_id: 'job_missing' }, false);

// Validation.
await act('go_test', { project: proj, session_id: sess, packages: ['./...'] }, true);
await act('run_tests', { project: proj, session_id: sess, runner: 'node' }, true);
await act('run_tests', { project: proj, runner: 'no_such_runner' }, false);
await act('cargo_check', { project: proj, session_id: sess, cwd: 'crate', env }, true);
await act('cargo_check', { project: proj, session_id: sess, cwd: 'nowhere' }, false);
await act('cargo_test', { project: proj, session_id: sess, cwd: 'crate', env }, true);
await act('cargo_test', { project: proj, cwd: 'nowhere' }, false);
await act('validation_summary', { session_id: sess }, true);
await act('validation_summary', { session_id: noSess }, false);

// Persistent shells.
const shell = field(await act('open_session_shell', { session_id: sess }, true), 'shell', 'shell_id');
await act('open_session_shell', { session_id: noSess }, false);
await act('session_shell_exec', { session_id: sess, shell_id: shell, command: 'echo hi' }, true);
await act('session_shell_status', { session_id: sess, shell_id: shell }, true);
await act('close_session_shell', { session_id: sess, shell_id: shell }, true);
await act('session_shell_exec', { session_id: sess, shell_id: shell, command: 'echo hi' }, false);
await act('session_shell_status', { session_id: sess, shell_id: 'wc_shell_missing' }, false);
await act('close_session_shell', { session_id: sess, shell_id: 'wc_shell_missing' }, false);

// The message board.
const todo = field(await act('post_session_message', { session_id: sess, kind: 'todo', message: 'fix Add' }, true), 'message', 'message_id');
await act('post_session_message', { session_id: sess, kind: 'no_such_kind', message: 'x' }, false);
await act('list_session_messages', { session_id: sess }, true);
await act('list_session_messages', { session_id: noSess }, false);
await act('session_discussion_summary', { session_id: sess }, true);
await act('session_discussion_summary', { session_id: noSess }, false);
const fence = field(await act('get_session_assignment', { session_id: sess, message_id: todo }, true), 'assignment_fence');
await act('get_session_assignment', { session_id: sess, message_id: 'wc_msg_00000000000000000000000000000000' }, false);
const done = { session_id: sess, message_id: todo, answer: 'fixed', completion_key: 'k1' };
await act('complete_session_message', { ...done, expected_assignment_fence: 'wsa3_x' }, false);
await act('complete_session_message', { ...done, expected_assignment_fence: fence }, true);
await act('resolve_session_message', { session_id: sess, message_id: todo }, true);
await act('resolve_session_message', { session_id: sess, message_id: 'wc_msg_00000000000000000000000000000000' }, false);
const obs = field(await act('observe_session_messages', { session_id: sess }, true), 'observation_token');
await act('observe_session_messages', { session_id: sess, after_observation_token: obs + 'x' }, false);

// Window Peers: without a window, failures; two windows find each other.
await act('list_peers', { project: proj }, false);
await act('current_window_activity', {}, false);
window = 'sweep-window-b';
await act('read_files', { project: proj, files: [{ path: 'calc.go' }] }, true);
window = 'sweep-window-a';
await act('read_files', { project: proj, files: [{ path: 'calc.go' }] }, true);
const peer = field(await act('list_peers', { project: proj }, true), 'peers', 'peer_id');
await act('post_peer_message', { peer_id: peer, message: 'hi' }, true);
await act('post_peer_message', { peer_id: 'wc_peer_x', message: 'hi' }, false);
await act('current_window_activity', {}, true);
window = '';

// Goals.
const goal = field(await act('create_goal', { project: proj, title: 'Fix Add' }, true), 'goal', 'goal_id');
await act('create_goal', { project: 'agent:local:nope', title: 'Fix Add' }, false);
let grev = field(await act('get_goal', { goal_id: goal }, true), 'goal', 'revision');
await act('get_goal', { goal_id: 'wc_goal_x' }, false);
await act('list_goals', { project: proj }, true);
await act('list_goals', { project: 'agent:local:nope' }, false);
await act('update_goal', { goal_id: goal, expected_revision: '1-0000000000000000', status: 'blocked' }, false);
grev = field(await act('update_goal', { goal_id: goal, expected_revision: grev, status: 'blocked' }, true), 'goal', 'revision');
const steps = [{ title: 'fix', status: 'done' }];
await act('checkpoint_goal', { goal_id: goal, expected_revision: '1-0000000000000000', recovery_summary: 'x', steps }, false);
await act('checkpoint_goal', { goal_id: goal, expected_revision: grev, recovery_summary: 'Add fixed', steps }, true);
await act('associate_goal_workflow_session', { goal_id: goal, session_id: sess }, true);
await act('associate_goal_workflow_session', { goal_id: 'wc_goal_x', session_id: sess }, false);

// Project Memory.
const mrev = field(await act('memory_set', { project: proj, memory_key: 'calc', body: 'Add adds', tags: ['pinned'] }, true), 'entry', 'revision');
await act('memory_set', { project: proj, memory_key: 'calc', body: 'Add subtracts' }, false);
await act('memory_read', { project: proj, memory_key: 'calc', include_history: true }, true);
await act('memory_read', { project: proj, memory_key: 'nothing' }, false);
await act('memory_search', { project: proj, query: 'adds' }, true);
await act('memory_search', { project: proj, query: '"adds' }, false);
const scope = field(await act('memory_scope_list', {}, true), 'scopes', 'scope_id');
await act('memory_scope_list', { unknown_member: true }, false);
await act('memory_delete', { project: proj, memory_key: 'calc', expected_revision: '1-0000000000000000' }, false);
await act('memory_delete', { project: proj, memory_key: 'calc', expected_revision: mrev }, true);
await act('memory_scope_purge', { scope_id: 'wc_mscope_00000000000000000000000000000000' }, false);
await act('memory_scope_purge', { scope_id: scope }, true);

// Runners (none connects in this lane: an empty list).
await act('list_runners', {}, true);
await act('list_runners', { unknown_member: true }, false);

// The gateway.
await act('list_tools', {}, true);
await act('list_tools', { unknown_member: true }, false);
await act('describe_tool', { tool: 'read_files' }, true);
await act('describe_tool', { tool: 'no_such_tool' }, false);
await act('call_tool', { tool: 'git_status', arguments: { project: proj } }, true);
await act('call_tool', { tool: 'no_such_tool', arguments: {} }, false);

// Closeout.
await act('session_handoff_summary', { session_id: sess, diagnostic: true }, true);
await act('session_handoff_summary', { session_id: noSess }, false);
await act('finish_coding_task', { project: proj, session_id: sess }, true);
await act('finish_coding_task', { project: proj, session_id: sess, summary_only: true }, true);
await act('finish_coding_task', { project: proj, session_id: noSess }, false);
await act('close_session', { session_id: sess }, true);
await act('close_session', { session_id: noSess }, false);

for (const name of names) {
	if (!succeeded.has(name)) problems.push(`${name}: never reached a success`);
	if (!failed.has(name)) problems.push(`${name}: never reached a failure`);
}
const accepted = calls - problems.filter((p) => p.includes('rejected by')).length;
console.log(`${client}: ${names.length} tools listed, ${calls} calls, ${accepted} results accepted, ` +
	`${succeeded.size} tools succeeded, ${failed.size} failed as asked, ${problems.length} problems`);
for (const p of problems) console.log(`  ✗ ${p}`);
process.exit(problems.length ? 1 : 0);
