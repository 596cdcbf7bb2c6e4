package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/kernel"
)

// TestVerifyCountsTheOutboxLeftByACrash: a server killed after the ledger
// acknowledged a call but before the journal took its evidence record
// leaves the record in workflow.db's outbox. The offline verify reports it
// as pending (not as a finding), writes nothing, and after the next start
// the record is in the journal and nothing is pending.
func TestVerifyCountsTheOutboxLeftByACrash(t *testing.T) {
	ctx := context.Background()
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, dir, "p="+root)
	outputOf(t, a, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "write"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := app.VerifyJournal(ctx, app.Config{DataDir: dir}, evidence.VerifyOptions{})
	if err != nil || rep.OutboxPending != 0 {
		t.Fatalf("after a graceful close: %d pending (%v), want 0", rep.OutboxPending, err)
	}

	left := leaveOutboxRow(t, dir)

	rows := func() int64 { return count(t, dir, app.WorkflowDB, `SELECT COUNT(*) FROM evidence_outbox`) }
	before := rows()
	rep, err = app.VerifyJournal(ctx, app.Config{DataDir: dir}, evidence.VerifyOptions{})
	if err != nil || rep.OutboxPending != 1 || !rep.Clean {
		t.Fatalf("after the crash: %d pending, clean %v (%v), want 1 pending and a clean journal", rep.OutboxPending, rep.Clean, err)
	}
	if after := rows(); after != before {
		t.Fatalf("verify changed the outbox: %d rows, then %d", before, after)
	}
	again, err := app.VerifyJournal(ctx, app.Config{DataDir: dir}, evidence.VerifyOptions{})
	if err != nil || again.Records != rep.Records {
		t.Fatalf("verify changed the journal: %d records, then %d (%v)", rep.Records, again.Records, err)
	}

	// The next start journals it.
	b := openApp(t, dir)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := app.VerifyJournal(ctx, app.Config{DataDir: dir}, evidence.VerifyOptions{})
	if err != nil || after.OutboxPending != 0 || !after.Clean || after.Records != rep.Records+1 {
		t.Fatalf("after the restart: %d records (was %d), %d pending, clean %v (%v); want the pending one journaled and a clean journal",
			after.Records, rep.Records, after.OutboxPending, after.Clean, err)
	}
	if n := count(t, dir, app.EvidenceDB, `SELECT COUNT(*) FROM records WHERE invocation_id = ?`, left); n != 1 {
		t.Fatalf("records of %s in the journal: %d, want 1", left, n)
	}
}

// TestOfflineJournalTakesTheOutbox: an offline command's journal
// (app.OpenJournal, behind `webcodex evidence export|list|checkpoint` and
// the handoff brief) journals the record a killed server left in the
// outbox before it reads, leaves the ledger as it was, and the next start
// does not journal it twice.
func TestOfflineJournalTakesTheOutbox(t *testing.T) {
	ctx := context.Background()
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, dir, "p="+root)
	sess := outputOf(t, a, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "read"})["session_id"].(string)
	raw, _ := json.Marshal(map[string]any{"project": "agent:local:p", "files": []any{map[string]any{"path": "a.txt"}}})
	if res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: "read_files", Arguments: raw, RecordingSessionID: sess,
		Principal: auth.LocalUser(), Source: kernel.SourceInternal}); !res.Success {
		t.Fatalf("read_files: %+v", res.Error)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	left := leaveOutboxRow(t, dir) // the read's record, recorded in sess
	outbox := count(t, dir, app.WorkflowDB, `SELECT COUNT(*) FROM evidence_outbox`)
	records := count(t, dir, app.EvidenceDB, `SELECT COUNT(*) FROM records`)

	j, skipped, err := app.OpenJournal(ctx, app.Config{DataDir: dir})
	if err != nil || skipped != nil {
		t.Fatalf("open: %v (skipped %v)", err, skipped)
	}
	es, err := j.SessionRecords(ctx, sess, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.Record.InvocationID)
	}
	if !slices.Contains(ids, left) {
		t.Fatalf("the session's records %v do not include the outbox's %s", ids, left)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, dir, app.WorkflowDB, `SELECT COUNT(*) FROM evidence_outbox`); n != outbox {
		t.Fatalf("the offline journal changed the outbox: %d rows, then %d", outbox, n)
	}
	rep, err := app.VerifyJournal(ctx, app.Config{DataDir: dir}, evidence.VerifyOptions{})
	if err != nil || rep.OutboxPending != 0 || !rep.Clean || rep.Records != records+1 {
		t.Fatalf("after the offline open: %d records (was %d), %d pending, clean %v (%v)", rep.Records, records, rep.OutboxPending, rep.Clean, err)
	}

	b := openApp(t, dir)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, dir, app.EvidenceDB, `SELECT COUNT(*) FROM records WHERE invocation_id = ?`, left); n != 1 {
		t.Fatalf("records of %s after the next start: %d, want 1", left, n)
	}
}

// leaveOutboxRow leaves in dir's workflow.db what a kill -9 between the
// ledger's commit and the pump leaves: one more outbox row, the record of
// a call the journal never saw (the newest row's record under a new
// invocation id, which it returns).
func leaveOutboxRow(t *testing.T, dir string) string {
	t.Helper()
	wf, err := sql.Open("sqlite", "file:"+filepath.Join(dir, app.WorkflowDB))
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	var body []byte
	if err := wf.QueryRow(`SELECT body FROM evidence_outbox ORDER BY seq DESC LIMIT 1`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		InvocationID string `json:"invocation_id"`
	}
	if err := json.Unmarshal(body, &rec); err != nil || rec.InvocationID == "" {
		t.Fatalf("outbox body %s: %v", body, err)
	}
	left := rec.InvocationID[:len(rec.InvocationID)-8] + "00c0ffee" // same form, another id
	body = bytes.Replace(body, []byte(rec.InvocationID), []byte(left), 1)
	if _, err := wf.Exec(`INSERT INTO evidence_outbox (body) VALUES (?)`, body); err != nil {
		t.Fatal(err)
	}
	return left
}

// count runs the counting query q on the database file name in dir,
// read-only.
func count(t *testing.T, dir, name, q string, args ...any) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, name)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
