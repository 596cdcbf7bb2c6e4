package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/transport/rest"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// openAPIDoc is the part of /openapi.json these tests read.
type openAPIDoc struct {
	Info struct {
		Description string `json:"description"`
	} `json:"info"`
	Paths map[string]struct {
		Post struct {
			OperationID string `json:"operationId"`
			Responses   map[string]struct {
				Content map[string]struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"post"`
	} `json:"paths"`
}

func fetchOpenAPI(t *testing.T, s *server, query string) openAPIDoc {
	t.Helper()
	code, body := s.do(t, "", "GET", "/openapi.json"+query, nil)
	if code != 200 {
		t.Fatalf("openapi.json%s: HTTP %d %s", query, code, body)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// responseSchemas compiles every operation's response schemas with a strict
// JSON Schema 2020-12 validator, keyed by "tool status".
func responseSchemas(t *testing.T, doc openAPIDoc) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	out := map[string]*jsonschema.Schema{}
	for path, op := range doc.Paths {
		tool := strings.TrimPrefix(path, "/api/actions/")
		for status, resp := range op.Post.Responses {
			raw, ok := resp.Content["application/json"]
			if !ok {
				t.Fatalf("%s %s: no application/json schema", tool, status)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw.Schema))
			if err != nil {
				t.Fatal(err)
			}
			url := fmt.Sprintf("mem:///%s/%s.json", tool, status)
			if err := c.AddResource(url, v); err != nil {
				t.Fatalf("%s %s: %v", tool, status, err)
			}
			sch, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s %s: schema does not compile: %v", tool, status, err)
			}
			out[tool+" "+status] = sch
		}
	}
	return out
}

// strictProject is a git repository with a Go module, a node test and a
// Rust crate, so every validation tool has something real to run.
func strictProject(t *testing.T) string {
	t.Helper()
	dir := goCalcRepo(t)
	files := map[string]string{
		"calc.test.js":                      "const test = require('node:test');\ntest('adds', () => {});\n",
		"crate/Cargo.toml":                  "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"crate/src/lib.rs":                  "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n",
		".gitignore":                        "target/\n",
		"docs/notes/read.md":                "notes\n",
		".agents/skills/calc-help/SKILL.md": "---\nname: calc-help\ndescription: How to test calc.\n---\nRun go test.\n",
		".claude/skills/broken/SKILL.md":    "no front matter\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOpenAPIResponsesValidateStrictly calls every registered tool through
// POST /api/actions/{tool}, with arguments that succeed and with arguments
// that fail, and validates each response body against the operation's
// response schema in /openapi.json?tools=all under a strict JSON Schema
// 2020-12 validator.
func TestOpenAPIResponsesValidateStrictly(t *testing.T) {
	repo := strictProject(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { withTestProvider(t, c) }, "calc="+repo)
	defer s.stop(t)
	const proj = "agent:local:calc"
	schemas := responseSchemas(t, fetchOpenAPI(t, s, "?tools="+rest.AllTools))
	have := func(bin string) bool { _, err := exec.LookPath(bin); return err == nil }

	called := map[string]bool{}
	// act posts args to the tool's action route, validates the response
	// against the schema of its status, and returns the decoded body.
	actWindow := "" // the window header act sends ("" none)
	act := func(tool string, args any, wantSuccess bool) map[string]json.RawMessage {
		t.Helper()
		body, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		code, data := s.doWindow(t, actWindow, "/api/actions/"+tool, body)
		sch := schemas[fmt.Sprintf("%s %d", tool, code)]
		if sch == nil {
			t.Fatalf("%s: HTTP %d has no response schema: %s", tool, code, data)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: HTTP %d response does not validate: %v\n%s", tool, code, err, data)
		}
		var res map[string]json.RawMessage
		json.Unmarshal(data, &res)
		if code == 200 {
			called[tool] = true
			if got := string(res["success"]) == "true"; got != wantSuccess {
				t.Errorf("%s: success=%v, want %v: %s", tool, got, wantSuccess, data)
			}
		}
		return res
	}
	field := func(res map[string]json.RawMessage, path ...string) string {
		t.Helper()
		raw := res["output"]
		for _, p := range path {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				var a []json.RawMessage
				if err := json.Unmarshal(raw, &a); err != nil || len(a) == 0 {
					t.Fatalf("no %v in %s", path, res["output"])
				}
				raw = a[0]
				json.Unmarshal(raw, &m)
			}
			raw = m[p]
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%v is not a string in %s", path, res["output"])
		}
		return v
	}

	// Sessions, files, search, edit, git.
	sess := field(act("work_on_project", map[string]any{"project": proj, "instruction": "Fix Add: it subtracts"}, true), "session_id")
	act("list_sessions", map[string]any{"project": proj}, true)
	act("session_summary", map[string]any{"session_id": sess}, true)
	act("update_session_context", map[string]any{"session_id": sess, "default_shell": "sh"}, true)
	act("project_overview", map[string]any{"project": proj, "session_id": sess}, true)
	act("list_project_files", map[string]any{"project": proj, "session_id": sess}, true)
	rv := field(act("read_files", map[string]any{"project": proj, "session_id": sess, "files": []any{map[string]any{"path": "calc.go"}}}, true), "files", "read_revision")
	act("search_project_texts", map[string]any{"project": proj, "session_id": sess, "queries": []any{map[string]any{"query": "a - b"}}}, true)
	act("apply_text_edits", map[string]any{"project": proj, "session_id": sess, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": rv,
		"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}},
	}}}, true)
	act("write_project_file", map[string]any{"project": proj, "session_id": sess, "path": "NOTES.md", "content": "notes\n"}, true)
	act("git_status", map[string]any{"project": proj, "session_id": sess}, true)
	act("git_diff", map[string]any{"project": proj, "session_id": sess}, true)

	// Processes and jobs.
	act("run_process", map[string]any{"project": proj, "session_id": sess, "argv": []string{"git", "--version"}}, true)
	act("run_shell", map[string]any{"project": proj, "session_id": sess, "command": "echo hi"}, true)
	act("run_script", map[string]any{"project": proj, "session_id": sess, "interpreter": "sh", "script": "echo hi\n"}, true)
	job := field(act("run_job", map[string]any{"project": proj, "session_id": sess, "command": "echo job"}, true), "job", "job_id")
	act("observe_jobs", map[string]any{"project": proj, "session_id": sess, "job_ids": []string{job}, "wait_seconds": 30, "wake_on": "all_terminal"}, true)
	act("read_job_tail", map[string]any{"project": proj, "session_id": sess, "job_id": job}, true)
	act("list_jobs", map[string]any{"project": proj, "session_id": sess}, true)
	act("stop_job", map[string]any{"project": proj, "session_id": sess, "job_id": job}, true)

	// Validation.
	act("go_test", map[string]any{"project": proj, "session_id": sess, "packages": []string{"./..."}}, true)
	act("run_tests", map[string]any{"project": proj, "session_id": sess, "runner": "node"}, have("node"))
	act("cargo_check", map[string]any{"project": proj, "session_id": sess, "cwd": "crate", "env": map[string]string{"CARGO_NET_OFFLINE": "true"}}, have("cargo"))
	act("cargo_test", map[string]any{"project": proj, "session_id": sess, "cwd": "crate", "env": map[string]string{"CARGO_NET_OFFLINE": "true"}}, have("cargo"))
	act("validation_summary", map[string]any{"session_id": sess}, true)

	// Persistent shells.
	shell := field(act("open_session_shell", map[string]any{"session_id": sess}, true), "shell", "shell_id")
	act("session_shell_exec", map[string]any{"session_id": sess, "shell_id": shell, "command": "echo hi"}, true)
	act("session_shell_status", map[string]any{"session_id": sess, "shell_id": shell}, true)
	act("close_session_shell", map[string]any{"session_id": sess, "shell_id": shell}, true)

	// The message board.
	todo := field(act("post_session_message", map[string]any{"session_id": sess, "kind": "todo", "message": "fix Add"}, true), "message", "message_id")
	act("list_session_messages", map[string]any{"session_id": sess}, true)
	act("session_discussion_summary", map[string]any{"session_id": sess}, true)
	fence := field(act("get_session_assignment", map[string]any{"session_id": sess, "message_id": todo}, true), "assignment_fence")
	act("complete_session_message", map[string]any{"session_id": sess, "message_id": todo, "answer": "fixed", "completion_key": "k1",
		"expected_assignment_fence": "wsa3_x"}, false)
	act("complete_session_message", map[string]any{"session_id": sess, "message_id": todo, "answer": "fixed", "completion_key": "k1",
		"expected_assignment_fence": fence}, true)
	act("resolve_session_message", map[string]any{"session_id": sess, "message_id": todo}, true)
	obs := field(act("observe_session_messages", map[string]any{"session_id": sess}, true), "observation_token")
	act("observe_session_messages", map[string]any{"session_id": sess, "after_observation_token": obs + "x"}, false)

	// Window Peers: a second window of the same principal finds the
	// first, posts to it; without a window, a failure.
	act("list_peers", map[string]any{"project": proj}, false)
	actWindow = "strict-window-b"
	act("read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}}, true)
	actWindow = "strict-window-a"
	act("read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}}}, true)
	var peerList []struct {
		PeerID string `json:"peer_id"`
	}
	json.Unmarshal(act("list_peers", map[string]any{"project": proj}, true)["output"], &struct {
		Peers *[]struct {
			PeerID string `json:"peer_id"`
		} `json:"peers"`
	}{&peerList})
	if len(peerList) != 1 {
		t.Fatalf("list_peers over REST: %v", peerList)
	}
	act("post_peer_message", map[string]any{"peer_id": peerList[0].PeerID, "message": "hi"}, true)
	act("post_peer_message", map[string]any{"peer_id": "wc_peer_x", "message": "hi"}, false)
	act("current_window_activity", map[string]any{}, true)
	actWindow = ""

	// Runners.
	act("list_runners", map[string]any{}, true)

	// Goals.
	goal := field(act("create_goal", map[string]any{"project": proj, "title": "Fix Add"}, true), "goal", "goal_id")
	grev := field(act("get_goal", map[string]any{"goal_id": goal}, true), "goal", "revision")
	act("list_goals", map[string]any{"project": proj}, true)
	act("update_goal", map[string]any{"goal_id": goal, "expected_revision": "1-0000000000000000", "status": "blocked"}, false)
	grev = field(act("update_goal", map[string]any{"goal_id": goal, "expected_revision": grev, "status": "blocked"}, true), "goal", "revision")
	act("checkpoint_goal", map[string]any{"goal_id": goal, "expected_revision": grev, "recovery_summary": "Add fixed",
		"steps": []any{map[string]any{"title": "fix", "status": "done"}}}, true)
	act("associate_goal_workflow_session", map[string]any{"goal_id": goal, "session_id": sess}, true)
	act("get_goal", map[string]any{"goal_id": "wc_goal_x"}, false)
	// Agent Tasks: each tool's success and a failure (a refused
	// heartbeat is stale_precondition with its reason).
	etok := field(act("wait_for_agent_events", map[string]any{"project": proj}, true), "events_token")
	act("wait_for_agent_events", map[string]any{"project": proj, "after_events_token": "wte1_forged"}, false)
	task := field(act("create_agent_task", map[string]any{"project": proj, "title": "Fix Add", "labels": []string{"calc"}}, true), "task", "task_id")
	act("create_agent_task", map[string]any{"project": proj, "title": ""}, false)
	trev := field(act("read_agent_task", map[string]any{"task_id": task}, true), "task", "revision")
	act("read_agent_task", map[string]any{"task_id": "wc_task_00000000000000000000000000000000"}, false)
	act("list_agent_tasks", map[string]any{"project": proj, "label": "calc"}, true)
	act("list_agent_tasks", map[string]any{"project": proj, "state": "nope"}, false)
	act("update_agent_task", map[string]any{"task_id": task, "expected_revision": "1-0000000000000000", "priority": 3}, false)
	act("update_agent_task", map[string]any{"task_id": task, "expected_revision": trev, "priority": 3}, true)
	attempt := field(act("start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task}, true), "attempt", "attempt_id")
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
	other := field(act("create_agent_task", map[string]any{"project": proj, "title": "Drop Sub"}, true), "task", "task_id")
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
	mrev := field(act("memory_set", map[string]any{"project": proj, "memory_key": "calc", "body": "Add adds", "tags": []string{"pinned"}}, true), "entry", "revision")
	act("memory_set", map[string]any{"project": proj, "memory_key": "calc", "body": "Add subtracts"}, false)
	act("memory_read", map[string]any{"project": proj, "memory_key": "calc", "include_history": true}, true)
	act("memory_search", map[string]any{"project": proj, "query": "adds"}, true)
	act("memory_search", map[string]any{"project": proj, "query": `"adds`}, false)
	act("memory_scope_list", map[string]any{}, true)
	act("memory_delete", map[string]any{"project": proj, "memory_key": "calc", "expected_revision": mrev}, true)
	act("memory_scope_purge", map[string]any{"scope_id": "wc_mscope_00000000000000000000000000000000"}, false)

	// Closeout.
	act("session_handoff_summary", map[string]any{"session_id": sess}, true)
	act("finish_coding_task", map[string]any{"project": proj, "session_id": sess}, true)
	act("close_session", map[string]any{"session_id": sess}, true)

	// Failures: each validates against the failure shape.
	act("read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "missing.go"}}}, false)
	act("apply_text_edits", map[string]any{"project": proj, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": rv,
		"edits": []any{map[string]any{"old_text": "a + b", "new_text": "a * b"}},
	}}}, false)
	act("run_process", map[string]any{"project": proj, "argv": []string{"sh", "-c", "exit 3"}}, false)
	act("session_summary", map[string]any{"session_id": "wc_sess_00000000000000000000000000"}, false)
	act("git_status", map[string]any{"project": "agent:local:nope"}, false)
	// The reproduction of the Go-internals leak: a null where a string is due.
	nullArg := act("read_files", map[string]any{"project": nil, "files": []any{}}, false)
	if msg := string(nullArg["error"]); !strings.Contains(msg, `"kind":"invalid_arguments"`) ||
		!strings.Contains(msg, "at arguments.project: got null, want string") || strings.Contains(msg, "reflect") {
		t.Errorf("project:null error: %s", msg)
	}
	act("write_project_file", map[string]any{"project": proj, "session_id": sess, "path": "x.txt", "content": "x"}, false)
	// A body that is not an object never reaches the tool: the 400 schema.
	code, data := s.do(t, s.token, "POST", "/api/actions/read_files", []byte(`[]`))
	if code != 400 {
		t.Fatalf("non-object body: HTTP %d %s", code, data)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err := schemas["read_files 400"].Validate(inst); err != nil {
		t.Errorf("400 body does not validate: %v\n%s", err, data)
	}

	for _, tl := range s.a.Kernel.Registry().Tools() {
		if !called[tl.Name] {
			t.Errorf("tool %s was never called: add it to this test", tl.Name)
		}
	}
}

// TestOpenAPIDefaultWithinActionLimit checks that the default document
// stays within a GPT Action's operations, names every tool it leaves out,
// and that the ?tools= URL it gives describes exactly those.
func TestOpenAPIDefaultWithinActionLimit(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	if rest.MaxActionOperations != 30 {
		t.Fatalf("MaxActionOperations = %d, GPT Actions accept 30", rest.MaxActionOperations)
	}
	def := fetchOpenAPI(t, s, "")
	if len(def.Paths) == 0 || len(def.Paths) > rest.MaxActionOperations {
		t.Fatalf("default document has %d operations, limit %d", len(def.Paths), rest.MaxActionOperations)
	}
	all := s.a.Kernel.Registry().Tools()
	var left []string
	for _, tl := range all {
		if _, ok := def.Paths["/api/actions/"+tl.Name]; !ok {
			left = append(left, tl.Name)
		}
	}
	if len(left) == 0 {
		t.Fatal("the registry fits in one action; nothing is left out to test")
	}
	want := s.base + "/openapi.json?tools=" + strings.Join(left, ",")
	if !strings.Contains(def.Info.Description, want) || !strings.Contains(def.Info.Description, "?tools="+rest.AllTools) {
		t.Fatalf("description does not give %s and ?tools=all:\n%s", want, def.Info.Description)
	}
	for _, name := range left {
		if !strings.Contains(def.Info.Description, name+",") && !strings.Contains(def.Info.Description, name+".") {
			t.Errorf("description does not name left-out tool %s", name)
		}
	}
	rest2 := fetchOpenAPI(t, s, strings.TrimPrefix(want, s.base+"/openapi.json"))
	if len(rest2.Paths) != len(left) {
		t.Fatalf("the given URL describes %d tools, want %d", len(rest2.Paths), len(left))
	}
	for _, name := range left {
		if _, ok := rest2.Paths["/api/actions/"+name]; !ok {
			t.Errorf("the given URL leaves out %s", name)
		}
	}
	if got := fetchOpenAPI(t, s, "?tools="+rest.AllTools); len(got.Paths) != len(all) {
		t.Fatalf("?tools=all describes %d of %d tools", len(got.Paths), len(all))
	}
	if code, body := s.do(t, "", "GET", "/openapi.json?tools=read_files,nope", nil); code != 400 || !strings.Contains(string(body), `"kind":"invalid_arguments"`) {
		t.Fatalf("unknown tool in ?tools=: HTTP %d %s", code, body)
	}
}

// TestHandoffActionsNameRegisteredTools checks every tool name a suggested
// next action can contain against the real registry.
func TestHandoffActionsNameRegisteredTools(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	reg := s.a.Kernel.Registry()
	// A snake_case word is a tool name unless it is a member of a field
	// path (progress.may_have_changed).
	ident := regexp.MustCompile(`(?:^|[^.\w])([a-z]+(?:_[a-z]+)+)\b`)
	var named []string
	for _, tmpl := range handoff.ActionTemplates {
		for _, m := range ident.FindAllStringSubmatch(tmpl, -1) {
			name := m[1]
			if _, ok := reg.Lookup(name); !ok {
				t.Errorf("action %q names %s, which is not a registered tool", tmpl, name)
			}
			if !slices.Contains(named, name) {
				named = append(named, name)
			}
		}
	}
	if len(named) < 5 {
		t.Fatalf("only %v found in the action templates", named)
	}
}
