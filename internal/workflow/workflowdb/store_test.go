package workflowdb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

const proj = "agent:local:demo"

var owner = auth.Fingerprint("local")

func open(t testing.TB, path string) *workflowdb.Store {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func start(t testing.TB, svc *workflow.Service) workflow.Session {
	t.Helper()
	s, err := svc.Start(context.Background(), workflow.StartParams{Project: proj, Fingerprint: owner, Instruction: "fix the flaky test"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	if !strings.HasPrefix(s.ID, workflow.SessionIDPrefix) || s.EventsObserved != 2 || s.Counters.Instructions != 1 {
		t.Fatalf("unexpected new session: %+v", s)
	}
	if _, err := svc.Continue(ctx, s.ID, "now also update the docs", ""); err != nil {
		t.Fatal(err)
	}
	closed, changed, err := svc.Close(ctx, s.ID)
	if err != nil || !changed || closed.Lifecycle != workflow.Closed || closed.ClosedAt == nil {
		t.Fatalf("close: %+v changed=%v err=%v", closed, changed, err)
	}
	again, changed, err := svc.Close(ctx, s.ID)
	if err != nil || changed {
		t.Fatalf("second close: changed=%v err=%v", changed, err)
	}
	if again.EventsObserved != closed.EventsObserved {
		t.Fatalf("idempotent close appended: got %d events, want %d", again.EventsObserved, closed.EventsObserved)
	}
	if _, err := svc.Continue(ctx, s.ID, "more", ""); failure.KindOf(err) != failure.SessionClosed {
		t.Fatalf("continue closed: got %v, want session_closed", err)
	}
	_, evs, err := svc.Summary(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []workflow.EventKind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	want := []workflow.EventKind{workflow.EventSessionCreated, workflow.EventTaskInstruction, workflow.EventTaskInstruction, workflow.EventSessionClosed}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("event kinds (-want +got):\n%s", diff)
	}
}

func TestClaimCheck(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	ro, err := svc.Start(ctx, workflow.StartParams{Project: proj, Fingerprint: owner, Instruction: "look only", Mode: workflow.ModeReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	closed := start(t, svc)
	svc.Close(ctx, closed.ID)

	cases := []struct {
		name string
		id   string
		c    workflow.Check
		want failure.Kind
	}{
		{"OK", s.ID, workflow.Check{Fingerprint: owner, Project: proj, Mutate: true, Write: true}, ""},
		{"ErrMalformed", "wc_sess_XYZ", workflow.Check{Fingerprint: owner}, failure.InvalidSessionID},
		{"ErrUnknown", workflow.NewSessionID(), workflow.Check{Fingerprint: owner}, failure.UnknownSessionID},
		{"ErrForeign", s.ID, workflow.Check{Fingerprint: auth.Fingerprint("mallory"), Project: proj}, failure.SessionAuthorityDenied},
		{"ErrProject", s.ID, workflow.Check{Fingerprint: owner, Project: "agent:local:other"}, failure.SessionProjectMismatch},
		{"ErrClosed", closed.ID, workflow.Check{Fingerprint: owner, Mutate: true}, failure.SessionClosed},
		{"ClosedReadOK", closed.ID, workflow.Check{Fingerprint: owner}, ""},
		{"ErrReadOnlyWrite", ro.ID, workflow.Check{Fingerprint: owner, Mutate: true, Write: true}, failure.SessionGuardDenied},
		{"ReadOnlyReadOK", ro.ID, workflow.Check{Fingerprint: owner, Mutate: true}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := svc.ReadClaim(ctx, tc.id).Check(tc.c).Error()
			if got := failure.KindOf(err); got != tc.want {
				t.Fatalf("got %q, want %q (%v)", got, tc.want, err)
			}
		})
	}
	// Every failing reason is reported, not just the first.
	v := svc.ReadClaim(ctx, closed.ID).Check(workflow.Check{Fingerprint: auth.Fingerprint("x"), Project: "agent:local:other", Mutate: true})
	want := []evidence.Reason{evidence.ReasonSessionClosed, evidence.ReasonAuthorityMismatch, evidence.ReasonProjectMismatch}
	if diff := cmp.Diff(want, v.Reasons); diff != "" {
		t.Fatalf("reasons (-want +got):\n%s", diff)
	}
	// One read judged under two checks gives each its own keys.
	c := svc.ReadClaim(ctx, ro.ID)
	rec := c.Check(workflow.Check{Fingerprint: owner, Project: proj, Mutate: true})
	bus := c.Check(workflow.Check{Fingerprint: owner, Mutate: true, Write: true})
	if !rec.Verified() || bus.Verified() || bus.Kind() != failure.SessionGuardDenied {
		t.Fatalf("recorder %+v, business %+v", rec, bus)
	}
	wantKeys := []evidence.CheckKey{evidence.KeyRegistration, evidence.KeyAuthority, evidence.KeyLifecycle, evidence.KeyGuard}
	if diff := cmp.Diff(wantKeys, bus.Checked); diff != "" {
		t.Fatalf("business checked keys (-want +got):\n%s", diff)
	}
}

func TestTailRetention(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st := open(t, path)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	// Append past the bound in batches.
	extra := workflow.TailLimit + 37
	batch := make([]workflow.Event, 0, 100)
	for i := 0; i < extra; i++ {
		batch = append(batch, workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: fmt.Sprint("c", i)})
		if len(batch) == cap(batch) || i == extra-1 {
			if _, _, err := svc.Append(ctx, s.ID, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	got, evs, err := svc.Summary(ctx, s.ID, workflow.SummaryMax+10)
	if err != nil {
		t.Fatal(err)
	}
	if got.EventsObserved != int64(extra+2) || !got.RetentionTruncated {
		t.Fatalf("events_observed=%d truncated=%v, want %d true", got.EventsObserved, got.RetentionTruncated, extra+2)
	}
	if len(evs) != workflow.SummaryMax {
		t.Fatalf("summary returned %d events, want the cap %d", len(evs), workflow.SummaryMax)
	}
	all, err := st.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != workflow.TailLimit || all[0].Seq != got.EventsObserved-workflow.TailLimit+1 || all[len(all)-1].Seq != got.EventsObserved {
		t.Fatalf("retained %d events seq %d..%d, want %d ending at %d", len(all), all[0].Seq, all[len(all)-1].Seq, workflow.TailLimit, got.EventsObserved)
	}
	if _, def, _ := svc.Summary(ctx, s.ID, 0); len(def) != workflow.SummaryDefault {
		t.Fatalf("default summary %d events, want %d", len(def), workflow.SummaryDefault)
	}
	status, _ := st.Status(ctx)
	if status.Events != workflow.TailLimit {
		t.Fatalf("status events %d, want %d", status.Events, workflow.TailLimit)
	}
}

func TestRestoreExactAndDiscardsMalformed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st, err := workflowdb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st, nil)
	good := start(t, svc)
	svc.Append(ctx, good.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK,
		ObservedPaths: []string{"a.go", "b/c.go"}, Facts: map[string]string{"files": "2"}})
	victim := start(t, svc)
	before, _ := workflow.Export(ctx, st, []string{good.ID}, good.CreatedAt)
	// Corrupt one header and one event of another session behind the store's back.
	db := st.DB()
	if _, err := db.Read.Exec(`UPDATE sessions SET header_json = '{"session_id":"`+victim.ID+`","mode":"inspect"}' WHERE session_id = ?`, victim.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Read.Exec(`UPDATE events SET kind = 'bogus' WHERE session_id = ? AND seq = 1`, good.ID); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2 := open(t, path)
	// Open reads no row: nothing is found or moved yet.
	if rep := st2.Restored(); rep != (workflowdb.RestoreReport{}) {
		t.Fatalf("open checked rows: %+v", rep)
	}
	if status, _ := st2.Status(ctx); status.DiscardedRows != 0 || status.Sessions != 2 {
		t.Fatalf("status at open %+v, want 2 sessions and 0 discarded", status)
	}
	// First use of victim: its header and its 2 events are moved aside.
	if _, err := st2.Get(ctx, victim.ID); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("discarded session served: %v", err)
	}
	if status, _ := st2.Status(ctx); status.DiscardedRows != 3 || status.Sessions != 1 {
		t.Fatalf("status after first use of the victim %+v, want 1 session and 3 discarded", status)
	}
	after, err := workflow.Export(ctx, st2, []string{good.ID}, good.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	// good: its corrupted event is moved aside at its first use.
	rep := st2.Restored()
	if rep.Discarded != 4 || rep.Sessions != 1 || rep.Events != int64(len(before.Sessions[0].Events)-1) {
		t.Fatalf("check report %+v, want 4 discarded, 1 session, %d events", rep, len(before.Sessions[0].Events)-1)
	}
	status, _ := st2.Status(ctx)
	if status.DiscardedRows != 4 || status.Sessions != 1 || status.Events != int64(len(before.Sessions[0].Events)-1) {
		t.Fatalf("status %+v", status)
	}
	// Every valid row is unchanged: the surviving events equal the originals
	// minus the corrupted first one.
	if diff := cmp.Diff(before.Sessions[0].Events[1:], after.Sessions[0].Events); diff != "" {
		t.Fatalf("valid events changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Sessions[0].Session, after.Sessions[0].Session); diff != "" {
		t.Fatalf("header changed (-before +after):\n%s", diff)
	}
	// A third open finds nothing more to discard, at first use or in a
	// full pass.
	st2.Close()
	st3 := open(t, path)
	if _, err := st3.Events(ctx, good.ID, 0); err != nil {
		t.Fatal(err)
	}
	full, err := st3.ValidateAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st3.Restored().Discarded != 0 || full.Discarded != 0 || full.Sessions != 1 || full.Events != status.Events {
		t.Fatalf("third open discarded %d rows at first use; full pass %+v", st3.Restored().Discarded, full)
	}
	if status, _ := st3.Status(ctx); status.DiscardedRows != 4 {
		t.Fatalf("status after reopen %+v, want the 4 discarded rows still counted", status)
	}
}

// corruptLedger writes a ledger of two sessions, a and b, each with one
// corrupt event row (seq 3, a tool_call_finished), and closes it.
func corruptLedger(t *testing.T) (path string, a, b workflow.Session) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "workflow.db")
	st, err := workflowdb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := workflow.NewService(st, nil)
	a, b = start(t, svc), start(t, svc)
	for _, id := range []string{a.ID, b.ID} {
		if _, _, err := svc.Append(ctx, id, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().Read.Exec(`UPDATE events SET outcome = 'sideways' WHERE session_id = ? AND seq = 3`, id); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	return path, a, b
}

// A corrupt event row is quarantined at the first use of its session,
// whichever call that is, and never returned; status counts it from then on
// and not before.
func TestCorruptEventQuarantinedAtFirstUse(t *testing.T) {
	ctx := context.Background()
	for _, use := range []string{"events", "get", "append"} {
		t.Run(use, func(t *testing.T) {
			path, a, b := corruptLedger(t)
			st := open(t, path)
			svc := workflow.NewService(st, nil)
			if status, _ := st.Status(ctx); status.DiscardedRows != 0 || status.Events != 6 {
				t.Fatalf("status at open %+v, want 6 events and 0 discarded", status)
			}
			switch use {
			case "events":
				evs, err := st.Events(ctx, a.ID, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
					t.Fatalf("events %+v, want seq 1 and 2 only", evs)
				}
			case "get":
				if _, err := st.Get(ctx, a.ID); err != nil {
					t.Fatal(err)
				}
			case "append":
				if _, _, err := svc.Append(ctx, a.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK}); err != nil {
					t.Fatal(err)
				}
			}
			status, _ := st.Status(ctx)
			wantEvents := int64(2 + 3) // a: seq 1, 2 (+4 on append); b: unchecked, 3
			if use == "append" {
				wantEvents++
			}
			if status.DiscardedRows != 1 || status.Events != wantEvents {
				t.Fatalf("status after first use of a %+v, want 1 discarded and %d events", status, wantEvents)
			}
			var reason, body string
			if err := st.DB().Read.QueryRow(`SELECT reason, body FROM discarded_rows WHERE table_name = 'events' AND row_key = ?`, a.ID+"/3").Scan(&reason, &body); err != nil {
				t.Fatalf("quarantined row of a: %v", err)
			}
			if !strings.Contains(reason, "outcome") || !strings.Contains(body, "sideways") {
				t.Fatalf("quarantined row reason %q body %q", reason, body)
			}
			for _, e := range events(t, st, a.ID) {
				if e.Seq == 3 {
					t.Fatalf("quarantined event served: %+v", e)
				}
			}
			// b is untouched until it is used, then counted too.
			if _, err := st.Events(ctx, b.ID, 0); err != nil {
				t.Fatal(err)
			}
			if status, _ := st.Status(ctx); status.DiscardedRows != 2 {
				t.Fatalf("status after first use of b %+v, want 2 discarded", status)
			}
			if rep := st.Restored(); rep.Discarded != 2 || rep.Sessions != 2 {
				t.Fatalf("check report %+v, want 2 sessions and 2 discarded", rep)
			}
		})
	}
}

// List never serves a malformed header and moves it aside when it meets it.
func TestListQuarantinesMalformedHeader(t *testing.T) {
	ctx := context.Background()
	path, a, b := corruptLedger(t)
	st := open(t, path)
	if _, err := st.DB().Read.Exec(`UPDATE sessions SET header_json = '{"session_id":"`+b.ID+`"}' WHERE session_id = ?`, b.ID); err != nil {
		t.Fatal(err)
	}
	got, _, err := st.List(ctx, workflow.ListFilter{Project: proj})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("list served %d sessions, want only %s", len(got), a.ID)
	}
	// b's header and its 3 events are moved aside by the List.
	if status, _ := st.Status(ctx); status.DiscardedRows != 4 || status.Sessions != 1 {
		t.Fatalf("status after list %+v, want 1 session and 4 discarded", status)
	}
	if _, err := st.Get(ctx, b.ID); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("quarantined session served: %v", err)
	}
}

// The full pass (the old restore) and the first-use checks of the same
// ledger move the same rows, and neither counts a row twice.
func TestValidateAllMatchesFirstUse(t *testing.T) {
	ctx := context.Background()
	path, a, b := corruptLedger(t)
	st := open(t, path)
	if _, err := st.Events(ctx, a.ID, 0); err != nil {
		t.Fatal(err)
	}
	full, err := st.ValidateAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a's row was already moved; the pass moves b's.
	if full.Discarded != 1 || full.Sessions != 2 || full.Events != 4 {
		t.Fatalf("full pass %+v, want 2 sessions, 4 events, 1 discarded", full)
	}
	if _, err := st.Events(ctx, b.ID, 0); err != nil {
		t.Fatal(err)
	}
	if status, _ := st.Status(ctx); status.DiscardedRows != 2 || status.Events != 4 {
		t.Fatalf("status %+v, want 2 discarded and 4 events", status)
	}
}

func TestRedactionBeforeWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st := open(t, path)
	svc := workflow.NewService(st, nil)
	secret := "wc_pat_" + strings.Repeat("Zq9", 14)
	s, err := svc.Start(ctx, workflow.StartParams{Project: proj, Fingerprint: owner,
		Instruction: "deploy with token " + secret + " and password=hunter2hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	svc.Append(ctx, s.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Facts: map[string]string{"note": "Authorization: Bearer " + secret}})
	st.Close()
	for _, f := range []string{path, path + "-wal"} {
		b, _ := readFile(f)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), "hunter2hunter2") {
			t.Fatalf("%s contains a planted secret", filepath.Base(f))
		}
	}
}

func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, _, err := svc.Append(ctx, s.ID, workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "t"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, _ := st.Get(ctx, s.ID)
	if got.EventsObserved != 2+writers*each || got.Counters.ToolCalls != writers*each {
		t.Fatalf("events_observed=%d tool_calls=%d, want %d and %d", got.EventsObserved, got.Counters.ToolCalls, 2+writers*each, writers*each)
	}
	evs, _ := st.Events(ctx, s.ID, 0)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: gaps or duplicates", i, e.Seq)
		}
	}
	commits, jobs := st.DB().Writer.Stats()
	t.Logf("group commit: %d jobs in %d commits", jobs, commits)
}

// knownProj accepts only proj, as the project registry of a data directory
// where proj alone is registered would.
func knownProj(_ context.Context, id string) error {
	if id != proj {
		return failure.New(failure.UnknownProject, "project %q is not registered", id)
	}
	return nil
}

func importLedger(st workflow.Store, doc string) (int, error) {
	return workflow.ImportLedger(context.Background(), st, strings.NewReader(doc), knownProj)
}

// reimport imports the ledger data (of session s) into a new store,
// checks that it makes one session and that s exported from there is
// data again, and returns the new store.
func reimport(t *testing.T, data []byte, s workflow.Session) *workflowdb.Store {
	t.Helper()
	st2 := open(t, filepath.Join(t.TempDir(), "b.db"))
	if n, err := importLedger(st2, string(data)); err != nil || n != 1 {
		t.Fatalf("import: n=%d err=%v", n, err)
	}
	l2, _ := workflow.Export(context.Background(), st2, []string{s.ID}, s.CreatedAt)
	data2, _ := json.Marshal(l2)
	if string(data) != string(data2) {
		t.Fatalf("re-export differs:\n%s\n%s", data, data2)
	}
	return st2
}

func TestLedgerRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "a.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	svc.UpdateContext(ctx, s.ID, workflow.ExecutionContext{DefaultCwd: "cmd", DefaultShell: workflow.ShellBash})
	svc.Close(ctx, s.ID)
	l, err := workflow.Export(ctx, st, []string{s.ID}, s.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(l)

	st2 := reimport(t, data, s)
	if _, err := importLedger(st2, string(data)); failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "row 1, session "+s.ID) {
		t.Fatalf("second import: got %v, want conflict naming the row", err)
	}
}

// TestLedgerCarriesReplays: a replayed call's finish (replayed, replay_of)
// is exported, imported and exported again unchanged, and read back as a
// replay.
func TestLedgerCarriesReplays(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "a.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	l, err := workflow.Export(ctx, st, []string{s.ID}, s.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	const of = "wc_msg_0123456789abcdef0123456789abcdef"
	row := &l.Sessions[0]
	at := row.UpdatedAt
	n := row.EventsObserved
	row.Events = append(row.Events,
		workflow.Event{Seq: n + 1, At: at, Kind: workflow.EventToolCallStarted, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness},
		workflow.Event{Seq: n + 2, At: at, Kind: workflow.EventToolCallFinished, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness,
			Outcome: workflow.OutcomeOK, Replayed: true, ReplayOf: of})
	row.EventsObserved = n + 2
	data, _ := json.Marshal(l)
	if !strings.Contains(string(data), `"replayed":true,"replay_of":"`+of+`"`) {
		t.Fatalf("the ledger does not say replayed: %s", data)
	}
	st2 := reimport(t, data, s)
	evs, err := st2.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := evs[len(evs)-1]; !e.Replayed || e.ReplayOf != of {
		t.Fatalf("imported finish read back as %+v", e)
	}
}

func TestLedgerImportRejects(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "a.db"))
	svc := workflow.NewService(st, nil)
	first, second := start(t, svc), start(t, svc)
	l, _ := workflow.Export(ctx, st, []string{first.ID, second.ID}, first.CreatedAt)
	data, _ := json.Marshal(l)

	// mutate changes the second row; the first stays valid, so an import
	// that is not all or nothing would leave it behind.
	mutate := func(f func(doc, row map[string]any)) string {
		var d map[string]any
		json.Unmarshal(data, &d)
		r := d["sessions"].([]any)[1].(map[string]any)
		f(d, r)
		b, _ := json.Marshal(d)
		return string(b)
	}
	unchanged := func(t *testing.T, st *workflowdb.Store) {
		t.Helper()
		if s, err := st.Status(ctx); err != nil || s.Sessions != 0 || s.Events != 0 {
			t.Fatalf("store after a refused import: %+v %v, want empty", s, err)
		}
	}
	cases := map[string]struct {
		f    func(d, r map[string]any)
		kind failure.Kind
		msg  string
	}{
		"ErrOldVersion": {func(d, r map[string]any) { d["version"] = 1 }, failure.InvalidLedger, "version 1 is not supported"},
		// Marshalled with sorted keys, "version" follows "sessions": a
		// row it cannot read still reports the version.
		"ErrOldVersionBadRow": {func(d, r map[string]any) { d["version"] = 1; r["mode"] = "inspect" }, failure.InvalidLedger, "version 1 is not supported"},
		"ErrUnknownTop":       {func(d, r map[string]any) { d["extra"] = 1 }, failure.InvalidLedger, `unknown top-level member "extra"`},
		"ErrUnknownMember":    {func(d, r map[string]any) { r["surprise"] = true }, failure.InvalidLedger, "row 2"},
		"ErrInspectMode":      {func(d, r map[string]any) { r["mode"] = "inspect" }, failure.InvalidLedger, "row 2"},
		"ErrMissingFP":        {func(d, r map[string]any) { delete(r, "owner_authority_fingerprint") }, failure.InvalidLedger, `missing member "owner_authority_fingerprint"`},
		"ErrMissingEvents":    {func(d, r map[string]any) { delete(r, "events") }, failure.InvalidLedger, `missing member "events"`},
		"ErrBadEventKind": {func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["kind"] = "nope"
		}, failure.InvalidLedger, "row 2"},
		"ErrEventUnknownMember": {func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["stdout"] = "x"
		}, failure.InvalidLedger, "row 2"},
		"ErrReplayedWithoutOriginal": {func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["replayed"] = true
		}, failure.InvalidLedger, "replayed: set exactly when replay_of names the original"},
		"ErrReplayNotAFinish": {func(d, r map[string]any) {
			e := r["events"].([]any)[0].(map[string]any)
			e["replayed"], e["replay_of"] = true, "wc_msg_0123456789abcdef0123456789abcdef"
		}, failure.InvalidLedger, "replayed: only on a tool_call_finished with outcome ok"},
		"ErrUnregisteredProject":        {func(d, r map[string]any) { r["project"] = "agent:local:elsewhere" }, failure.UnknownProject, `project "agent:local:elsewhere" is not registered`},
		"ErrEventsObservedContradicted": {func(d, r map[string]any) { r["events_observed"] = 5 }, failure.InvalidLedger, "events_observed is 5 but 2 events are retained"},
		"ErrTruncatedContradicted":      {func(d, r map[string]any) { r["retention_truncated"] = true }, failure.InvalidLedger, "retention_truncated is true"},
		"ErrDuplicateID": {func(d, r map[string]any) {
			r["session_id"] = d["sessions"].([]any)[0].(map[string]any)["session_id"]
		}, failure.Conflict, "earlier in this ledger"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			st := open(t, filepath.Join(t.TempDir(), "b.db"))
			n, err := importLedger(st, mutate(c.f))
			if failure.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.msg) || n != 0 {
				t.Fatalf("got n=%d %v, want %s containing %q", n, err, c.kind, c.msg)
			}
			unchanged(t, st)
		})
	}
	t.Run("ErrNotJSON", func(t *testing.T) {
		st := open(t, filepath.Join(t.TempDir(), "b.db"))
		if _, err := importLedger(st, "[1,2"); failure.KindOf(err) != failure.InvalidLedger {
			t.Fatalf("got %v", err)
		}
		unchanged(t, st)
	})
	t.Run("ErrTruncatedDocument", func(t *testing.T) {
		st := open(t, filepath.Join(t.TempDir(), "b.db"))
		if _, err := importLedger(st, string(data[:len(data)-3])); failure.KindOf(err) != failure.InvalidLedger {
			t.Fatalf("got %v", err)
		}
		unchanged(t, st)
	})
	t.Run("CompatSinkAccepted", func(t *testing.T) {
		st := open(t, filepath.Join(t.TempDir(), "b.db"))
		if n, err := importLedger(st, mutate(func(d, r map[string]any) { r["context_revision"] = 7 })); err != nil || n != 2 {
			t.Fatalf("n=%d err=%v", n, err)
		}
	})
}
