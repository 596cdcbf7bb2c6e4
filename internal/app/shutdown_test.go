//go:build unix

package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// TestShutdownInterruptsLongCall: a run_process still running when the
// graceful shutdown's grace period ends is answered as interrupted, its
// ledger finish says interrupted (it is not left open, so the next start
// recovers nothing), and its evidence record says outcome unknown.
func TestShutdownInterruptsLongCall(t *testing.T) {
	data, proj, fifoDir := t.TempDir(), t.TempDir(), t.TempDir()
	// The sandbox lets the process write the FIFO, outside the project.
	s := startAppWith(t, data, func(c *app.Config) { c.SandboxExtraWrite = []string{fifoDir} }, "demo="+proj)
	id := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "run the slow step"}, ""), "start").Output["session_id"])

	type answer struct {
		r   result
		err error
	}
	// The process writes its pid to a FIFO outside the project: reading it
	// blocks until the process runs (no polling).
	pidFIFO := filepath.Join(fifoDir, "pid")
	if err := syscall.Mkfifo(pidFIFO, 0o600); err != nil {
		t.Fatal(err)
	}
	answered := make(chan answer, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"tool": "run_process", "arguments": map[string]any{"project": "agent:local:demo", "session_id": id,
			"argv": []string{"sh", "-c", `echo $$ > "$1"; exec sleep 60`, "sh", pidFIFO}}})
		req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var r result
		answered <- answer{r: r, err: json.NewDecoder(resp.Body).Decode(&r)}
	}()
	pidRead := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(pidFIFO)
		pidRead <- b
	}()
	var pid int
	select {
	case b := <-pidRead:
		if err := json.Unmarshal(bytes.TrimSpace(b), &pid); err != nil || pid <= 0 {
			t.Fatalf("pid %q from the process: %v", b, err)
		}
	case a := <-answered:
		t.Fatalf("run_process answered before its process ran: %+v (%v)", a.r, a.err)
	}
	s.a.Config.ShutdownTimeout = app.Duration(50 * time.Millisecond)
	s.stop(t)
	a := <-answered
	if a.err != nil || a.r.Success || a.r.Error == nil || a.r.Error.Kind != "interrupted" || string(a.r.Output["state_changed"]) != "true" {
		t.Fatalf("interrupted call answered %+v (%v)", a.r, a.err)
	}
	if syscall.Kill(pid, 0) == nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		t.Errorf("the interrupted call's process %d outlived the shutdown", pid)
	}

	ctx := context.Background()
	st, err := workflowdb.Open(ctx, filepath.Join(data, app.WorkflowDB), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	open, err := st.OpenCalls(ctx, 0)
	st.Close()
	if err != nil || len(open) != 0 {
		t.Fatalf("open calls after a graceful shutdown: %+v %v", open, err)
	}
	var fin workflow.Event
	for _, e := range evs {
		if e.Kind == workflow.EventToolCallFinished && e.Tool == "run_process" {
			fin = e
		}
	}
	if fin.Outcome != workflow.OutcomeInterrupted || fin.ErrorKind != "interrupted" || fin.InvocationID == "" {
		t.Fatalf("ledger finish of the interrupted call: %+v", fin)
	}

	rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil || !rep.Clean {
		t.Fatalf("evidence verify: %v %+v", err, rep.Totals)
	}
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := j.SessionRecords(ctx, id, 100)
	j.Close()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if r := e.Record; r.InvocationID == fin.InvocationID {
			n++
			if r.Outcome != evidence.OutcomeUnknown || r.ErrorKind != "interrupted" || r.Tool != "run_process" {
				t.Errorf("evidence record of the interrupted call: %+v", r)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d evidence records for the interrupted invocation, want 1", n)
	}

	// The next start finds nothing to recover: the call is listed once,
	// as interrupted.
	s2 := startApp(t, data)
	defer s2.stop(t)
	sum := must(t, s2.call(t, "session_summary", map[string]any{"session_id": id}, ""), "summary")
	var u struct {
		Total int                    `json:"total"`
		Items []workflow.UnknownCall `json:"items"`
	}
	if err := json.Unmarshal(sum.Output["outcome_unknown"], &u); err != nil || u.Total != 1 || u.Items[0].Outcome != workflow.OutcomeInterrupted {
		t.Fatalf("session_summary outcome_unknown after restart: %+v %v", u, err)
	}
}
