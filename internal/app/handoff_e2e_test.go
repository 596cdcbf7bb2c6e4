package app_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goCalcRepo returns a committed Git repository holding a tiny Go module
// whose Add has a bug that calc_test.go catches.
func goCalcRepo(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " not installed")
		}
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n" +
			"\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n\nfunc TestAddZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"0+0\")\n\t}\n}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// finishOutcome decodes task_outcome from a finish_coding_task output.
func finishOutcome(t *testing.T, out map[string]json.RawMessage) (status string, reasons []string) {
	t.Helper()
	var o struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal(out["task_outcome"], &o); err != nil {
		t.Fatalf("task_outcome %s: %v", out["task_outcome"], err)
	}
	return o.Status, o.Reasons
}

// TestTwoWindowHandoff runs the handoff story through MCP: window A starts
// a task, sees the test fail and stops; window B (a new client session with
// the same credential) recovers A's session from its handoff brief, fixes
// the bug recording in A's session, and finish_coding_task passes only once
// a passing validation is newer than the fix.
func TestTwoWindowHandoff(t *testing.T) {
	repo := goCalcRepo(t)
	s := startApp(t, t.TempDir(), "calc="+repo)
	defer s.stop(t)
	const proj = "agent:local:calc"
	const failingTest = "TestAdd"

	// Window A.
	a := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, a, "work_on_project", map[string]any{"project": proj, "instruction": "Make the calc tests pass."}, nil)
	if !w.Success {
		t.Fatalf("work_on_project: %+v", w.Error)
	}
	var id string
	json.Unmarshal(w.Output["session_id"], &id)
	r, raw := callMCP(t, a, "go_test", map[string]any{"project": proj, "session_id": id}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "validation_failed" {
		t.Fatalf("go_test before the fix should fail: %s", raw)
	}
	a.Close()

	// Window B: a new client session, same credential.
	b := connectMCP(t, s, "", nil)
	h, raw := callMCP(t, b, "session_handoff_summary", map[string]any{"session_id": id}, nil)
	if !h.Success {
		t.Fatalf("session_handoff_summary: %s", raw)
	}
	var brief struct {
		NextActions []string `json:"next_actions"`
		Validation  struct {
			Status string `json:"status"`
		} `json:"validation"`
	}
	if err := json.Unmarshal(h.Output["handoff_brief"], &brief); err != nil {
		t.Fatal(err)
	}
	if brief.Validation.Status != "failed" || len(brief.NextActions) == 0 || !strings.Contains(brief.NextActions[0], failingTest) {
		t.Fatalf("handoff brief does not lead with the failing test: %s", h.Output["handoff_brief"])
	}

	rf, raw := callMCP(t, b, "read_files", map[string]any{"project": proj, "files": []any{map[string]any{"path": "calc.go"}},
		"recording_session_id": id}, nil)
	if !rf.Success {
		t.Fatalf("read_files: %s", raw)
	}
	var files []struct {
		Content      string `json:"content"`
		ReadRevision string `json:"read_revision"`
	}
	json.Unmarshal(rf.Output["files"], &files)
	if len(files) != 1 || !strings.Contains(files[0].Content, "a - b") || files[0].ReadRevision == "" {
		t.Fatalf("read_files: %s", raw)
	}
	ed, raw := callMCP(t, b, "apply_text_edits", map[string]any{"project": proj, "recording_session_id": id, "changes": []any{map[string]any{
		"path": "calc.go", "op": "replace", "expected_read_revision": files[0].ReadRevision,
		"edits": []any{map[string]any{"old_text": "a - b", "new_text": "a + b"}}}}}, nil)
	if !ed.Success {
		t.Fatalf("apply_text_edits: %s", raw)
	}

	// The fix is newer than every validation: not a pass yet.
	f, raw := callMCP(t, b, "finish_coding_task", map[string]any{"project": proj, "session_id": id}, nil)
	if !f.Success {
		t.Fatalf("finish_coding_task: %s", raw)
	}
	if status, reasons := finishOutcome(t, f.Output); status == "pass" || !slices.Contains(reasons, "no_validation_since_last_change") {
		t.Fatalf("finish without fresh validation: %s %v\n%s", status, reasons, raw)
	}
	var changes struct {
		Items []string `json:"items"`
	}
	json.Unmarshal(f.Output["changes"], &changes)
	if len(changes.Items) != 1 || changes.Items[0] != "calc.go" {
		t.Fatalf("changes not recorded in A's session: %s", f.Output["changes"])
	}

	r, raw = callMCP(t, b, "go_test", map[string]any{"project": proj, "session_id": id}, nil)
	if !r.Success {
		t.Fatalf("go_test after the fix: %s", raw)
	}
	f, raw = callMCP(t, b, "finish_coding_task", map[string]any{"project": proj, "session_id": id}, nil)
	if !f.Success {
		t.Fatalf("finish_coding_task: %s", raw)
	}
	if status, reasons := finishOutcome(t, f.Output); status != "pass" {
		t.Fatalf("finish after a fresh passing run: %s %v\n%s", status, reasons, raw)
	}
	var v struct {
		Resolved struct {
			Items []string `json:"items"`
		} `json:"resolved"`
		UnresolvedTotal int `json:"unresolved_total"`
	}
	json.Unmarshal(f.Output["validation"], &v)
	if v.UnresolvedTotal != 0 || len(v.Resolved.Items) == 0 || !strings.Contains(v.Resolved.Items[0], failingTest) {
		t.Fatalf("validation: %s", f.Output["validation"])
	}
	// finish_coding_task never closes the session.
	sum, raw := callMCP(t, b, "session_summary", map[string]any{"session_id": id}, nil)
	if !sum.Success || !strings.Contains(string(raw), `"lifecycle":"active"`) {
		t.Fatalf("session_summary: %s", raw)
	}
}
