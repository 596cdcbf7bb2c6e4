package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

func lifecycle(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	if !strings.HasPrefix(s.ID, workflow.SessionIDPrefix) || s.EventsObserved != 2 || s.Counters.Instructions != 1 {
		t.Fatalf("unexpected new session: %+v", s)
	}
	if _, _, err := st.Create(ctx, s, nil); !failure.Is(err, failure.Conflict) {
		t.Fatalf("create of an existing id: %v, want conflict", err)
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
	other := start(t, svc)
	list, total, err := st.List(ctx, workflow.ListFilter{Project: proj, Lifecycle: workflow.Active})
	if err != nil || total != 1 || len(list) != 1 || list[0].ID != other.ID {
		t.Fatalf("list of active sessions: %d %v %v", total, list, err)
	}
	list, total, err = st.List(ctx, workflow.ListFilter{Fingerprint: owner, Limit: 1, Offset: 1})
	if err != nil || total != 2 || len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("second page of the owner's sessions, newest first: %d %v %v", total, list, err)
	}
	if _, err := st.Get(ctx, workflow.NewSessionID()); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("get of an unknown session: %v", err)
	}
	if _, _, err := st.Update(ctx, workflow.NewSessionID(), func(*workflow.Session) ([]workflow.Event, error) { return nil, nil }); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("update of an unknown session: %v", err)
	}
	if status, err := st.Status(ctx); err != nil || status.Sessions != 2 || status.ActiveSessions != 1 || status.Events != 4+2 {
		t.Fatalf("status %+v %v", status, err)
	}
}

func claimCheck(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
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

func tailRetention(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
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
	all := events(t, st, s.ID)
	if len(all) != workflow.TailLimit || all[0].Seq != got.EventsObserved-workflow.TailLimit+1 || all[len(all)-1].Seq != got.EventsObserved {
		t.Fatalf("retained %d events seq %d..%d, want %d ending at %d", len(all), all[0].Seq, all[len(all)-1].Seq, workflow.TailLimit, got.EventsObserved)
	}
	if _, def, _ := svc.Summary(ctx, s.ID, 0); len(def) != workflow.SummaryDefault {
		t.Fatalf("default summary %d events, want %d", len(def), workflow.SummaryDefault)
	}
	if status, _ := st.Status(ctx); status.Events != workflow.TailLimit {
		t.Fatalf("status events %d, want %d", status.Events, workflow.TailLimit)
	}
}

func restoreExactAndDiscardsMalformed(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	good := start(t, svc)
	svc.Append(ctx, good.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK,
		ObservedPaths: []string{"a.go", "b/c.go"}, Facts: map[string]string{"files": "2"}})
	victim := start(t, svc)
	before, _ := workflow.Export(ctx, st, []string{good.ID}, good.CreatedAt)
	l.Set(t, "sessions", "header_json", `{"session_id":"`+victim.ID+`","mode":"inspect"}`, victim.ID, 0)
	l.Set(t, "events", "kind", "bogus", good.ID, 1)
	st.Close()

	st2 := l.Open(t)
	if rep := st2.Restored(); rep != (workflowrow.RestoreReport{}) {
		t.Fatalf("open checked rows: %+v", rep)
	}
	if status, _ := st2.Status(ctx); status.DiscardedRows != 0 || status.Sessions != 2 {
		t.Fatalf("status at open %+v, want 2 sessions and 0 discarded", status)
	}
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
	rep := st2.Restored()
	if rep.Discarded != 4 || rep.Sessions != 1 || rep.Events != int64(len(before.Sessions[0].Events)-1) {
		t.Fatalf("check report %+v, want 4 discarded, 1 session, %d events", rep, len(before.Sessions[0].Events)-1)
	}
	status, _ := st2.Status(ctx)
	if status.DiscardedRows != 4 || status.Sessions != 1 || status.Events != int64(len(before.Sessions[0].Events)-1) {
		t.Fatalf("status %+v", status)
	}
	if diff := cmp.Diff(before.Sessions[0].Events[1:], after.Sessions[0].Events); diff != "" {
		t.Fatalf("valid events changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Sessions[0].Session, after.Sessions[0].Session); diff != "" {
		t.Fatalf("header changed (-before +after):\n%s", diff)
	}
	st2.Close()
	st3 := l.Open(t)
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
// corrupt event row (seq 3, a tool_call_finished), and closes its store.
func corruptLedger(t *testing.T, l env) (a, b workflow.Session) {
	t.Helper()
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	a, b = start(t, svc), start(t, svc)
	for _, id := range []string{a.ID, b.ID} {
		if _, _, err := svc.Append(ctx, id, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		l.Set(t, "events", "outcome", "sideways", id, 3)
	}
	st.Close()
	return a, b
}

func corruptEventQuarantinedAtFirstUse(t *testing.T, outer env) {
	ctx := context.Background()
	for _, use := range []string{"events", "get", "append"} {
		t.Run(use, func(t *testing.T) {
			l := freshEnv(t, outer)
			a, b := corruptLedger(t, l)
			st := l.Open(t)
			svc := workflow.NewService(st, nil)
			if status, _ := st.Status(ctx); status.DiscardedRows != 0 || status.Events != 6 {
				t.Fatalf("status at open %+v, want 6 events and 0 discarded", status)
			}
			switch use {
			case "events":
				evs := events(t, st, a.ID)
				if len(evs) != 2 || evs[0].Seq != 1 || evs[1].Seq != 2 {
					t.Fatalf("events %+v, want seq 1 and 2 only", evs)
				}
			case "get":
				get(t, st, a.ID)
			case "append":
				appendEvents(t, svc, a.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK})
			}
			status, _ := st.Status(ctx)
			wantEvents := int64(2 + 3)
			if use == "append" {
				wantEvents++
			}
			if status.DiscardedRows != 1 || status.Events != wantEvents {
				t.Fatalf("status after first use of a %+v, want 1 discarded and %d events", status, wantEvents)
			}
			reason, body := l.Discarded(t, a.ID+"/3")
			if !strings.Contains(reason, "outcome") || !strings.Contains(body, "sideways") {
				t.Fatalf("quarantined row reason %q body %q", reason, body)
			}
			for _, e := range events(t, st, a.ID) {
				if e.Seq == 3 {
					t.Fatalf("quarantined event served: %+v", e)
				}
			}
			events(t, st, b.ID)
			if status, _ := st.Status(ctx); status.DiscardedRows != 2 {
				t.Fatalf("status after first use of b %+v, want 2 discarded", status)
			}
			if rep := st.Restored(); rep.Discarded != 2 || rep.Sessions != 2 {
				t.Fatalf("check report %+v, want 2 sessions and 2 discarded", rep)
			}
		})
	}
}

// freshEnv is a new ledger for a subtest, made as l's was.
func freshEnv(t *testing.T, l env) env {
	return env{Ledger: l.fresh(t), fresh: l.fresh}
}

func listQuarantinesMalformedHeader(t *testing.T, l env) {
	ctx := context.Background()
	a, b := corruptLedger(t, l)
	st := l.Open(t)
	l.Set(t, "sessions", "header_json", `{"session_id":"`+b.ID+`"}`, b.ID, 0)
	got, _, err := st.List(ctx, workflow.ListFilter{Project: proj})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("list served %d sessions, want only %s", len(got), a.ID)
	}
	if status, _ := st.Status(ctx); status.DiscardedRows != 4 || status.Sessions != 1 {
		t.Fatalf("status after list %+v, want 1 session and 4 discarded", status)
	}
	if _, err := st.Get(ctx, b.ID); failure.KindOf(err) != failure.UnknownSessionID {
		t.Fatalf("quarantined session served: %v", err)
	}
}

func validateAllMatchesFirstUse(t *testing.T, l env) {
	ctx := context.Background()
	a, b := corruptLedger(t, l)
	st := l.Open(t)
	events(t, st, a.ID)
	full, err := st.ValidateAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if full.Discarded != 1 || full.Sessions != 2 || full.Events != 4 {
		t.Fatalf("full pass %+v, want 2 sessions, 4 events, 1 discarded", full)
	}
	events(t, st, b.ID)
	if status, _ := st.Status(ctx); status.DiscardedRows != 2 || status.Events != 4 {
		t.Fatalf("status %+v, want 2 discarded and 4 events", status)
	}
}

func concurrentAppends(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, _, err := svc.Append(ctx, s.ID, workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "t"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := get(t, st, s.ID)
	if got.EventsObserved != 2+writers*each || got.Counters.ToolCalls != writers*each {
		t.Fatalf("events_observed=%d tool_calls=%d, want %d and %d", got.EventsObserved, got.Counters.ToolCalls, 2+writers*each, writers*each)
	}
	for i, e := range events(t, st, s.ID) {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: gaps or duplicates", i, e.Seq)
		}
	}
}

// headerFollowsTheStoredBytes: a header changed in the database behind
// the store's back (another process, an operator) is read as stored, and
// a malformed one is an error.
func headerFollowsTheStoredBytes(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	s := start(t, workflow.NewService(st, nil))
	if got, err := st.Get(ctx, s.ID); err != nil || got.Title != s.Title {
		t.Fatalf("get: %+v %v", got, err)
	}
	changed := s
	changed.Title = "renamed elsewhere"
	b, _ := json.Marshal(changed)
	l.Set(t, "sessions", "header_json", string(b), s.ID, 0)
	if got, err := st.Get(ctx, s.ID); err != nil || got.Title != "renamed elsewhere" {
		t.Fatalf("get after the row changed: title %q %v, want the stored one", got.Title, err)
	}
	l.Set(t, "sessions", "header_json", `{"session_id":"`+s.ID+`","bogus":1}`, s.ID, 0)
	if got, err := st.Get(ctx, s.ID); err == nil {
		t.Fatalf("get of a malformed header returned %+v, want an error", got)
	}
}

// claimedHeaderMustBeStored: an AppendCall given the stored header as
// CallWrite.Claimed writes while the row holds it, and fails with
// workflow.ErrClaimChanged, writing nothing, once another process has
// changed the session.
func claimedHeaderMustBeStored(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	s := start(t, workflow.NewService(st, nil))
	call := func(kind workflow.EventKind) workflow.UpdateFunc {
		return func(*workflow.Session) ([]workflow.Event, error) {
			return []workflow.Event{{Kind: kind, Tool: "write_project_file", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness, Outcome: map[bool]workflow.Outcome{true: workflow.OutcomeOK}[kind == workflow.EventToolCallFinished]}}, nil
		}
	}
	committed, err := st.GetCommitted(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	hdr := workflowrow.EncodeHeader(committed)
	if err := st.AppendCall(ctx, s.ID, call(workflow.EventToolCallStarted), workflow.CallWrite{Claimed: hdr}); err != nil {
		t.Fatalf("claimed header still stored: %v", err)
	}
	committed, _ = st.GetCommitted(ctx, s.ID)
	hdr = workflowrow.EncodeHeader(committed)
	other := l.Open(t)
	if _, err := workflow.NewService(other, nil).Continue(ctx, s.ID, "and the docs", ""); err != nil {
		t.Fatal(err)
	}
	before, beforeEvs := get(t, st, s.ID), events(t, st, s.ID)
	err = st.AppendCall(ctx, s.ID, call(workflow.EventToolCallFinished), workflow.CallWrite{Claimed: hdr, Outbox: []byte("{}")})
	if !errors.Is(err, workflow.ErrClaimChanged) {
		t.Fatalf("claimed header changed by another process: %v, want ErrClaimChanged", err)
	}
	if after := get(t, st, s.ID); !cmp.Equal(after, before) || len(events(t, st, s.ID)) != len(beforeEvs) {
		t.Fatalf("a refused write changed the session: %+v, was %+v", after, before)
	}
	if rows, err := st.Outbox(ctx, 0, 10); err != nil || len(rows) != 0 {
		t.Fatalf("a refused write stored its outbox row: %v %v", rows, err)
	}
}
