//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// TestCrashDuringLongCallLeavesAnHonestRecord kills a real server with
// SIGKILL while a mutating call (run_process) runs and a staging file is
// left in the project, restarts it, and checks that the cut-off call has an
// explicit outcome_unknown finish in the ledger (once, across restarts),
// shown by session_summary, the handoff brief and finish_coding_task, that
// its evidence record exists and the journal verifies, and that the staging
// file (only it) was removed.
func TestCrashDuringLongCallLeavesAnHonestRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	ctx := context.Background()
	res, err := callTool(ctx, srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "regenerate the fixtures"}, "")
	if err != nil || !res.Success {
		t.Fatalf("work_on_project: %v %+v", err, res.Error)
	}
	var start struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(res.Output, &start)

	// A staging file as a crash in the middle of an edit leaves it, and a
	// look-alike that is not one.
	staging := filepath.Join(proj, "gen", ".wc-edit-0123456789abcdef.tmp")
	lookalike := filepath.Join(proj, "gen", ".wc-edit-notastagingfile.tmp")
	os.MkdirAll(filepath.Dir(staging), 0o755)
	for _, p := range []string{staging, lookalike} {
		if err := os.WriteFile(p, []byte("half-written"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The long call writes its pid once it runs (its tool_call_started is
	// durable before the process starts).
	pidFile := filepath.Join(proj, "pid")
	callDone := make(chan error, 1)
	go func() {
		_, err := callTool(ctx, srv.base, "run_process", map[string]any{"project": "agent:local:demo", "session_id": start.SessionID,
			"argv": []string{"sh", "-c", "echo $$ > pid; exec sleep 60"}}, "")
		callDone <- err
	}()
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("run_process never started its process")
		}
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			fmt.Sscan(string(b), &pid)
		}
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	syscall.Kill(-pid, syscall.SIGKILL) // the orphaned process group
	if err := <-callDone; err == nil {
		t.Fatal("the cut-off call got an answer")
	}

	srv2 := startServe(t, "--data-dir", data)
	var summary struct {
		Session struct {
			Counters workflow.Counters `json:"counters"`
		} `json:"session"`
		OutcomeUnknown struct {
			Total int                    `json:"total"`
			Tools []string               `json:"tools"`
			Items []workflow.UnknownCall `json:"items"`
		} `json:"outcome_unknown"`
	}
	call(t, srv2.base, "session_summary", map[string]any{"session_id": start.SessionID}, &summary)
	u := summary.OutcomeUnknown
	if u.Total != 1 || len(u.Tools) != 1 || u.Tools[0] != "run_process" || len(u.Items) != 1 || u.Items[0].Outcome != workflow.OutcomeUnknown ||
		u.Items[0].StartedAt.IsZero() {
		t.Fatalf("session_summary outcome_unknown %+v", u)
	}
	if c := summary.Session.Counters; c.ToolCalls != 2 || c.ToolFailures != 1 {
		t.Fatalf("counters %+v, want the cut-off call counted once (2 calls, 1 failure)", c)
	}
	var handoffOut struct {
		Brief struct {
			Progress struct {
				MayHaveChanged struct {
					Total int `json:"total"`
					Items []struct {
						Tool, Outcome, At, StartedAt string
					} `json:"items"`
				} `json:"may_have_changed"`
			} `json:"progress"`
			NextActions []string `json:"next_actions"`
		} `json:"handoff_brief"`
	}
	call(t, srv2.base, "session_handoff_summary", map[string]any{"session_id": start.SessionID}, &handoffOut)
	m := handoffOut.Brief.Progress.MayHaveChanged
	if m.Total != 1 || len(m.Items) != 1 || m.Items[0].Tool != "run_process" || m.Items[0].Outcome != "outcome_unknown" || m.Items[0].At == "" {
		t.Fatalf("handoff may_have_changed %+v", m)
	}
	var fin struct {
		Advisories []string `json:"advisories"`
		Counts     struct {
			OutcomeUnknown int `json:"outcome_unknown_calls"`
			Unexpected     int `json:"tool_failures_unexpected"`
		} `json:"counts"`
	}
	call(t, srv2.base, "finish_coding_task", map[string]any{"project": "agent:local:demo", "session_id": start.SessionID}, &fin)
	if !slices.Contains(fin.Advisories, "outcome_unknown_calls") || fin.Counts.OutcomeUnknown != 1 || fin.Counts.Unexpected != 1 {
		t.Fatalf("finish_coding_task advisories %v counts %+v", fin.Advisories, fin.Counts)
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("the staging file survived the restart: %v", err)
	}
	if _, err := os.Stat(lookalike); err != nil {
		t.Errorf("a file that only looks like a staging file was removed: %v", err)
	}
	stop(t, srv2)
	// A further start adds nothing.
	srv3 := startServe(t, "--data-dir", data)
	call(t, srv3.base, "session_summary", map[string]any{"session_id": start.SessionID}, &summary)
	if summary.OutcomeUnknown.Total != 1 {
		t.Fatalf("after another start session_summary shows %d unknown-outcome calls, want 1", summary.OutcomeUnknown.Total)
	}
	stop(t, srv3)

	st, err := workflowdb.Open(ctx, filepath.Join(data, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, start.SessionID, 0)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var runStarted workflow.Event
	var recovered []workflow.Event
	for _, e := range evs {
		if e.Tool != "run_process" {
			continue
		}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			runStarted = e
		case workflow.EventToolCallFinished:
			recovered = append(recovered, e)
		}
	}
	if runStarted.CallID == "" || len(recovered) != 1 {
		t.Fatalf("ledger: started %+v, %d finishes, want exactly one", runStarted, len(recovered))
	}
	if f := recovered[0]; f.CallID != runStarted.CallID || f.InvocationID != runStarted.InvocationID || f.Outcome != workflow.OutcomeUnknown ||
		f.ErrorKind != "outcome_unknown" || f.Facts[workflow.FactRecovery] != workflow.RecoveryServerStart || f.Facts[workflow.FactRecoveredAt] == "" {
		t.Fatalf("recovered finish %+v for started %+v", f, runStarted)
	}

	rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil || !rep.Clean {
		t.Fatalf("evidence verify after recovery: %v %+v", err, rep.Totals)
	}
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := j.SessionRecords(ctx, start.SessionID, 100)
	j.Close()
	if err != nil {
		t.Fatal(err)
	}
	var found []evidence.Record
	for _, e := range entries {
		if e.Record.InvocationID == runStarted.InvocationID {
			found = append(found, e.Record)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d evidence records for the cut-off invocation %s, want 1", len(found), runStarted.InvocationID)
	}
	if r := found[0]; r.Outcome != evidence.OutcomeUnknown || r.Binding != evidence.BindingUnknown || r.Tool != "run_process" ||
		r.Claim.BusinessSessionID != start.SessionID || r.Claim.RecordingSessionID != "" || !r.At.Equal(runStarted.At) || r.ArgumentsDigest != "" {
		t.Fatalf("evidence record of the cut-off call %+v", r)
	}
}
