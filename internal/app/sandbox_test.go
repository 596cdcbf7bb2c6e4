package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// TestSandboxThroughTheTools drives every kind of process start through
// the real server (default config: workspace-write): each reads the data
// directory and fails as the command's own failure, writes the project,
// and reports the mode in force in its result and the ledger.
func TestSandboxThroughTheTools(t *testing.T) {
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	data, proj, outside := t.TempDir(), t.TempDir(), t.TempDir()
	token := filepath.Join(data, "admin-token")
	os.WriteFile(filepath.Join(proj, "go.mod"), []byte("module sbx\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "sbx_test.go"), []byte(`package sbx

import (
	"os"
	"testing"
)

func TestSecretsAreOutOfReach(t *testing.T) {
	for _, f := range []string{"admin-token", "evidence.key", "workflow.db"} {
		if _, err := os.ReadFile(`+"`"+data+"/`"+` + f); err == nil {
			t.Fatalf("read %s", f)
		}
	}
	if err := os.WriteFile(`+"`"+outside+"/x`"+`, nil, 0o600); err == nil {
		t.Fatal("wrote outside the project")
	}
}
`), 0o644)
	s := startApp(t, data, "demo="+proj)
	defer s.stop(t)
	const p = "agent:local:demo"
	sess := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": p, "instruction": "sandbox"}, ""), "work_on_project").Output["session_id"])
	args := func(m map[string]any) map[string]any {
		m["project"], m["session_id"] = p, sess
		return m
	}
	mode := func(r result) string {
		t.Helper()
		var m string
		json.Unmarshal(r.Output["sandbox"], &m)
		return m
	}
	denied := func(what string, r result) {
		t.Helper()
		if r.Success || r.Error == nil || r.Error.Kind != "command_failed" {
			t.Errorf("%s: want command_failed, got %+v", what, r)
		}
	}

	denied("run_process cat admin-token", s.call(t, "run_process", args(map[string]any{"argv": []string{"cat", token}}), ""))
	denied("run_shell write outside", s.call(t, "run_shell", args(map[string]any{"command": "echo x > " + filepath.Join(outside, "y")}), ""))
	if _, err := os.Stat(filepath.Join(outside, "y")); err == nil {
		t.Error("run_shell wrote outside the project")
	}
	r := must(t, s.call(t, "run_shell", args(map[string]any{"command": "echo ok > inside.txt && cat inside.txt"}), ""), "run_shell inside")
	if mode(r) != "workspace-write" {
		t.Errorf("run_shell sandbox %s", r.Output["sandbox"])
	}

	r = must(t, s.call(t, "run_job", args(map[string]any{"command": "cat " + filepath.Join(data, "evidence.key")}), ""), "run_job")
	if mode(r) != "workspace-write" {
		t.Errorf("run_job sandbox %s", r.Output["sandbox"])
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal(r.Output["job"], &job)
	for {
		r = must(t, s.call(t, "observe_jobs", args(map[string]any{"job_ids": []string{job.JobID}, "wait_seconds": 30, "wake_on": "terminal"}), ""), "observe_jobs")
		if o := string(r.Output["jobs"]); strings.Contains(o, `"state":"failed"`) {
			if !strings.Contains(o, "Permission denied") || strings.Contains(o, "BEGIN") {
				t.Errorf("run_job reading evidence.key: %s", o)
			}
			break
		} else if strings.Contains(o, `"state":"succeeded"`) {
			t.Fatalf("run_job read evidence.key: %s", o)
		}
	}

	r = must(t, s.call(t, "open_session_shell", args(map[string]any{}), ""), "open_session_shell")
	var sh struct {
		ShellID string `json:"shell_id"`
		Sandbox string `json:"sandbox"`
	}
	json.Unmarshal(r.Output["shell"], &sh)
	if sh.Sandbox != "workspace-write" {
		t.Errorf("shell sandbox %s", r.Output["shell"])
	}
	denied("session_shell_exec cat workflow.db", s.call(t, "session_shell_exec", args(map[string]any{"shell_id": sh.ShellID, "command": "cat " + filepath.Join(data, "workflow.db")}), ""))
	r = must(t, s.call(t, "session_shell_exec", args(map[string]any{"shell_id": sh.ShellID, "command": "echo shell > shell.txt"}), ""), "session_shell_exec inside")
	if mode(r) != "workspace-write" {
		t.Errorf("session_shell_exec sandbox %s", r.Output["sandbox"])
	}

	r = must(t, s.call(t, "go_test", args(map[string]any{"packages": []string{"./..."}}), ""), "go_test")
	if mode(r) != "workspace-write" || string(r.Output["passed"]) != "1" {
		t.Errorf("go_test: %+v", r.Output)
	}

	ledger := string(exportLedger(t, s.a, sess))
	if n := strings.Count(ledger, `"sandbox":"workspace-write"`); n < 7 {
		t.Errorf("the ledger holds %d sandbox facts, want one per start (7):\n%s", n, ledger)
	}
}
