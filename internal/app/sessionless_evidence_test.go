package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestSessionlessEvidenceBehind: the evidence of calls recorded in no
// session (decision 0043). A refused read's record is there for a journal
// reader as soon as the call is answered; sequential sessionless reads are
// committed lazily, several to a commit, with no durable commit for them;
// a sessionless mutating call's record is durably committed before its
// answer; and Close right after sessionless reads keeps every record.
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
		w := a.Evidence.DB().Writer
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

	// Sequential sessionless reads: every record written, lazily, in fewer
	// commits than reads.
	const n = 20
	c0, n0, l0 := stats()
	for range n {
		if res := dispatch("read_files", read, ""); !res.Success {
			t.Fatalf("read_files: %+v", res.Error)
		}
	}
	a.WaitEvidence()
	c1, n1, l1 := stats()
	if n1-n0 != n || c1-c0 >= n || c1-c0 != l1-l0 {
		t.Fatalf("%d sessionless reads: %d appends in %d commits, %d of them lazy; want %d appends in fewer, all lazy commits",
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
	c2, _, l2 := stats()
	if res := dispatch("write_project_file", map[string]any{"project": "agent:local:p", "path": "w.txt", "content": "x\n"}, ""); !res.Success {
		t.Fatalf("write_project_file: %+v", res.Error)
	}
	c3, _, l3 := stats()
	var writes int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM records WHERE tool = 'write_project_file' AND session_binding = ?`, string(evidence.BindingSessionless)).Scan(&writes); err != nil {
		t.Fatal(err)
	}
	if durable := (c3 - l3) - (c2 - l2); durable != 1 || writes != 1 {
		t.Fatalf("a sessionless write: %d durable commits and %d records before its answer, want 1 and 1", durable, writes)
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
