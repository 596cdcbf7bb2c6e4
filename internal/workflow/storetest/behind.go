package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
)

// behindWritesAndAKill queues read-only calls' events behind their
// callers while the store's writes are held, and checks that the callers
// did not wait, that a claim check reads the committed header, and that
// a reader of the session waits for them and sees them in order with
// their outbox rows; then, on another process, that a kill -9 with such
// writes queued leaves them counted as unrecorded by the next process to
// open the ledger (once), never silently missing.
func behindWritesAndAKill(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)

	release := l.Hold(t, st, s.ID)
	done := make(chan error, 3)
	for _, call := range []string{"call_a", "call_b", "call_c"} {
		w := workflow.CallWrite{Behind: true, Outbox: []byte("record " + call), Done: func(err error) { done <- err }}
		if err := svc.FinishCall(ctx, s.ID, time.Now(), w, readPair(call)...); err != nil {
			t.Fatalf("behind write %s: %v", call, err)
		}
	}
	if c, err := st.GetCommitted(ctx, s.ID); err != nil || c.EventsObserved != 2 || c.Lifecycle != workflow.Active {
		t.Fatalf("GetCommitted while the writes are held: %+v %v, want the committed header (2 events)", c, err)
	}
	if cl := svc.ReadClaim(ctx, s.ID); !cl.Found() || cl.Session.EventsObserved != 2 {
		t.Fatalf("ReadClaim while the writes are held: %+v, want the committed header", cl)
	}
	got := make(chan []workflow.Event, 1)
	go func() {
		evs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	release()
	evs := <-got
	if len(evs) != 8 { // created, instruction, three pairs
		t.Fatalf("%d events after the behind writes, want 8", len(evs))
	}
	for i, call := range []string{"call_a", "call_b", "call_c"} {
		if e := evs[3+2*i]; e.CallID != call || e.Kind != workflow.EventToolCallFinished {
			t.Fatalf("event %d is %s %s, want the finish of %s (queue order)", e.Seq, e.Kind, e.CallID, call)
		}
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatalf("behind write outcome: %v", err)
		}
	}
	rows, err := st.Outbox(ctx, 0, 10)
	if err != nil || len(rows) != 3 || string(rows[0].Body) != "record call_a" || string(rows[2].Body) != "record call_c" {
		t.Fatalf("outbox after the behind writes: %v %v", err, rows)
	}
	if sum, err := st.Status(ctx); err != nil || sum.UnrecordedReads != 0 {
		t.Fatalf("status of the live store: %+v %v", sum, err)
	}

	// Another process queues three reads and is killed before they commit.
	doomed := l.Open(t)
	l.Hold(t, doomed, s.ID)
	for _, call := range []string{"call_d", "call_e", "call_f"} {
		w := workflow.CallWrite{Behind: true, Outbox: []byte("record " + call)}
		if err := workflow.NewService(doomed, nil).FinishCall(ctx, s.ID, time.Now(), w, readPair(call)...); err != nil {
			t.Fatalf("behind write %s: %v", call, err)
		}
	}
	after := l.Crash(t, doomed)
	sum, err := after.Status(ctx)
	if err != nil || sum.UnrecordedReads != 3 {
		t.Fatalf("unrecorded reads after the kill = %d (%v), want 3", sum.UnrecordedReads, err)
	}
	if evs := events(t, after, s.ID); len(evs) != 8 {
		t.Fatalf("events after the kill: %d, want the 8 committed before it", len(evs))
	}
	if rows, err := after.Outbox(ctx, 3, 10); err != nil || len(rows) != 0 {
		t.Fatalf("outbox after the kill holds %d new rows (%v), want none", len(rows), err)
	}
	after.Close()
	again := l.Crash(t, after)
	if sum, err := again.Status(ctx); err != nil || sum.UnrecordedReads != 0 {
		t.Fatalf("unrecorded reads at the second open = %d (%v), want 0", sum.UnrecordedReads, err)
	}
}

// queueRecordAndAKill queues the evidence records of sessionless reads
// (QueueRecord) while the writes are held: the callers do not wait and a
// flush commits them in order into the outbox; on another process, a
// kill -9 before the commit leaves them counted as unrecorded reads by
// the next process, with the reads of sessions.
func queueRecordAndAKill(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	release := l.Hold(t, st, "")
	done := make(chan error, 2)
	for _, body := range []string{"sessionless a", "sessionless b"} {
		if err := st.QueueRecord(ctx, []byte(body), func(err error) { done <- err }); err != nil {
			t.Fatalf("QueueRecord %s: %v", body, err)
		}
	}
	release()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("queued record outcome: %v", err)
		}
	}
	rows, err := st.Outbox(ctx, 0, 10)
	if err != nil || len(rows) != 2 || string(rows[0].Body) != "sessionless a" || string(rows[1].Body) != "sessionless b" {
		t.Fatalf("outbox after the flush: %v %v", err, rows)
	}

	doomed := l.Open(t)
	l.Hold(t, doomed, "")
	for _, body := range []string{"sessionless c", "sessionless d"} {
		if err := doomed.QueueRecord(ctx, []byte(body), nil); err != nil {
			t.Fatalf("QueueRecord %s: %v", body, err)
		}
	}
	after := l.Crash(t, doomed)
	if sum, err := after.Status(ctx); err != nil || sum.UnrecordedReads != 2 {
		t.Fatalf("unrecorded reads after the kill = %d (%v), want 2", sum.UnrecordedReads, err)
	}
	if rows, err := after.Outbox(ctx, rows[1].Seq, 10); err != nil || len(rows) != 0 {
		t.Fatalf("outbox after the kill holds %d new rows (%v), want none", len(rows), err)
	}
}

// trimOutbox deletes rows up to a sequence and keeps the rest.
func trimOutbox(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	for _, call := range []string{"call_a", "call_b", "call_c"} {
		if err := svc.FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte(call)}, readPair(call)...); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := st.Outbox(ctx, 0, 10)
	if len(rows) != 3 {
		t.Fatalf("%d outbox rows, want 3", len(rows))
	}
	if err := st.TrimOutbox(ctx, rows[1].Seq); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := st.Outbox(ctx, 0, 10)
	if err != nil || len(left) != 1 || string(left[0].Body) != "call_c" {
		t.Fatalf("outbox after the trim: %v %v, want only call_c", left, err)
	}
	if after, _ := st.Outbox(ctx, rows[2].Seq, 10); len(after) != 0 {
		t.Fatalf("rows after the last: %v", after)
	}
}

// outboxSeqNeverGoesBack: a trim up to the newest row keeps that row, and
// the next row (in this process and after a restart) takes a seq above
// every seq given out before; the journal's watermark would skip a reused
// one, losing its record.
func outboxSeqNeverGoesBack(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	s := start(t, workflow.NewService(st, nil))
	store := func(st Store, call string) int64 {
		t.Helper()
		if err := workflow.NewService(st, nil).FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte(call)}, readPair(call)...); err != nil {
			t.Fatal(err)
		}
		rows, err := st.Outbox(ctx, 0, 100)
		if err != nil || len(rows) == 0 || string(rows[len(rows)-1].Body) != call {
			t.Fatalf("outbox after storing %s: %v %v", call, rows, err)
		}
		return rows[len(rows)-1].Seq
	}
	trimAll := func(st Store, upTo int64) {
		t.Helper()
		if err := st.TrimOutbox(ctx, upTo+10); err != nil {
			t.Fatal(err)
		}
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rows, err := st.Outbox(ctx, 0, 100)
		if err != nil || len(rows) != 1 || rows[0].Seq != upTo {
			t.Fatalf("outbox after trimming past the newest row %d: %v %v, want only that row", upTo, rows, err)
		}
	}
	a := store(st, "call_a")
	b := store(st, "call_b")
	trimAll(st, b)
	c := store(st, "call_c")
	if !(a < b && b < c) {
		t.Fatalf("seqs %d, %d, %d do not increase", a, b, c)
	}
	trimAll(st, c)
	st.Close()
	st = l.Open(t)
	if d := store(st, "call_d"); d <= c {
		t.Fatalf("seq after a restart %d, want above %d", d, c)
	}
}
