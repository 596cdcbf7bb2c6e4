package app_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/workflow"
)

// startAppGrace is startApp with a job sync grace of 100ms, so that a
// validation continues as a background job.
func startAppGrace(t *testing.T, dataDir string, projects ...string) *server {
	t.Helper()
	cfg, err := app.LoadConfig(dataDir, func(k string) string {
		if k == "WEBCODEX_JOB_SYNC_GRACE" {
			return "100ms"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = app.Duration(5 * time.Second)
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.RegisterProjects(ctx, projects); err != nil {
		t.Fatal(err)
	}
	addr, err := a.Listen()
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &server{a: a, base: "http://" + addr.String(), token: a.AdminToken, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Serve(sctx) }()
	return s
}

// TestBackgroundValidationBecomesEvidenceUnobserved: through the real
// server, a go_test handed off to the background becomes one
// validation_recorded event in its session when it ends, with no tool
// observing it (the jobs hook wired in app); observing it afterwards and a
// restart add nothing.
func TestBackgroundValidationBecomesEvidenceUnobserved(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	data, proj := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go": "package calc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n" +
			"func TestAdd(t *testing.T) {\n\ttime.Sleep(500 * time.Millisecond)\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startAppGrace(t, data, "demo="+proj)
	const p = "agent:local:demo"
	w := must(t, s.call(t, "work_on_project", map[string]any{"project": p, "instruction": "Fix Add"}, ""), "work_on_project")
	sid := str(t, w.Output["session_id"])
	r := must(t, s.call(t, "go_test", map[string]any{"project": p, "session_id": sid}, ""), "go_test")
	jobID := str(t, r.Output["job_id"])
	if str(t, r.Output["state"]) != "running" {
		t.Fatalf("go_test was not handed off: %v", r.Output)
	}
	// The job's end, read from the manager (no tool): Wait returns after
	// the OnFinished hook.
	j, err := s.a.Jobs.Wait(context.Background(), jobID, time.Minute)
	if err != nil || !j.State.Terminal() {
		t.Fatalf("job: %+v %v", j, err)
	}
	evidence := func(a *app.App) []workflow.Validation {
		t.Helper()
		evs, err := a.Sessions.Store().Events(context.Background(), sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []workflow.Validation
		for _, ev := range evs {
			if ev.Kind == workflow.EventValidationRecorded {
				out = append(out, *ev.Validation)
			}
		}
		return out
	}
	vs := evidence(s.a)
	if len(vs) != 1 || vs[0].JobID != jobID || vs[0].Verdict != workflow.VerdictFailed || vs[0].Failed != 1 {
		t.Fatalf("evidence of the unobserved job: %+v", vs)
	}
	must(t, s.call(t, "observe_jobs", map[string]any{"project": p, "job_ids": []string{jobID}}, ""), "observe_jobs")
	must(t, s.call(t, "list_jobs", map[string]any{"project": p}, ""), "list_jobs")
	must(t, s.call(t, "validation_summary", map[string]any{"project": p, "session_id": sid}, ""), "validation_summary")
	if n := len(evidence(s.a)); n != 1 {
		t.Fatalf("%d validation events after observing, want 1", n)
	}
	s.stop(t)
	s = startAppGrace(t, data, "demo="+proj)
	defer s.stop(t)
	if n := len(evidence(s.a)); n != 1 {
		t.Fatalf("%d validation events after a restart, want 1", n)
	}
}
