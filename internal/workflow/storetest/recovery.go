package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// recoverOpenCalls writes, in several sessions, calls a crash cut off
// (started durable, never finished) beside calls that finished, reopens
// the ledger as a restart does, and checks that recovery finishes exactly
// the open ones, once, counted once, whatever the session's lifecycle.
func recoverOpenCalls(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	a, b, c, d := start(t, svc), start(t, svc), start(t, svc), start(t, svc)
	appendEvents(t, svc, a.ID, started("write_project_file", "call_a1", "inv_1", workflow.RoleBusiness))
	appendEvents(t, svc, a.ID, finished("write_project_file", "call_a1", "inv_1", workflow.RoleBusiness))
	appendEvents(t, svc, a.ID, started("run_process", "call_a2", "inv_2", workflow.RoleBusiness))
	appendEvents(t, svc, b.ID, started("apply_patch", "call_b1", "inv_3", workflow.RoleRecorder))
	appendEvents(t, svc, b.ID, started("apply_patch", "call_b2", "inv_3", workflow.RoleBusiness))
	appendEvents(t, svc, c.ID, started("read_files", "call_c1", "inv_4", workflow.RoleRecorder), finished("read_files", "call_c1", "inv_4", workflow.RoleRecorder))
	appendEvents(t, svc, c.ID, started("edit_file", "call_c2", "inv_5", workflow.RoleBusiness))
	appendEvents(t, svc, c.ID, finished("edit_file", "call_c2", "inv_5", workflow.RoleBusiness))
	appendEvents(t, svc, d.ID, started("run_process", "call_d1", "inv_6", workflow.RoleBusiness))
	if _, _, err := svc.Close(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = l.Open(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	svc = workflow.NewService(st, func() time.Time { return at })
	before := map[string]workflow.Session{}
	for _, s := range []workflow.Session{a, b, c, d} {
		before[s.ID] = get(t, st, s.ID)
	}
	var witnessed []workflow.OpenCall
	rec, err := svc.RecoverOpenCalls(ctx, func(_ context.Context, calls []workflow.OpenCall) {
		for _, c := range calls {
			if n := get(t, st, c.SessionID).EventsObserved; n != before[c.SessionID].EventsObserved {
				t.Errorf("session %s already changed when witnessed (%d events)", c.SessionID, n)
			}
		}
		witnessed = append(witnessed, calls...)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]workflow.OpenCall{
		"call_a2": {SessionID: a.ID, Project: proj, CallID: "call_a2", InvocationID: "inv_2", Tool: "run_process", Role: workflow.RoleBusiness},
		"call_b1": {SessionID: b.ID, Project: proj, CallID: "call_b1", InvocationID: "inv_3", Tool: "apply_patch", Role: workflow.RoleRecorder},
		"call_b2": {SessionID: b.ID, Project: proj, CallID: "call_b2", InvocationID: "inv_3", Tool: "apply_patch", Role: workflow.RoleBusiness},
		"call_d1": {SessionID: d.ID, Project: proj, CallID: "call_d1", InvocationID: "inv_6", Tool: "run_process", Role: workflow.RoleBusiness},
	}
	if len(rec.Calls) != len(want) || rec.Sessions != 3 || !rec.At.Equal(at) || len(witnessed) != len(want) {
		t.Fatalf("recovery %+v (witnessed %d), want %d calls in 3 sessions at %v", rec, len(witnessed), len(want), at)
	}
	for _, got := range rec.Calls {
		w, ok := want[got.CallID]
		if !ok {
			t.Fatalf("recovered a call that was not open: %+v", got)
		}
		if got.StartedAt.IsZero() || got.StartedSeq == 0 {
			t.Errorf("recovered call %s lacks its start: %+v", got.CallID, got)
		}
		got.StartedAt, got.StartedSeq = time.Time{}, 0
		if got != w {
			t.Errorf("recovered %+v, want %+v", got, w)
		}
	}
	for _, s := range []workflow.Session{a, b, d} {
		after, prev := get(t, st, s.ID), before[s.ID]
		var recovered []workflow.Event
		for _, e := range events(t, st, s.ID) {
			if e.Kind == workflow.EventToolCallFinished && e.Outcome == workflow.OutcomeUnknown {
				recovered = append(recovered, e)
			}
		}
		n := int64(len(recovered))
		if after.EventsObserved != prev.EventsObserved+n || after.Counters.ToolCalls != prev.Counters.ToolCalls ||
			after.Counters.ToolFailures != prev.Counters.ToolFailures+n || after.Lifecycle != prev.Lifecycle {
			t.Errorf("session %s: %+v -> %+v after %d recovered finishes", s.ID, prev, after, n)
		}
		for _, e := range recovered {
			w := want[e.CallID]
			if w.SessionID != s.ID || e.Tool != w.Tool || e.InvocationID != w.InvocationID || e.Role != w.Role ||
				e.ErrorKind != string(failure.OutcomeUnknown) || !e.At.Equal(at) ||
				e.Facts[workflow.FactRecovery] != workflow.RecoveryServerStart || e.Facts[workflow.FactRecoveredAt] != at.Format(time.RFC3339Nano) {
				t.Errorf("recovered finish %+v does not match open call %+v", e, w)
			}
		}
	}
	if got := get(t, st, c.ID); got.EventsObserved != before[c.ID].EventsObserved || !got.UpdatedAt.Equal(before[c.ID].UpdatedAt) {
		t.Errorf("session with only finished calls changed: %+v -> %+v", before[c.ID], got)
	}
	again, err := svc.RecoverOpenCalls(ctx, func(context.Context, []workflow.OpenCall) { t.Error("witness called with nothing open") })
	if err != nil || len(again.Calls) != 0 || again.Sessions != 0 {
		t.Fatalf("second recovery: %+v %v", again, err)
	}
	counts := map[string]int64{}
	for _, s := range []workflow.Session{a, b, c, d} {
		counts[s.ID] = get(t, st, s.ID).EventsObserved
	}
	st.Close()
	st = l.Open(t)
	if third, err := workflow.NewService(st, nil).RecoverOpenCalls(ctx, nil); err != nil || len(third.Calls) != 0 {
		t.Fatalf("recovery after another restart: %+v %v", third, err)
	}
	for id, n := range counts {
		if got := get(t, st, id).EventsObserved; got != n {
			t.Errorf("session %s grew from %d to %d events at the second start", id, n, got)
		}
	}
}

// recoverOpenCallBeyondRetention: a call whose started event retention
// removed is still known open and still gets its finish.
func recoverOpenCallBeyondRetention(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	appendEvents(t, svc, s.ID, started("run_process", "call_long", "inv_long", workflow.RoleBusiness))
	filler := make([]workflow.Event, 0, workflow.TailLimit)
	for i := range workflow.TailLimit / 2 {
		c := fmt.Sprint("call_", i)
		filler = append(filler, started("read_files", c, "inv_r", workflow.RoleBusiness), finished("read_files", c, "inv_r", workflow.RoleBusiness))
	}
	appendEvents(t, svc, s.ID, filler...)
	for _, e := range events(t, st, s.ID) {
		if e.CallID == "call_long" {
			t.Fatal("the started event is still retained; the test needs it trimmed")
		}
	}
	st.Close()
	st = l.Open(t)
	rec, err := workflow.NewService(st, nil).RecoverOpenCalls(ctx, nil)
	if err != nil || len(rec.Calls) != 1 || rec.Calls[0].CallID != "call_long" || rec.Calls[0].StartedSeq != 3 {
		t.Fatalf("recovery: %+v %v", rec, err)
	}
	evs := events(t, st, s.ID)
	last := evs[len(evs)-1]
	if last.CallID != "call_long" || last.Outcome != workflow.OutcomeUnknown || last.Facts[workflow.FactStartedSeq] != "3" {
		t.Fatalf("last event %+v, want the recovered finish of call_long", last)
	}
}

// openCallsOfALiveProcessAreNotRecovered: a second process (replica)
// opening the same ledger finishes nothing the first is still running;
// once the first is gone, its cut-off call is recovered.
func openCallsOfALiveProcessAreNotRecovered(t *testing.T, l env) {
	ctx := context.Background()
	first := l.Open(t)
	svc := workflow.NewService(first, nil)
	s := start(t, svc)
	appendEvents(t, svc, s.ID, started("run_process", "call_live", "inv_live", workflow.RoleBusiness))
	if own, err := first.OpenCalls(ctx, 0); err != nil || len(own) != 0 {
		t.Fatalf("the process running a call sees it as cut off: %+v %v", own, err)
	}
	second := l.Open(t)
	rec, err := workflow.NewService(second, nil).RecoverOpenCalls(ctx, nil)
	if err != nil || len(rec.Calls) != 0 {
		t.Fatalf("recovery beside a live process: %+v %v", rec, err)
	}
	if n := get(t, second, s.ID).EventsObserved; n != 3 {
		t.Fatalf("the live call's session has %d events, want 3 (no finish added)", n)
	}
	first.Close()
	rec, err = workflow.NewService(second, nil).RecoverOpenCalls(ctx, nil)
	if err != nil || len(rec.Calls) != 1 || rec.Calls[0].CallID != "call_live" {
		t.Fatalf("recovery after the first process ended: %+v %v", rec, err)
	}
}

// recoverySkipsQuarantinedSession: a session whose header is malformed is
// moved aside, open calls and all, at its first use by recovery; recovery
// finishes the other sessions' calls and does not fail start-up.
func recoverySkipsQuarantinedSession(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	bad, good := start(t, svc), start(t, svc)
	appendEvents(t, svc, bad.ID, started("read_files", "call_bad", "inv_a", workflow.RoleBusiness))
	appendEvents(t, svc, good.ID, started("read_files", "call_good", "inv_b", workflow.RoleBusiness))
	l.Set(t, "sessions", "header_json", `{}`, bad.ID, 0)
	st.Close()
	st = l.Open(t)
	rec, err := workflow.NewService(st, nil).RecoverOpenCalls(ctx, nil)
	if err != nil || len(rec.Calls) != 1 || rec.Calls[0].CallID != "call_good" || rec.Sessions != 1 {
		t.Fatalf("recovery: %+v %v", rec, err)
	}
	if status, _ := st.Status(ctx); status.DiscardedRows != 4 || status.Sessions != 1 {
		t.Fatalf("status %+v, want 1 session and 4 discarded (header and 3 events)", status)
	}
	if calls, err := st.OpenCalls(ctx, 0); err != nil || len(calls) != 0 {
		t.Fatalf("open calls left: %+v %v", calls, err)
	}
}
