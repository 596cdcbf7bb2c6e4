package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/gateway"
)

// mcpOutputSchemas lists the tools of s in era ("" legacy) over raw HTTP
// and compiles each tool's outputSchema, exactly as published, with a
// strict JSON Schema 2020-12 validator (formats and content asserted).
func mcpOutputSchemas(t *testing.T, s *server, era string) map[string]*jsonschema.Schema {
	t.Helper()
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rawToolsList(t, s, era), &list); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	out := map[string]*jsonschema.Schema{}
	for _, tl := range list.Tools {
		if len(tl.OutputSchema) == 0 {
			t.Errorf("%s (%q) publishes no outputSchema", tl.Name, era)
			continue
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.OutputSchema))
		if err != nil {
			t.Fatal(err)
		}
		url := fmt.Sprintf("mem:///%s/%s.json", era, tl.Name)
		if err := c.AddResource(url, v); err != nil {
			t.Fatalf("%s (%q): %v", tl.Name, era, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			t.Fatalf("%s (%q): outputSchema does not compile: %v", tl.Name, era, err)
		}
		out[tl.Name] = sch
	}
	return out
}

// TestMCPOutputSchemasAcceptSuccessAndFailure runs every tool the MCP
// server registers (the full profile: every kernel tool and the gateway)
// to a real success and a real failure through the kernel (real SQLite
// stores, a real git repository, real processes), and validates each
// structuredContent against the tool's own outputSchema as tools/list
// publishes it, in both eras, with a strict 2020-12 validator that ignores
// isError, as the TypeScript SDK v1 and MCP Inspector do (decision 0046).
// A tool that never reached both outcomes fails the test: none is exempt.
// Without node or cargo, run_tests or cargo_check and cargo_test cannot
// succeed: every other result is still validated, and the test is then
// skipped, naming them (a failure found before stays a failure).
func TestMCPOutputSchemasAcceptSuccessAndFailure(t *testing.T) {
	needs := map[string]string{"run_tests": "node", "cargo_check": "cargo", "cargo_test": "cargo"}
	have := func(tool string) bool { _, err := exec.LookPath(needs[tool]); return err == nil }
	repo := strictProject(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolProfile = gateway.Full; withTestProvider(t, c) }, "calc="+repo)
	defer s.stop(t)
	const proj = "agent:local:calc"
	schemas := map[string]map[string]*jsonschema.Schema{
		"modern": mcpOutputSchemas(t, s, rawModernVersion),
		"legacy": mcpOutputSchemas(t, s, ""),
	}
	if len(schemas["modern"]) != len(s.a.Kernel.Registry().Tools())+len(gateway.Names) {
		t.Fatalf("tools/list lists %d tools, the registry and gateway hold %d", len(schemas["modern"]), len(s.a.Kernel.Registry().Tools())+len(gateway.Names))
	}

	succeeded, failed := map[string]bool{}, map[string]bool{}
	window := "" // the host window of the calls ("" none)
	// act calls tool with args over modern MCP, checks the outcome, and
	// validates the structuredContent against the tool's published
	// outputSchema of each era; it returns the output.
	act := func(tool string, args map[string]any, wantSuccess bool) map[string]json.RawMessage {
		t.Helper()
		params := map[string]any{"name": tool, "arguments": args}
		if window != "" {
			meta := rawMeta(rawModernVersion)
			meta["openai/session"] = window
			params["_meta"] = meta
		}
		r := rawPost(t, s, s.token, rawBody(1, "tools/call", params, rawModernVersion), rawHeaders("tools/call", tool))
		if r.Status != http.StatusOK || r.Msg == nil || r.Msg.Error != nil {
			t.Fatalf("tools/call %s: %s", tool, r)
		}
		var res struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if err := json.Unmarshal(r.Msg.Result, &res); err != nil {
			t.Fatal(err)
		}
		var sc struct {
			Success bool                       `json:"success"`
			Output  map[string]json.RawMessage `json:"output"`
			Error   *struct{ Kind string }     `json:"error"`
		}
		if err := json.Unmarshal(res.StructuredContent, &sc); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", tool, res.StructuredContent, err)
		}
		if sc.Success != wantSuccess || res.IsError == sc.Success {
			t.Fatalf("%s: success=%v isError=%v, want success=%v: %.600s", tool, sc.Success, res.IsError, wantSuccess, res.StructuredContent)
		}
		for era, byTool := range schemas {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.StructuredContent))
			if err != nil {
				t.Fatal(err)
			}
			sch := byTool[tool]
			if sch == nil {
				t.Fatalf("%s: no %s outputSchema", tool, era)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("%s (success=%v): structuredContent does not validate against its %s outputSchema: %v\n%.800s",
					tool, sc.Success, era, err, res.StructuredContent)
			}
		}
		if sc.Success {
			succeeded[tool] = true
		} else {
			failed[tool] = true
		}
		return sc.Output
	}
	str := func(out map[string]json.RawMessage, path ...string) string {
		t.Helper()
		raw := json.RawMessage(nil)
		m := out
		for i, p := range path {
			raw = m[p]
			if i == len(path)-1 {
				break
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				var a []map[string]json.RawMessage
				if err := json.Unmarshal(raw, &a); err != nil || len(a) == 0 {
					t.Fatalf("no %v in %v", path, out)
				}
				m = a[0]
			}
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%v is not a string in %v", path, out)
		}
		return v
	}

	// Sessions, files, search, edits, git.
	sess := str(act("work_on_project", map[string]any{"project": proj, "instruction": "Fix Add: it subtracts"}, true), "session_id")
	act("work_on_project", map[string]any{"project": proj, "instruction": "x", "session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("list_sessions", map[string]any{"project": proj}, true)
	act("session_summary", map[string]any{"session_id": sess}, true)
	act("session_summary", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("update_session_context", map[string]any{"session_id": sess, "default_shell": "sh"}, true)
	act("project_overview", map[string]any{"project": proj, "session_id": sess}, true)
	act("list_project_files", map[string]any{"project": proj, "session_id": sess}, true)
	act("list_project_files", map[string]any{"project": proj, "path": "nowhere"}, false)
	rv := str(act("read_files", map[string]any{"project": proj, "session_id": sess, "files": []any{map[string]any{"path": "calc.go"}}}, true), "files", "read_revision")
	act("read_files", map[string]any{"project": proj, "session_id": sess, "files": []any{map[string]any{"path": "missing.go"}}}, false)
	act("search_project_texts", map[string]any{"project": proj, "session_id": sess, "queries": []any{map[string]any{"query": "a - b"}}}, true)
	// A failing test before the fix: a real validation failure.
	act("go_test", map[string]any{"project": proj, "session_id": sess, "packages": []string{"./..."}}, false)
	act("validation_summary", map[string]any{"session_id": sess}, true)
	act("apply_text_edits", map[string]any{"project": proj, "session_id": sess, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": rv,
		"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}},
	}}}, true)
	// The same edit again: the read revision is stale.
	act("apply_text_edits", map[string]any{"project": proj, "session_id": sess, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": rv,
		"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}},
	}}}, false)
	act("write_project_file", map[string]any{"project": proj, "session_id": sess, "path": "NOTES.md", "content": "notes\n"}, true)
	act("git_status", map[string]any{"project": proj, "session_id": sess}, true)
	act("git_status", map[string]any{"project": "agent:local:nope"}, false)
	act("git_diff", map[string]any{"project": proj, "session_id": sess}, true)
	// An invalid recorder claim fails closed.
	act("git_diff", map[string]any{"project": proj, "recording_session_id": "wc_sess_00000000000000000000000000000000"}, false)

	// Processes and jobs.
	act("run_process", map[string]any{"project": proj, "session_id": sess, "argv": []string{"git", "--version"}}, true)
	act("run_process", map[string]any{"project": proj, "session_id": sess, "argv": []string{"sh", "-c", "exit 3"}}, false)
	act("run_shell", map[string]any{"project": proj, "session_id": sess, "command": "echo hi"}, true)
	act("run_shell", map[string]any{"project": proj, "session_id": sess, "command": "exit 3"}, false)
	act("run_script", map[string]any{"project": proj, "session_id": sess, "interpreter": "sh", "script": "echo hi\n"}, true)
	act("run_script", map[string]any{"project": proj, "session_id": sess, "interpreter": "sh", "script": "exit 3\n"}, false)
	job := str(act("run_job", map[string]any{"project": proj, "session_id": sess, "command": "echo job"}, true), "job", "job_id")
	act("observe_jobs", map[string]any{"project": proj, "session_id": sess, "job_ids": []string{job}, "wait_seconds": 30, "wake_on": "all_terminal"}, true)
	act("read_job_tail", map[string]any{"project": proj, "session_id": sess, "job_id": job}, true)
	act("read_job_tail", map[string]any{"project": proj, "session_id": sess, "job_id": "job_missing"}, false)
	act("list_jobs", map[string]any{"project": proj, "session_id": sess}, true)
	act("stop_job", map[string]any{"project": proj, "session_id": sess, "job_id": job}, true)
	act("stop_job", map[string]any{"project": proj, "session_id": sess, "job_id": "job_missing"}, false)

	// Validation.
	act("go_test", map[string]any{"project": proj, "session_id": sess, "packages": []string{"./..."}}, true)
	act("run_tests", map[string]any{"project": proj, "session_id": sess, "runner": "node"}, have("run_tests"))
	act("cargo_check", map[string]any{"project": proj, "session_id": sess, "cwd": "crate", "env": map[string]string{"CARGO_NET_OFFLINE": "true"}}, have("cargo_check"))
	act("cargo_test", map[string]any{"project": proj, "session_id": sess, "cwd": "crate", "env": map[string]string{"CARGO_NET_OFFLINE": "true"}}, have("cargo_test"))
	act("cargo_check", map[string]any{"project": proj, "session_id": sess, "cwd": "nowhere"}, false)
	act("validation_summary", map[string]any{"session_id": sess}, true)

	// Persistent shells.
	shell := str(act("open_session_shell", map[string]any{"session_id": sess}, true), "shell", "shell_id")
	act("session_shell_exec", map[string]any{"session_id": sess, "shell_id": shell, "command": "echo hi"}, true)
	act("session_shell_status", map[string]any{"session_id": sess, "shell_id": shell}, true)
	act("close_session_shell", map[string]any{"session_id": sess, "shell_id": shell}, true)
	act("session_shell_exec", map[string]any{"session_id": sess, "shell_id": shell, "command": "echo hi"}, false)
	act("session_shell_status", map[string]any{"session_id": sess, "shell_id": "wc_shell_missing"}, false)
	act("close_session_shell", map[string]any{"session_id": sess, "shell_id": "wc_shell_missing"}, false)

	// The message board.
	todo := str(act("post_session_message", map[string]any{"session_id": sess, "kind": "todo", "message": "fix Add"}, true), "message", "message_id")
	act("list_session_messages", map[string]any{"session_id": sess}, true)
	act("session_discussion_summary", map[string]any{"session_id": sess}, true)
	fence := str(act("get_session_assignment", map[string]any{"session_id": sess, "message_id": todo}, true), "assignment_fence")
	act("get_session_assignment", map[string]any{"session_id": sess, "message_id": "wc_msg_00000000000000000000000000000000"}, false)
	act("complete_session_message", map[string]any{"session_id": sess, "message_id": todo, "answer": "fixed", "completion_key": "k1",
		"expected_assignment_fence": "wsa3_x"}, false)
	act("complete_session_message", map[string]any{"session_id": sess, "message_id": todo, "answer": "fixed", "completion_key": "k1",
		"expected_assignment_fence": fence}, true)
	act("resolve_session_message", map[string]any{"session_id": sess, "message_id": todo}, true)
	act("resolve_session_message", map[string]any{"session_id": sess, "message_id": "wc_msg_00000000000000000000000000000000"}, false)
	obs := str(act("observe_session_messages", map[string]any{"session_id": sess}, true), "observation_token")
	act("observe_session_messages", map[string]any{"session_id": sess, "after_observation_token": obs + "x"}, false)

	// Window Peers: without a window, a failure; a second window of the
	// same principal finds the first and posts to it.
	act("list_peers", map[string]any{"project": proj}, false)
	act("current_window_activity", map[string]any{}, false)
	window = "schema-window-b"
	act("read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}}, true)
	window = "schema-window-a"
	act("read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}}, true)
	var peers []struct {
		PeerID string `json:"peer_id"`
	}
	json.Unmarshal(act("list_peers", map[string]any{"project": proj}, true)["peers"], &peers)
	if len(peers) != 1 {
		t.Fatalf("list_peers: %v", peers)
	}
	act("post_peer_message", map[string]any{"peer_id": peers[0].PeerID, "message": "hi"}, true)
	act("post_peer_message", map[string]any{"peer_id": "wc_peer_x", "message": "hi"}, false)
	act("current_window_activity", map[string]any{}, true)
	window = ""

	// Runners: the list (empty here) and a refused argument.
	act("list_runners", map[string]any{}, true)
	act("list_runners", map[string]any{"client_id": "x"}, false)

	// Goals.
	goal := str(act("create_goal", map[string]any{"project": proj, "title": "Fix Add"}, true), "goal", "goal_id")
	act("create_goal", map[string]any{"project": "agent:local:nope", "title": "Fix Add"}, false)
	grev := str(act("get_goal", map[string]any{"goal_id": goal}, true), "goal", "revision")
	act("get_goal", map[string]any{"goal_id": "wc_goal_x"}, false)
	act("list_goals", map[string]any{"project": proj}, true)
	act("list_goals", map[string]any{"project": "agent:local:nope"}, false)
	act("update_goal", map[string]any{"goal_id": goal, "expected_revision": "1-0000000000000000", "status": "blocked"}, false)
	grev = str(act("update_goal", map[string]any{"goal_id": goal, "expected_revision": grev, "status": "blocked"}, true), "goal", "revision")
	act("checkpoint_goal", map[string]any{"goal_id": goal, "expected_revision": "1-0000000000000000", "recovery_summary": "x",
		"steps": []any{map[string]any{"title": "fix", "status": "done"}}}, false)
	act("checkpoint_goal", map[string]any{"goal_id": goal, "expected_revision": grev, "recovery_summary": "Add fixed",
		"steps": []any{map[string]any{"title": "fix", "status": "done"}}}, true)
	act("associate_goal_workflow_session", map[string]any{"goal_id": goal, "session_id": sess}, true)
	act("associate_goal_workflow_session", map[string]any{"goal_id": "wc_goal_x", "session_id": sess}, false)

	// Agent Tasks: each tool's success and a failure (a refused
	// heartbeat is stale_precondition with its reason).
	etok := str(act("wait_for_agent_events", map[string]any{"project": proj}, true), "events_token")
	act("wait_for_agent_events", map[string]any{"project": proj, "after_events_token": "wte1_forged"}, false)
	task := str(act("create_agent_task", map[string]any{"project": proj, "title": "Fix Add", "labels": []string{"calc"}}, true), "task", "task_id")
	act("create_agent_task", map[string]any{"project": proj, "title": ""}, false)
	trev := str(act("read_agent_task", map[string]any{"task_id": task}, true), "task", "revision")
	act("read_agent_task", map[string]any{"task_id": "wc_task_00000000000000000000000000000000"}, false)
	act("list_agent_tasks", map[string]any{"project": proj, "label": "calc"}, true)
	act("list_agent_tasks", map[string]any{"project": proj, "state": "nope"}, false)
	act("update_agent_task", map[string]any{"task_id": task, "expected_revision": "1-0000000000000000", "priority": 3}, false)
	act("update_agent_task", map[string]any{"task_id": task, "expected_revision": trev, "priority": 3}, true)
	attempt := str(act("start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task}, true), "attempt", "attempt_id")
	act("start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task}, false)
	// The delta names the claimed task with its live attempt.
	act("wait_for_agent_events", map[string]any{"project": proj, "after_events_token": etok}, true)
	act("heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": attempt, "fence": 1}, true)
	act("heartbeat_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": attempt, "fence": 2}, false)
	act("complete_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": attempt, "fence": 2, "outcome": "done",
		"summary": "fixed", "completion_key": "c1"}, false)
	act("complete_agent_task_attempt", map[string]any{"session_id": sess, "attempt_id": attempt, "fence": 1, "outcome": "done",
		"summary": "fixed", "completion_key": "c1"}, true)
	act("cancel_agent_task", map[string]any{"task_id": task}, false)
	other := str(act("create_agent_task", map[string]any{"project": proj, "title": "Drop Sub"}, true), "task", "task_id")
	act("cancel_agent_task", map[string]any{"task_id": other}, true)
	// Declared intents: a declaration, a refused glob, the list.
	act("declare_intent", map[string]any{"session_id": sess, "paths": []string{"calc.go"}, "note": "fix Add"}, true)
	act("declare_intent", map[string]any{"session_id": sess, "paths": []string{"../calc.go"}}, false)
	act("list_intents", map[string]any{"project": proj}, true)
	act("list_intents", map[string]any{"project": "agent:local:nope"}, false)
	// Agent Skills: the list, a valid skill, an invalid one, an unknown one.
	act("skill_list", map[string]any{"project": proj}, true)
	act("skill_list", map[string]any{"project": "agent:local:nope"}, false)
	act("skill_read", map[string]any{"project": proj, "name": "calc-help"}, true)
	act("skill_read", map[string]any{"project": proj, "name": "nope"}, false)
	act("lsp", map[string]any{"project": proj, "op": "document_symbols", "path": "calc.go"}, true)
	act("lsp", map[string]any{"project": proj, "op": "definition", "path": "calc.go", "line": 999, "column": 1}, false)
	act("mcp_tool", map[string]any{"project": proj, "op": "list", "provider": "test"}, true)
	act("mcp_tool", map[string]any{"project": proj, "op": "call", "provider": "test", "tool": "echo"}, false)

	// Project Memory.
	mrev := str(act("memory_set", map[string]any{"project": proj, "memory_key": "calc", "body": "Add adds", "tags": []string{"pinned"}}, true), "entry", "revision")
	act("memory_set", map[string]any{"project": proj, "memory_key": "calc", "body": "Add subtracts"}, false)
	act("memory_read", map[string]any{"project": proj, "memory_key": "calc", "include_history": true}, true)
	act("memory_read", map[string]any{"project": proj, "memory_key": "nothing"}, false)
	act("memory_search", map[string]any{"project": proj, "query": "adds"}, true)
	act("memory_search", map[string]any{"project": proj, "query": `"adds`}, false)
	scope := str(act("memory_scope_list", map[string]any{}, true), "scopes", "scope_id")
	act("memory_scope_list", map[string]any{"unknown_member": true}, false)
	act("memory_delete", map[string]any{"project": proj, "memory_key": "calc", "expected_revision": "1-0000000000000000"}, false)
	act("memory_delete", map[string]any{"project": proj, "memory_key": "calc", "expected_revision": mrev}, true)
	act("memory_scope_purge", map[string]any{"scope_id": "wc_mscope_00000000000000000000000000000000"}, false)
	act("memory_scope_purge", map[string]any{"scope_id": scope}, true)

	// The gateway.
	act(gateway.ListTools, map[string]any{}, true)
	act(gateway.ListTools, map[string]any{"unknown_member": true}, false)
	act(gateway.DescribeTool, map[string]any{"tool": "read_files"}, true)
	act(gateway.DescribeTool, map[string]any{"tool": "no_such_tool"}, false)
	act(gateway.CallTool, map[string]any{"tool": "git_status", "arguments": map[string]any{"project": proj}}, true)
	act(gateway.CallTool, map[string]any{"tool": "no_such_tool", "arguments": map[string]any{}}, false)

	// Closeout.
	act("session_handoff_summary", map[string]any{"session_id": sess, "diagnostic": true}, true)
	act("session_handoff_summary", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("finish_coding_task", map[string]any{"project": proj, "session_id": sess}, true)
	act("finish_coding_task", map[string]any{"project": proj, "session_id": sess, "summary_only": true}, true)
	act("finish_coding_task", map[string]any{"project": proj, "session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("list_sessions", map[string]any{"project": "agent:local:nope"}, false)
	act("update_session_context", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000", "default_shell": "sh"}, false)
	act("project_overview", map[string]any{"project": "agent:local:nope"}, false)
	act("search_project_texts", map[string]any{"project": proj, "queries": []any{map[string]any{"query": "(", "regex": true}}}, false)
	act("write_project_file", map[string]any{"project": proj, "path": "../outside.txt", "content": "x"}, false)
	act("observe_jobs", map[string]any{"project": proj, "job_ids": []string{"job_missing"}}, false)
	act("list_jobs", map[string]any{"project": "agent:local:nope"}, false)
	act("run_job", map[string]any{"project": "agent:local:nope", "command": "echo job"}, false)
	act("run_tests", map[string]any{"project": proj, "runner": "no_such_runner"}, false)
	act("cargo_test", map[string]any{"project": proj, "cwd": "nowhere"}, false)
	act("open_session_shell", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("post_session_message", map[string]any{"session_id": sess, "kind": "no_such_kind", "message": "x"}, false)
	act("list_session_messages", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("session_discussion_summary", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("validation_summary", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	act("close_session", map[string]any{"session_id": sess}, true)
	act("close_session", map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}, false)
	// A closed session refuses a write.
	act("write_project_file", map[string]any{"project": proj, "session_id": sess, "path": "x.txt", "content": "x"}, false)

	// No tool is exempt: every tool tools/list publishes reached both.
	var unreachable []string
	for _, name := range slices.Sorted(maps.Keys(schemas["modern"])) {
		switch {
		case !succeeded[name] && needs[name] != "" && !have(name):
			unreachable = append(unreachable, name+" ("+needs[name]+" not installed)")
		case !succeeded[name]:
			t.Errorf("%s never reached a success: add one to this test", name)
		}
		if !failed[name] {
			t.Errorf("%s never reached a failure: add one to this test", name)
		}
	}
	if len(unreachable) > 0 {
		t.Skipf("no success reached for %s", strings.Join(unreachable, ", "))
	}
}

// TestMCPLegacyToolsListHas2025MembersOnly: a 2025-11-25 client's
// tools/list carries only that version's members (tools, nextCursor,
// _meta), never the 2026-07-28 cache hints ttlMs and cacheScope, which a
// modern client gets.
func TestMCPLegacyToolsListHas2025MembersOnly(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	for _, c := range []struct {
		era  string
		hdr  map[string]string
		want []string
	}{
		{"", map[string]string{}, []string{"tools"}},
		{rawModernVersion, rawHeaders("tools/list", ""), []string{"tools", "ttlMs", "cacheScope"}},
	} {
		r := rawPost(t, s, s.token, rawBody(1, "tools/list", nil, c.era), c.hdr)
		if r.Msg == nil || r.Msg.Error != nil {
			t.Fatalf("tools/list (%q): %s", c.era, r)
		}
		var members map[string]json.RawMessage
		json.Unmarshal(r.Msg.Result, &members)
		for _, k := range c.want {
			if _, ok := members[k]; !ok {
				t.Errorf("tools/list (%q) lacks %s", c.era, k)
			}
		}
		if c.era == "" {
			for k := range members {
				if !slices.Contains([]string{"tools", "nextCursor", "_meta"}, k) {
					t.Errorf("legacy tools/list carries %s, not a 2025-11-25 member", k)
				}
			}
			if strings.Contains(string(r.Msg.Result), `"ttlMs"`) {
				t.Errorf("legacy tools/list carries ttlMs")
			}
		}
	}
}
