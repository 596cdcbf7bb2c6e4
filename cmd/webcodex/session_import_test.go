package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
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

// rowLine returns the line of path on which the ledger row of session id
// begins (its '{'), found by reading the file: export indents a row so that
// its session_id is the first member, on the line after the brace.
func rowLine(t *testing.T, path, id string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"session_id": "`+id+`"`))
	if i < 0 {
		t.Fatalf("%s not in %s", id, path)
	}
	line := 1 + bytes.Count(b[:i], []byte("\n")) - 1
	if !bytes.HasSuffix(bytes.TrimRight(b[:bytes.LastIndexByte(b[:i], '\n')], " "), []byte("{")) {
		t.Fatalf("row %s does not open on the line before its session_id", id)
	}
	return line
}

// importFixture is a data directory where agent:local:demo is registered and
// one session was imported, with its row counts.
func importFixture(t *testing.T) (data string, sessions, events int) {
	t.Helper()
	data = t.TempDir()
	mustRun(t, "--data-dir", data, "project", "add", "demo="+t.TempDir())
	first := filepath.Join(t.TempDir(), "first.json")
	writeLedgerRows(t, first, 1, func(int) workflow.LedgerRow { return generatedRow(1000, 6) })
	if out := mustRun(t, "--data-dir", data, "session", "import", first); !strings.Contains(out, "Imported 1 session(s).") {
		t.Fatalf("fixture import: %s", out)
	}
	sessions, events = countRows(t, data)
	if sessions != 1 || events != 6 {
		t.Fatalf("fixture holds %d sessions, %d events", sessions, events)
	}
	return data, sessions, events
}

// TestImportRefusesBadRowsAndWritesNothing imports, into a data directory
// that already holds a session, ledgers whose first rows are valid and
// whose third row is bad, and requires the exact kind, an error naming that
// row's line, and workflow.db unchanged (the valid rows are not imported
// either).
func TestImportRefusesBadRowsAndWritesNothing(t *testing.T) {
	cases := map[string]struct {
		bad  func(r *workflow.LedgerRow)
		kind failure.Kind
		msg  string
	}{
		"ErrUnregisteredProject": {
			func(r *workflow.LedgerRow) { r.Project = "agent:local:elsewhere" },
			failure.UnknownProject, `project "agent:local:elsewhere" is not registered`,
		},
		"ErrEventsObservedContradicted": {
			func(r *workflow.LedgerRow) { r.EventsObserved += 3 }, // retention_truncated stays false
			failure.InvalidLedger, "events_observed is 13 but 10 events are retained and retention_truncated is false",
		},
		"ErrEventMissingUntruncated": {
			func(r *workflow.LedgerRow) { r.Events = append(r.Events[:4:4], r.Events[5:]...) },
			failure.InvalidLedger, "events_observed is 10 but 9 events are retained",
		},
		"ErrTruncatedClaimWithAllEvents": {
			func(r *workflow.LedgerRow) { r.RetentionTruncated = true },
			failure.InvalidLedger, "retention_truncated is true but all 10 observed events are retained",
		},
		"ErrSessionExists": {
			func(r *workflow.LedgerRow) { r.ID = fmt.Sprintf("wc_sess_%032x", 1001) }, // the fixture's session
			failure.Conflict, "already exists",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			data, sessions, events := importFixture(t)
			ledger := filepath.Join(t.TempDir(), "ledger.json")
			var badID string
			writeLedgerRows(t, ledger, 4, func(i int) workflow.LedgerRow {
				r := generatedRow(i, 10)
				if i == 2 {
					c.bad(&r)
					badID = r.ID
				}
				return r
			})
			out, err := run(t, "--data-dir", data, "session", "import", ledger)
			if failure.KindOf(err) != c.kind {
				t.Fatalf("got %v (%s), want kind %s", err, out, c.kind)
			}
			where := fmt.Sprintf("ledger line %d (row 3, session %s)", rowLine(t, ledger, badID), badID)
			if !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q does not name %q and say %q", err, where, c.msg)
			}
			if strings.Contains(out, "Imported") {
				t.Fatalf("a refused import reported success: %s", out)
			}
			if s, e := countRows(t, data); s != sessions || e != events {
				t.Fatalf("workflow.db holds %d sessions, %d events after a refused import; before %d, %d", s, e, sessions, events)
			}
		})
	}
}

// TestImportRedactsLikeLiveWrites imports a session whose title, instruction,
// facts and paths hold credentials, and requires them stored exactly as
// live writes store the same values (same title, same events), with no
// credential anywhere in the data directory.
func TestImportRedactsLikeLiveWrites(t *testing.T) {
	ctx := context.Background()
	pat := "wc_pat_" + strings.Repeat("Z9", 20)
	gh := "ghp_" + strings.Repeat("a1B2", 10)
	instruction := "Deploy using " + pat + " and token=hunter2hunter2"
	finished := workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", CallID: "call_1", InvocationID: "inv_1",
		Role: workflow.RoleRecorder, Outcome: workflow.OutcomeFailed, ErrorKind: "command_failed",
		Facts:         map[string]string{"command": "curl -H 'Authorization: Bearer " + gh + "'"},
		ObservedPaths: []string{"notes/" + gh + ".txt"}}

	// Live: the same values through the service and store.
	liveData := t.TempDir()
	st, err := app.OpenStores(ctx, app.Config{DataDir: liveData})
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st.Workflow, nil)
	live, err := svc.Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: instruction})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Append(ctx, live.ID, finished); err != nil {
		t.Fatal(err)
	}
	live, _ = svc.Get(ctx, live.ID)
	liveEvents, _ := st.Workflow.Events(ctx, live.ID, 0)
	st.Close()

	// Imported: a row holding the raw values.
	row := generatedRow(7, 2)
	row.Title = instruction
	row.Events[1].Text = instruction
	f := finished
	f.Seq, f.At = 3, row.Events[1].At.Add(time.Second)
	row.Events = append(row.Events, f)
	row.EventsObserved = 3
	ledger := filepath.Join(t.TempDir(), "ledger.json")
	writeLedgerRows(t, ledger, 1, func(int) workflow.LedgerRow { return row })
	if raw, _ := os.ReadFile(ledger); !bytes.Contains(raw, []byte(pat)) || !bytes.Contains(raw, []byte(gh)) {
		t.Fatal("the ledger does not hold the credentials under test")
	}
	data := t.TempDir()
	mustRun(t, "--data-dir", data, "project", "add", "demo="+t.TempDir())
	mustRun(t, "--data-dir", data, "session", "import", ledger)

	var got struct {
		Session workflow.Session
		Events  []workflow.Event
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "session", "show", row.ID, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Session.Title != live.Title || !strings.Contains(got.Session.Title, "[REDACTED]") {
		t.Fatalf("imported title %q, live title %q", got.Session.Title, live.Title)
	}
	if len(got.Events) != 3 || len(liveEvents) != 3 {
		t.Fatalf("events: imported %d, live %d", len(got.Events), len(liveEvents))
	}
	for i := range got.Events {
		g, l := got.Events[i], liveEvents[i]
		g.At, l.At = time.Time{}, time.Time{}
		gj, _ := json.Marshal(g)
		lj, _ := json.Marshal(l)
		if !bytes.Equal(gj, lj) {
			t.Errorf("event %d: imported %s\n live %s", i+1, gj, lj)
		}
	}
	filepath.Walk(data, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			for _, secret := range []string{pat, gh, "hunter2hunter2"} {
				if bytes.Contains(b, []byte(secret)) {
					t.Errorf("%s holds %q", filepath.Base(p), secret)
				}
			}
		}
		return nil
	})
}
