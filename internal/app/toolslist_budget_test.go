package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolBudget is each tool's budget in bytes of its tools/list entry as sent
// (compact JSON, modern era, the larger one): the measured size and 5%
// headroom; see decision 0023. A new tool
// must be added here with its budget.
var toolBudget = map[string]int{
	"apply_text_edits": 3000, "cargo_check": 2700, "cargo_test": 3000, "close_session": 1200,
	"close_session_shell": 1300, "finish_coding_task": 2400, "git_diff": 2200, "git_status": 1500,
	"go_test": 2800, "list_jobs": 1300, "list_project_files": 1900, "list_sessions": 1300,
	"observe_jobs": 2000, "open_session_shell": 1600, "project_overview": 1700, "read_files": 2000,
	"read_job_tail": 1700, "run_job": 1800, "run_process": 2900, "run_script": 2500, "run_shell": 2500,
	"run_tests": 2800, "search_project_texts": 2800, "session_handoff_summary": 2100,
	"session_shell_exec": 2400, "session_shell_status": 1600, "session_summary": 1400, "stop_job": 1200,
	"update_session_context": 1300, "validation_summary": 1400, "work_on_project": 1800,
	"write_project_file": 1800,
	// The message board.
	"post_session_message": 1800, "list_session_messages": 1400, "resolve_session_message": 1300,
	"session_discussion_summary": 1300, "get_session_assignment": 1400, "complete_session_message": 1900,
	"observe_session_messages": 1800,
}

// maxToolsListBytes bounds the whole tools/list result (the JSON-RPC result
// member as sent) in each era. The goal of issue 13 is 40,960 bytes; the
// measured state and what remains are in decision 0023.
// The seven message-board tools (issue 14) added ~10 KB: the total stays
// above 60 KB until the profiles of issue 13 land.
const maxToolsListBytes = 70 << 10

// TestMCPToolsListBudget measures tools/list as the server sends it, in
// both eras: every tool within its budget, every tool budgeted, the whole
// result within maxToolsListBytes, and no schema with a type array.
func TestMCPToolsListBudget(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	for _, era := range []string{rawModernVersion, ""} {
		hdr := map[string]string{}
		if era != "" {
			hdr = rawHeaders("tools/list", "")
		}
		r := rawPost(t, s, s.token, rawBody(1, "tools/list", nil, era), hdr)
		if r.Msg == nil || r.Msg.Error != nil {
			t.Fatalf("tools/list (%q): %s", era, r)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(r.Msg.Result, &list); err != nil {
			t.Fatal(err)
		}
		t.Logf("tools/list (%q): %d tools, %d bytes", era, len(list.Tools), len(r.Msg.Result))
		if len(r.Msg.Result) > maxToolsListBytes {
			t.Errorf("tools/list (%q) is %d bytes, over %d", era, len(r.Msg.Result), maxToolsListBytes)
		}
		if len(list.Tools) != len(toolBudget) {
			t.Errorf("tools/list (%q) has %d tools, the budget table %d", era, len(list.Tools), len(toolBudget))
		}
		for _, raw := range list.Tools {
			var tl struct{ Name string }
			json.Unmarshal(raw, &tl)
			budget, ok := toolBudget[tl.Name]
			if !ok {
				t.Errorf("%s has no budget", tl.Name)
			} else if len(raw) > budget {
				t.Errorf("%s (%q) is %d bytes in tools/list, over its budget %d", tl.Name, era, len(raw), budget)
			}
		}
		var v any
		json.Unmarshal(r.Msg.Result, &v)
		if p := typeArray(v, "result"); p != "" {
			t.Errorf("tools/list (%q): a type array at %s", era, p)
		}
	}
}

// typeArray returns the path of the first schema "type" that is an array.
func typeArray(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["type"].([]any); ok {
			return path
		}
		for k, c := range x {
			if p := typeArray(c, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for _, c := range x {
			if p := typeArray(c, path+"[]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestMCPNullStillAccepted: tools/list publishes a nullable member without
// "null" in its type, but the kernel still decodes null where Go accepts it
// (as absent): git_diff paths: null is the whole diff.
func TestMCPNullStillAccepted(t *testing.T) {
	repo := gitRepo(t)
	os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package calc\n// changed\n"), 0o644)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	r, raw := callMCP(t, cs, "git_diff", map[string]any{"project": "agent:local:calc", "paths": nil}, nil)
	if !r.Success || !json.Valid(raw) {
		t.Fatalf("git_diff with paths null: %+v %s", r.Error, raw)
	}
	if !strings.Contains(string(r.Output["files"]), `"path":"calc.go"`) {
		t.Fatalf("git_diff with paths null shows no diff: %s", raw)
	}
	var v any
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name == "git_diff" {
			b, _ := json.Marshal(tl.InputSchema)
			json.Unmarshal(b, &v)
			if got := v.(map[string]any)["properties"].(map[string]any)["paths"].(map[string]any)["type"]; got != "array" {
				t.Fatalf("git_diff paths published as type %v", got)
			}
		}
	}
}
