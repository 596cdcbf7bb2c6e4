package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/workflow"
)

// generatedRow returns session i of a generated ledger: a closed session of
// project agent:local:demo holding all its events (n >= 2).
func generatedRow(i, n int) workflow.LedgerRow {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	closed := at.Add(time.Duration(n) * time.Second)
	s := workflow.Session{
		ID:               fmt.Sprintf("wc_sess_%032x", i+1),
		Project:          "agent:local:demo",
		Title:            fmt.Sprintf("Generated task %d", i),
		Mode:             workflow.ModeNormal,
		Lifecycle:        workflow.Closed,
		OwnerFingerprint: auth.Fingerprint("local"),
		CreatedAt:        at,
		UpdatedAt:        closed,
		ClosedAt:         &closed,
		EventsObserved:   int64(n),
	}
	evs := make([]workflow.Event, 0, n)
	add := func(e workflow.Event) {
		e.Seq = int64(len(evs) + 1)
		e.At = at.Add(time.Duration(e.Seq) * time.Second)
		evs = append(evs, e)
	}
	add(workflow.Event{Kind: workflow.EventSessionCreated, Facts: map[string]string{"mode": "normal"}})
	add(workflow.Event{Kind: workflow.EventTaskInstruction, Text: s.Title})
	s.Counters.Instructions = 1
	for len(evs) < n {
		call := fmt.Sprintf("call_%08d_%06d", i, len(evs))
		if len(evs)%2 == 0 {
			add(workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: call, InvocationID: "inv_" + call, Role: workflow.RoleRecorder})
			s.Counters.ToolCalls++
			continue
		}
		add(workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: call, InvocationID: "inv_" + call,
			Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK, DurationMS: 3,
			ObservedPaths: []string{"internal/workflow/ledger.go", "cmd/webcodex/session.go"}})
	}
	return workflow.LedgerRow{Session: s, Events: evs}
}

// writeGeneratedLedger writes a version-2 ledger of sessions generated rows
// of n events each to path, one row at a time and indented as export writes
// it.
func writeGeneratedLedger(t *testing.T, path string, sessions, n int) {
	t.Helper()
	writeLedgerRows(t, path, sessions, func(i int) workflow.LedgerRow { return generatedRow(i, n) })
}

// writeLedgerRows writes a version-2 ledger of count rows made by row.
func writeLedgerRows(t *testing.T, path string, count int, row func(i int) workflow.LedgerRow) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "{\n  \"version\": %d,\n  \"kind\": %q,\n  \"exported_at\": \"2026-03-02T00:00:00Z\",\n  \"sessions\": [", workflow.LedgerVersion, workflow.LedgerKind)
	for i := range count {
		b, err := json.MarshalIndent(row(i), "    ", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n    ")
		w.Write(b)
	}
	w.WriteString("\n  ]\n}\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// countRows counts the session and event rows in the data directory's
// workflow.db, read with SQL directly rather than through the store.
func countRows(t *testing.T, data string) (sessions, events int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "workflow.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM events)`).Scan(&sessions, &events); err != nil {
		t.Fatal(err)
	}
	return sessions, events
}
