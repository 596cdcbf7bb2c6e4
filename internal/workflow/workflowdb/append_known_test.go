package workflowdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// knownPair is two stores fed the same writes: fast keeps its remembered
// headers (AppendCall takes appendKnown), slow forgets them before every
// AppendCall (each one reads the row, as before appendKnown).
type knownPair struct {
	fast, slow *Store
	id         string
}

func newKnownPair(t *testing.T, events int) *knownPair {
	t.Helper()
	ctx := context.Background()
	p := &knownPair{}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() func() time.Time {
		n := 0
		return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Millisecond) }
	}
	sess := workflow.Session{ID: workflow.NewSessionID(), Project: "agent:local:demo", Title: "t", Mode: workflow.ModeNormal,
		Lifecycle: workflow.Active, OwnerFingerprint: auth.Fingerprint("local"), CreatedAt: t0, UpdatedAt: t0}
	evs := make([]workflow.Event, events)
	for i := range evs {
		evs[i] = workflow.Event{Kind: workflow.EventTaskInstruction, At: t0, Text: fmt.Sprint("instruction ", i)}
	}
	for _, dst := range []**Store{&p.fast, &p.slow} {
		st, err := Open(ctx, filepath.Join(t.TempDir(), "workflow.db"), clock())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, _, err := st.Create(ctx, sess, evs); err != nil {
			t.Fatal(err)
		}
		*dst = st
	}
	p.id = sess.ID
	return p
}

// appendCall runs the same AppendCall on both stores and returns both
// errors.
func (p *knownPair) appendCall(t *testing.T, fn workflow.UpdateFunc, w workflow.CallWrite) (fast, slow error) {
	t.Helper()
	ctx := context.Background()
	fast = p.fast.AppendCall(ctx, p.id, fn, w)
	p.slow.headers.Delete(p.id)
	slow = p.slow.AppendCall(ctx, p.id, fn, w)
	if w.Behind {
		for _, st := range []*Store{p.fast, p.slow} {
			if err := st.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fast, slow
}

// exec runs the same statement on both stores' writers.
func (p *knownPair) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	for _, st := range []*Store{p.fast, p.slow} {
		if err := st.db.Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// dump is every row an update writes, column by column (open_calls
// without the instance, which names each store's process).
func dump(t *testing.T, st *Store) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT session_id, project, owner_fp, lifecycle, updated_at, retained, header_json FROM sessions`,
		`SELECT session_id, ` + eventColumns + ` FROM events ORDER BY session_id, seq`,
		`SELECT session_id, call_id, invocation_id, tool, role, started_at, started_seq FROM open_calls ORDER BY session_id, call_id`,
		`SELECT seq, body FROM evidence_outbox ORDER BY seq`,
	} {
		rows, err := st.db.Read.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%#v\n", vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

func callEvents(kind workflow.EventKind, i int) workflow.UpdateFunc {
	return func(s *workflow.Session) ([]workflow.Event, error) {
		if !s.Mutable() {
			return nil, failure.New(failure.SessionClosed, "closed")
		}
		e := workflow.Event{Kind: kind, Tool: "write_project_file", CallID: fmt.Sprint("call_", i), InvocationID: fmt.Sprint("inv_", i),
			Role: workflow.RoleBusiness}
		if kind == workflow.EventToolCallFinished {
			e.Outcome, e.DurationMS, e.ChangedPaths = workflow.OutcomeOK, 3, []string{"out.txt"}
		}
		return []workflow.Event{e}, nil
	}
}

// TestAppendKnownWritesWhatAReadWould: AppendCall on the remembered
// header writes exactly the rows that reading the header first writes,
// across retention, a header another writer changed (the remembered one
// is stale), rows fewer than the retained count, behind writes, and a
// closed session refusing the call (nothing written).
func TestAppendKnownWritesWhatAReadWould(t *testing.T) {
	ctx := context.Background()
	p := newKnownPair(t, workflow.TailLimit-7)
	for i := range 12 {
		switch i {
		case 4:
			// Another writer (another process on the ledger) changes the
			// header: fast's remembered one is stale.
			v, _ := p.fast.headers.Load(p.id)
			for _, st := range []*Store{p.fast, p.slow} {
				if _, err := workflow.NewService(st, nil).Continue(ctx, p.id, "and the docs", ""); err != nil {
					t.Fatal(err)
				}
			}
			p.fast.headers.Store(p.id, v)
		case 7:
			// Fewer rows than the retained count: the trim deletes fewer
			// rows than the count says.
			p.exec(t, `DELETE FROM events WHERE session_id = ? AND seq IN (SELECT seq FROM events WHERE session_id = ? ORDER BY seq LIMIT 3)`, p.id, p.id)
		}
		if fast, slow := p.appendCall(t, callEvents(workflow.EventToolCallStarted, i), workflow.CallWrite{}); fast != nil || slow != nil {
			t.Fatalf("started %d: %v / %v", i, fast, slow)
		}
		w := workflow.CallWrite{Outbox: fmt.Appendf(nil, `{"record":%d}`, i), Behind: i%3 == 0}
		if fast, slow := p.appendCall(t, callEvents(workflow.EventToolCallFinished, i), w); fast != nil || slow != nil {
			t.Fatalf("finished %d: %v / %v", i, fast, slow)
		}
		if f, s := dump(t, p.fast), dump(t, p.slow); f != s {
			t.Fatalf("after call %d the rows differ:\nremembered header:\n%s\nread header:\n%s", i, f, s)
		}
	}
	var retained int64
	if err := p.fast.db.Read.QueryRow(`SELECT retained FROM sessions WHERE session_id = ?`, p.id).Scan(&retained); err != nil {
		t.Fatal(err)
	}
	var rows int64
	if err := p.fast.db.Read.QueryRow(`SELECT COUNT(*) FROM events WHERE session_id = ?`, p.id).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if retained <= rows {
		// The count stays above the rows once rows went missing beneath
		// it (as before appendKnown): the trims deleted fewer rows than
		// counted, the case appendKnown corrects its UPDATE for.
		t.Fatalf("retained %d, rows %d: the trims never fell short of the count", retained, rows)
	}

	at := func() time.Time { return time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC) }
	for _, st := range []*Store{p.fast, p.slow} {
		if _, _, err := workflow.NewService(st, at).Close(ctx, p.id); err != nil {
			t.Fatal(err)
		}
	}
	before := dump(t, p.fast)
	fast, slow := p.appendCall(t, callEvents(workflow.EventToolCallStarted, 99), workflow.CallWrite{Outbox: []byte("{}")})
	if failure.KindOf(fast) != failure.SessionClosed || failure.KindOf(slow) != failure.SessionClosed {
		t.Fatalf("closed session: %v / %v, want session_closed", fast, slow)
	}
	if after := dump(t, p.fast); after != before {
		t.Fatalf("a refused call changed rows:\n%s\nwas\n%s", after, before)
	}
	if f, s := dump(t, p.fast), dump(t, p.slow); f != s {
		t.Fatalf("after close the rows differ:\n%s\n%s", f, s)
	}
}

// TestAppendCallUsesTheRememberedHeader: while the row holds the
// remembered header and count, AppendCall computes from the remembered
// decoding without reading the row (a remembered decoding that differs
// from the stored one, which rememberHeader never caches, shows it); once
// the row holds anything else, it reads the row.
func TestAppendCallUsesTheRememberedHeader(t *testing.T) {
	p := newKnownPair(t, 1)
	if err := p.fast.AppendCall(context.Background(), p.id, callEvents(workflow.EventToolCallStarted, 1), workflow.CallWrite{}); err != nil {
		t.Fatal(err)
	}
	v, _ := p.fast.headers.Load(p.id)
	d := *v.(*decodedHeader)
	marked := d
	marked.sess.Title = "remembered"
	p.fast.headers.Store(p.id, &marked)
	if err := p.fast.AppendCall(context.Background(), p.id, callEvents(workflow.EventToolCallFinished, 1), workflow.CallWrite{}); err != nil {
		t.Fatal(err)
	}
	got, err := p.fast.Get(context.Background(), p.id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "remembered" || got.EventsObserved != d.sess.EventsObserved+1 {
		t.Fatalf("title %q events_observed %d: the remembered header was not used", got.Title, got.EventsObserved)
	}

	// The row no longer holds what is remembered: the header before the
	// last append (as a reader that read it then may leave it).
	p.fast.headers.Store(p.id, &d)
	if err := p.fast.AppendCall(context.Background(), p.id, callEvents(workflow.EventToolCallStarted, 2), workflow.CallWrite{}); err != nil {
		t.Fatal(err)
	}
	again, err := p.fast.Get(context.Background(), p.id)
	if err != nil {
		t.Fatal(err)
	}
	want := got
	want.EventsObserved++
	want.Counters.ToolCalls++
	want.UpdatedAt = again.UpdatedAt
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("after a stale remembered header: %+v, want %+v", again, want)
	}
}

// TestPairedCallsScanIsTheMap: the scan that judges short appends and
// the map that judges long ones agree on which calls have both events.
func TestPairedCallsScanIsTheMap(t *testing.T) {
	kinds := []workflow.EventKind{workflow.EventToolCallStarted, workflow.EventToolCallFinished, workflow.EventTaskInstruction}
	for seed := range 300 {
		n := 1 + seed%8
		evs := make([]workflow.Event, n)
		for i := range evs {
			evs[i] = workflow.Event{Kind: kinds[(seed/(i+1)+i)%3], CallID: []string{"", "a", "b"}[(seed+i*7)%3]}
		}
		long := append(slices.Clone(evs), make([]workflow.Event, 9)...) // padded past the scan's bound with events of no call
		for _, call := range []string{"", "a", "b"} {
			var started, finished bool
			for _, e := range evs {
				if e.CallID == call && call != "" {
					started = started || e.Kind == workflow.EventToolCallStarted
					finished = finished || e.Kind == workflow.EventToolCallFinished
				}
			}
			want := started && finished
			if got := workflowrow.PairedCalls(evs)(call); got != want && call != "" {
				t.Fatalf("scan of %+v: %q paired = %v, want %v", evs, call, got, want)
			}
			if got := workflowrow.PairedCalls(long)(call); got != want && call != "" {
				t.Fatalf("map of %+v: %q paired = %v, want %v", long, call, got, want)
			}
		}
	}
}

// TestEventRowsAreStoredAsBound: an events row written through
// eventValues (one row, prepared; many rows, compiled) stores every
// column exactly as binding each value as it is (the empty strings
// included) stores it: same type, same bytes.
func TestEventRowsAreStoredAsBound(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC)
	evs := []workflow.Event{
		{Seq: 1, At: at, Kind: workflow.EventToolCallStarted, Tool: "write_project_file", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness},
		{Seq: 2, At: at, Kind: workflow.EventToolCallFinished, Tool: "write_project_file", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness,
			Outcome: workflow.OutcomeFailed, ErrorKind: "edit_conflict", DurationMS: 7, ObservedPaths: []string{"a.go", "\xff\x00.go"}, ChangedPaths: []string{"b <&> \u2028.go"},
			Facts: map[string]string{"k": "v"}},
		{Seq: 3, At: at, Kind: workflow.EventTaskInstruction, Text: "fix it"},
		{Seq: 4, At: at, Kind: workflow.EventValidationRecorded, Tool: "run_tests", Validation: &workflow.Validation{Tool: "run_tests"}},
		{Seq: 5, At: at, Kind: workflow.EventSessionClosed},
		{Seq: 6, At: at, Kind: workflow.EventToolCallFinished, Tool: "post_session_message", CallID: "call_2", InvocationID: "inv_2", Role: workflow.RoleBusiness,
			Outcome: workflow.OutcomeOK, Replayed: true, ReplayOf: "wc_msg_0123456789abcdef0123456789abcdef"},
	}
	plain := func(id string, e workflow.Event) []any {
		return []any{id, e.Seq, e.At.UnixNano(), string(e.Kind), e.Tool, e.CallID, e.InvocationID,
			string(e.Role), string(e.Outcome), e.ErrorKind, e.DurationMS, e.Text,
			workflowrow.JSONOrEmpty(e.ObservedPaths, len(e.ObservedPaths) == 0), workflowrow.JSONOrEmpty(e.ChangedPaths, len(e.ChangedPaths) == 0),
			workflowrow.JSONOrEmpty(e.Facts, len(e.Facts) == 0), workflowrow.JSONOrEmpty(e.Validation, e.Validation == nil), e.ReplayOf}
	}
	if err := st.db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, e := range evs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO events (session_id, `+eventColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, plain("bound", e)...); err != nil {
				return err
			}
			if _, err := tx.StmtContext(ctx, st.stmts.insertEvent).ExecContext(ctx, workflowrow.EventArgs("prepared", e)...); err != nil {
				return err
			}
		}
		return insertEvents(ctx, tx, "compiled", evs)
	}); err != nil {
		t.Fatal(err)
	}
	rows := func(id string) string {
		var quoted []string
		for _, c := range strings.Split(eventColumns, ", ") {
			r, err := st.db.Read.Query(`SELECT typeof(`+c+`) || ':' || quote(`+c+`) FROM events WHERE session_id = ? ORDER BY seq`, id)
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				var v string
				if err := r.Scan(&v); err != nil {
					t.Fatal(err)
				}
				quoted = append(quoted, c+"="+v)
			}
			r.Close()
		}
		return strings.Join(quoted, "\n")
	}
	want := rows("bound")
	if !strings.Contains(want, "tool=text:''") || strings.Count(want, "\n") != 16*len(evs)-1 {
		t.Fatalf("reference rows:\n%s", want)
	}
	for _, id := range []string{"prepared", "compiled"} {
		if got := rows(id); got != want {
			t.Errorf("%s rows:\n%s\nwant\n%s", id, got, want)
		}
	}
}

// TestClaimedHeaderMustBeStored: an AppendCall given the remembered header
// as CallWrite.Claimed writes while the row holds it, and fails with
// workflow.ErrClaimChanged, writing nothing, once the row holds another
// (here written by a second store on the same file, as another process
// would) or the store remembers another.
func TestClaimedHeaderMustBeStored(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := workflow.NewService(st, nil).Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	_, hdr, ok := st.Remembered(s.ID)
	if ok {
		t.Fatalf("a header is remembered before this store read or wrote it: %s", hdr)
	}
	if _, err := st.GetCommitted(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	sess, hdr, ok := st.Remembered(s.ID)
	var stored string
	if err := st.db.Read.QueryRow(`SELECT header_json FROM sessions WHERE session_id = ?`, s.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !ok || hdr != stored || sess.ID != s.ID {
		t.Fatalf("remembered %v %q, stored %q", ok, hdr, stored)
	}
	if err := st.AppendCall(ctx, s.ID, callEvents(workflow.EventToolCallStarted, 1), workflow.CallWrite{Claimed: hdr}); err != nil {
		t.Fatalf("claimed header still stored: %v", err)
	}
	_, hdr, _ = st.Remembered(s.ID)

	other, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := workflow.NewService(other, nil).Continue(ctx, s.ID, "and the docs", ""); err != nil {
		t.Fatal(err)
	}
	before := dump(t, st)
	err = st.AppendCall(ctx, s.ID, callEvents(workflow.EventToolCallFinished, 1), workflow.CallWrite{Claimed: hdr, Outbox: []byte("{}")})
	if !errors.Is(err, workflow.ErrClaimChanged) {
		t.Fatalf("claimed header changed by another process: %v, want ErrClaimChanged", err)
	}
	if after := dump(t, st); after != before {
		t.Fatalf("a refused write changed rows:\n%s\nwas\n%s", after, before)
	}
	// The store now remembers the stored header (a read), not the claimed one.
	if _, err := st.GetCommitted(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	err = st.AppendCall(ctx, s.ID, callEvents(workflow.EventToolCallFinished, 1), workflow.CallWrite{Claimed: hdr})
	if !errors.Is(err, workflow.ErrClaimChanged) {
		t.Fatalf("claimed header no longer remembered: %v, want ErrClaimChanged", err)
	}
	if after := dump(t, st); after != before {
		t.Fatalf("a refused write changed rows:\n%s\nwas\n%s", after, before)
	}
}
