package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/evidence"
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
	rep, err := app.VerifyJournal(ctx, dir, evidence.VerifyOptions{})
	if err != nil || rep.OutboxPending != 0 {
		t.Fatalf("after a graceful close: %d pending (%v), want 0", rep.OutboxPending, err)
	}

	// What a kill -9 between the ledger's commit and the pump leaves: one
	// more outbox row, the record of a call the journal never saw (the
	// kept newest row's record under a new invocation id).
	wf, err := sql.Open("sqlite", "file:"+filepath.Join(dir, app.WorkflowDB))
	if err != nil {
		t.Fatal(err)
	}
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
	wf.Close()

	rows := func() (outbox int64) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, app.WorkflowDB)+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT COUNT(*) FROM evidence_outbox`).Scan(&outbox); err != nil {
			t.Fatal(err)
		}
		return outbox
	}
	before := rows()
	rep, err = app.VerifyJournal(ctx, dir, evidence.VerifyOptions{})
	if err != nil || rep.OutboxPending != 1 || !rep.Clean {
		t.Fatalf("after the crash: %d pending, clean %v (%v), want 1 pending and a clean journal", rep.OutboxPending, rep.Clean, err)
	}
	if after := rows(); after != before {
		t.Fatalf("verify changed the outbox: %d rows, then %d", before, after)
	}
	again, err := app.VerifyJournal(ctx, dir, evidence.VerifyOptions{})
	if err != nil || again.Records != rep.Records {
		t.Fatalf("verify changed the journal: %d records, then %d (%v)", rep.Records, again.Records, err)
	}

	// The next start journals it.
	b := openApp(t, dir)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := app.VerifyJournal(ctx, dir, evidence.VerifyOptions{})
	if err != nil || after.OutboxPending != 0 || !after.Clean || after.Records != rep.Records+1 {
		t.Fatalf("after the restart: %d records (was %d), %d pending, clean %v (%v); want the pending one journaled and a clean journal",
			after.Records, rep.Records, after.OutboxPending, after.Clean, err)
	}
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, app.EvidenceDB)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM records WHERE invocation_id = ?`, left).Scan(&n); err != nil || n != 1 {
		t.Fatalf("records of %s in the journal: %d (%v), want 1", left, n, err)
	}
}
