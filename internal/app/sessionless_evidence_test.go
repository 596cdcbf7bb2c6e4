package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// TestSessionlessEvidenceBehind: the evidence of calls recorded in no
// session (decision 0043). A refused read's record is there for a journal
// reader as soon as the call is answered; sequential sessionless reads'
// records go into the ledger's outbox behind their answers, lazily,
// several to a commit, numbered among the process's reads; a sessionless
// mutating call's record is in the journal, durably, before its answer;
// an invalid record is counted and refused; and Close right after
// sessionless reads keeps every record.
func TestSessionlessEvidenceBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openApp(t, dir, "p="+rawProjectDir(t))
	dispatch := func(tool string, args map[string]any, recorder string) kernel.Result {
		t.Helper()
		raw, _ := json.Marshal(args)
		return a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	}
	read := map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}}
	stats := func() (commits, jobs, lazy int64) {
		w := a.Stores.Workflow.(*workflowdb.Store).DB().Writer
		commits, jobs = w.Stats()
		return commits, jobs, w.LazyCommits()
	}
	head0, err := a.Evidence.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// A read claiming a session that was never registered is refused and
	// recorded in no session; a reader asking at once finds its record.
	forged := workflow.NewSessionID()
	if res := dispatch("read_files", read, forged); res.Success {
		t.Fatalf("a read claiming an unregistered session succeeded: %s", res.Body)
	}
	recs, err := a.Evidence.SessionRecords(ctx, forged, 0)
	if err != nil || len(recs) != 1 || recs[0].Record.Tool != "read_files" || recs[0].Record.Binding != evidence.BindingInvalidClaim {
		t.Fatalf("records of the refused read right after its answer: %+v (%v)", recs, err)
	}

	// Sequential sessionless reads: every record queued in the ledger's
	// outbox, lazily, in fewer commits than reads, then journaled.
	const n = 20
	c0, n0, l0 := stats()
	for range n {
		if res := dispatch("read_files", read, ""); !res.Success {
			t.Fatalf("read_files: %+v", res.Error)
		}
	}
	if err := a.WaitEvidence(); err != nil {
		t.Fatal(err)
	}
	c1, n1, l1 := stats()
	// The ledger's writer also carries the pump's outbox trims (behind).
	if n1-n0 < n || c1-c0 >= n || c1-c0 != l1-l0 {
		t.Fatalf("%d sessionless reads: %d ledger writes in %d commits, %d of them lazy; want at least %d writes in fewer, all lazy commits",
			n, n1-n0, c1-c0, l1-l0, n)
	}
	if head, err := a.Evidence.Head(ctx); err != nil || head.Size != head0.Size+1+n {
		t.Fatalf("head %d (%v), want %d", head.Size, err, head0.Size+1+n)
	}

	// A sessionless mutating call: a durable commit of its record before
	// the answer, visible to another connection without any reader's
	// flush.
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, app.EvidenceDB))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if res := dispatch("write_project_file", map[string]any{"project": "agent:local:p", "path": "w.txt", "content": "x\n"}, ""); !res.Success {
		t.Fatalf("write_project_file: %+v", res.Error)
	}
	var writes int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM records WHERE tool = 'write_project_file' AND session_binding = ?`, string(evidence.BindingSessionless)).Scan(&writes); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Fatalf("a sessionless write: %d records in the journal before its answer, want 1", writes)
	}

	// A record the journal would refuse is counted and refused before it
	// is queued.
	failures := a.EvidenceFailures()
	bad := kernel.Record{InvocationID: "inv_bad", At: time.Now(), Source: kernel.SourceInternal,
		Binding: kernel.Binding{State: evidence.BindingSessionless, Reasons: []evidence.Reason{evidence.ReasonNoRecorderRequested}},
		Outcome: evidence.OutcomeOK}
	if err := a.RecordEvidence(ctx, bad); failure.KindOf(err) != failure.InvalidArguments {
		t.Fatalf("a record without a tool: %v, want invalid_arguments", err)
	}
	if got := a.EvidenceFailures(); got != failures+1 {
		t.Fatalf("failures %d after an invalid record, want %d", got, failures+1)
	}

	// Close right after more sessionless reads: every record is kept.
	for range n {
		if res := dispatch("read_files", read, ""); !res.Success {
			t.Fatalf("read_files: %+v", res.Error)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	j, err := evidencedb.Open(ctx, dir, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if head, err := j.Head(ctx); err != nil || head.Size != head0.Size+1+n+1+n {
		t.Fatalf("after close and reopen: head %d (%v), want %d", head.Size, err, head0.Size+1+n+1+n)
	}
}
