package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// openReplicas opens n stores on one fresh database, each on a pool of its
// own (n replicas), and returns them with the test's own pool.
func openReplicas(t *testing.T, n int) (*pgdb.DB, []*Store) {
	t.Helper()
	u := pgtest.URL(t)
	admin := replica(t, u, "test")
	var out []*Store
	for i := range n {
		out = append(out, open(t, replica(t, u, fmt.Sprint("replica_", i))))
	}
	return admin, out
}

func startSession(t *testing.T, st *Store) workflow.Session {
	t.Helper()
	s, err := workflow.NewService(st, nil).Start(context.Background(), workflow.StartParams{Project: "agent:local:demo", Fingerprint: auth.Fingerprint("local"), Instruction: "fix it"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTwoReplicasAppendToOneSession: two replicas appending to one
// session at once get distinct, consecutive seqs, and the header's
// counters and retained count add up.
func TestTwoReplicasAppendToOneSession(t *testing.T) {
	ctx := context.Background()
	_, st := openReplicas(t, 2)
	s := startSession(t, st[0])
	const writers, each = 8, 15
	var wg sync.WaitGroup
	for w := range writers {
		svc := workflow.NewService(st[w%2], nil)
		wg.Go(func() {
			for i := range each {
				call := fmt.Sprintf("call_%d_%d", w, i)
				if err := svc.FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte(call)},
					workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: call, Role: workflow.RoleRecorder},
					workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: call, Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := st[1].Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.EventsObserved != 2+2*writers*each || got.Counters.ToolCalls != writers*each {
		t.Fatalf("events_observed=%d tool_calls=%d, want %d and %d", got.EventsObserved, got.Counters.ToolCalls, 2+2*writers*each, writers*each)
	}
	evs, err := st[0].Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: gaps or duplicates", i, e.Seq)
		}
	}
	if status, err := st[0].Status(ctx); err != nil || status.Events != got.EventsObserved {
		t.Fatalf("retained %d events (%v), want %d", status.Events, err, got.EventsObserved)
	}
	rows, err := st[0].Outbox(ctx, 0, 1000)
	if err != nil || len(rows) != writers*each {
		t.Fatalf("%d outbox rows (%v), want %d", len(rows), err, writers*each)
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) {
			t.Fatalf("outbox row %d has seq %d: gaps or duplicates", i, r.Seq)
		}
	}
}

// TestAppendLocksTheSessionRow: while one replica's Update judges a
// session, another replica's append to it waits for the session row's
// lock and then appends after it. Without the lock the second would
// judge the stale header and both would write the same seq.
func TestAppendLocksTheSessionRow(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 2)
	s := startSession(t, st[0])
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	first := make(chan error, 1)
	go func() {
		_, _, err := st[0].Update(ctx, s.ID, func(sess *workflow.Session) ([]workflow.Event, error) {
			close(inside)
			<-release
			return []workflow.Event{{Kind: workflow.EventTaskInstruction, Text: "first"}}, nil
		})
		first <- err
	}()
	<-inside
	second := make(chan error, 1)
	go func() {
		second <- st[1].AppendCall(ctx, s.ID, func(*workflow.Session) ([]workflow.Event, error) {
			return []workflow.Event{{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: "call_1", Role: workflow.RoleRecorder}}, nil
		}, workflow.CallWrite{})
	}()
	pgtest.AwaitLockWait(t, admin, second, "the write")
	letGo()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second append: %v", err)
	}
	evs, err := st[1].Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 || evs[2].Text != "first" || evs[3].CallID != "call_1" || evs[3].Seq != 4 {
		t.Fatalf("events %+v, want the first update's at seq 3 and the append's at seq 4", evs)
	}
	if got, _ := st[0].Get(ctx, s.ID); got.EventsObserved != 4 || got.Counters.ToolCalls != 1 || got.Counters.Instructions != 2 {
		t.Fatalf("header %+v", got)
	}
}

// TestOutboxSeqWaitsForTheHead: a transaction holding the outbox head
// (as a replica's commit in flight does, with its row not yet visible)
// makes another outbox write wait, which then takes the next seq: rows
// become visible in seq order, and no seq is given out twice.
func TestOutboxSeqWaitsForTheHead(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	s := startSession(t, st[0])
	tx, err := admin.Pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	var held int64
	if err := tx.QueryRow(ctx, `UPDATE workflow.outbox_head SET next_seq = next_seq + 1 RETURNING next_seq - 1`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO workflow.evidence_outbox (seq, body) VALUES ($1, 'in flight')`, held); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- workflow.NewService(st[0], nil).FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte("mine")},
			workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: "call_1", Role: workflow.RoleRecorder},
			workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: "call_1", Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK})
	}()
	pgtest.AwaitLockWait(t, admin, done, "the write")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the outbox write after the head was released: %v", err)
	}
	rows, err := st[0].Outbox(ctx, 0, 10)
	if err != nil || len(rows) != 2 || rows[0].Seq != held || string(rows[1].Body) != "mine" || rows[1].Seq != held+1 {
		t.Fatalf("outbox %v %v, want the held row at %d and mine after it", rows, err, held)
	}
	if n, err := st[0].PendingOutbox(ctx, held); err != nil || n != 1 {
		t.Fatalf("rows pending above %d: %d %v, want 1", held, n, err)
	}
}

// TestOpenCallsOfAKilledReplica: a replica's open calls are running while
// it lives and are never returned to another; once the server has ended
// its instance connection (what a kill -9 comes to), they are returned.
func TestOpenCallsOfAKilledReplica(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 2)
	s := startSession(t, st[0])
	if _, _, err := workflow.NewService(st[0], nil).Append(ctx, s.ID,
		workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "run_process", CallID: "call_live", InvocationID: "inv_1", Role: workflow.RoleBusiness}); err != nil {
		t.Fatal(err)
	}
	for i, replica := range st {
		if calls, err := replica.OpenCalls(ctx, 0); err != nil || len(calls) != 0 {
			t.Fatalf("replica %d sees the live call as cut off: %+v %v", i, calls, err)
		}
	}
	kill(t, admin, st[0])
	calls, err := st[1].OpenCalls(ctx, 0)
	if err != nil || len(calls) != 1 || calls[0].CallID != "call_live" || calls[0].SessionID != s.ID || calls[0].StartedSeq != 3 {
		t.Fatalf("open calls after the kill: %+v %v", calls, err)
	}
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	open(t, db)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO workflow.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, db, nil); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "workflow") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}

// holdSession locks session id's row in a transaction of the test's own,
// released by the returned function (and at cleanup).
func holdSession(t *testing.T, db *pgdb.DB, id string) func() {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { tx.Rollback(ctx) }) }
	t.Cleanup(release)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM workflow.sessions WHERE session_id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return release
}

func behindRead(t *testing.T, st *Store, id, call string, done chan<- error) {
	t.Helper()
	w := workflow.CallWrite{Behind: true, Done: func(err error) { done <- err }}
	if err := workflow.NewService(st, nil).FinishCall(context.Background(), id, time.Now(), w,
		workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: call, Role: workflow.RoleRecorder},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: call, Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
}

// TestBehindWritesShareATransaction: the behind writes queued while the
// writer commits share its next transaction (their rows carry one xmin),
// as the SQLite writer batches them, at most BatchMax of them.
func TestBehindWritesShareATransaction(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	s := startSession(t, st[0])
	release := holdSession(t, admin, s.ID)
	done := make(chan error, BatchMax+2)
	behindRead(t, st[0], s.ID, "call_0", done)
	pgtest.AwaitLockWait(t, admin, done, "the write") // the writer has taken call_0 and waits
	var first []string
	for i := 1; i <= BatchMax+1; i++ {
		call := fmt.Sprint("call_", i)
		behindRead(t, st[0], s.ID, call, done)
		if i <= BatchMax {
			first = append(first, call)
		}
	}
	release()
	if err := st[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for range BatchMax + 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	txs := func(calls []string) (n int) {
		t.Helper()
		if err := admin.Pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM workflow.events
			WHERE session_id = $1 AND call_id = ANY($2)`, s.ID, calls).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := txs(first); n != 1 {
		t.Fatalf("the first BatchMax reads queued behind a commit took %d transactions, want 1", n)
	}
	if n := txs(append(first, fmt.Sprint("call_", BatchMax+1))); n != 2 {
		t.Fatalf("BatchMax+1 reads took %d transactions, want 2 (a batch holds at most BatchMax)", n)
	}
}

// TestQueueCapacity: QueueCapacity writes queue behind a writer that
// cannot commit, and the next waits for room until its context ends.
func TestQueueCapacity(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	s := startSession(t, st[0])
	holdSession(t, admin, s.ID)
	done := make(chan error, 1)
	behindRead(t, st[0], s.ID, "call_0", done)
	pgtest.AwaitLockWait(t, admin, done, "the write") // the writer has taken it: the queue is empty
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for i := range QueueCapacity {
		if err := st[0].TrimOutbox(ended, 0); err != nil {
			t.Fatalf("write %d of %d: %v", i+1, QueueCapacity, err)
		}
	}
	if err := st[0].TrimOutbox(ended, 0); !failure.Is(err, failure.Unavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a write past QueueCapacity: %v, want unavailable (the queue is full)", err)
	}
}

// TestARefusedBehindWriteLeavesItsBatch: a behind write refused in a
// batch (its claim changed) reports workflow.ErrClaimChanged, writing
// nothing, and the writes batched with it commit.
func TestARefusedBehindWriteLeavesItsBatch(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	s := startSession(t, st[0])
	stale, err := st[0].GetCommitted(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.NewService(st[0], nil).Continue(ctx, s.ID, "and the docs", ""); err != nil {
		t.Fatal(err)
	}
	release := holdSession(t, admin, s.ID)
	done := make(chan error, 4)
	behindRead(t, st[0], s.ID, "call_0", done)
	pgtest.AwaitLockWait(t, admin, done, "the write")
	behindRead(t, st[0], s.ID, "call_1", done)
	refused := make(chan error, 1)
	if err := st[0].AppendCall(ctx, s.ID, func(*workflow.Session) ([]workflow.Event, error) {
		return []workflow.Event{{Kind: workflow.EventTaskInstruction, Text: "judged on a stale header"}}, nil
	}, workflow.CallWrite{Behind: true, Claimed: workflowrow.EncodeHeader(stale), Outbox: []byte("refused"), Done: func(err error) { refused <- err }}); err != nil {
		t.Fatal(err)
	}
	behindRead(t, st[0], s.ID, "call_2", done)
	release()
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-refused; !errors.Is(err, workflow.ErrClaimChanged) {
		t.Fatalf("the stale claim's outcome: %v, want ErrClaimChanged", err)
	}
	evs, err := st[0].Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, e := range evs {
		if e.Text == "judged on a stale header" {
			t.Fatalf("the refused write was stored: %+v", e)
		}
		if e.Kind == workflow.EventToolCallFinished {
			calls = append(calls, e.CallID)
		}
	}
	if fmt.Sprint(calls) != "[call_0 call_1 call_2]" {
		t.Fatalf("finished calls %v, want the three reads in order", calls)
	}
	if rows, err := st[0].Outbox(ctx, 0, 10); err != nil || len(rows) != 0 {
		t.Fatalf("outbox %v %v: the refused write's row was stored", rows, err)
	}
}

// directCall appends a recorded call's started and finished events to
// session id as a direct (acknowledged) write, sending its outcome to done.
func directCall(ctx context.Context, st *Store, id, call string, done chan<- error) {
	done <- workflow.NewService(st, nil).FinishCall(ctx, id, time.Now(), workflow.CallWrite{Outbox: []byte(call)},
		workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "write_project_file", CallID: call, Role: workflow.RoleRecorder},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "write_project_file", CallID: call, Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK})
}

// TestDirectWritesShareATransaction: acknowledged writes of different
// sessions queued while the writer commits share its next transaction
// (group commit: their rows carry one xmin), each returning only once it
// has committed.
func TestDirectWritesShareATransaction(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	held := startSession(t, st[0])
	release := holdSession(t, admin, held.ID)
	done := make(chan error, 16)
	go directCall(ctx, st[0], held.ID, "call_held", done)
	pgtest.AwaitLockWait(t, admin, done, "the write") // the writer has taken it and waits
	const n = 8
	var ids []string
	for i := range n {
		ids = append(ids, startSession(t, st[0]).ID)
		go directCall(ctx, st[0], ids[i], fmt.Sprint("call_", i), done)
	}
	for len(st[0].w.queue) < n {
		runtime.Gosched() // until all n are queued behind the held batch
	}
	select {
	case err := <-done:
		t.Fatalf("a direct write returned before its batch committed: %v", err)
	default:
	}
	release()
	for range n + 1 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var txs int
	if err := admin.Pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM workflow.events WHERE session_id = ANY($1) AND call_id <> ''`, ids).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if txs != 1 {
		t.Fatalf("%d direct writes queued behind one commit took %d transactions, want 1", n, txs)
	}
}

// TestADirectWriteCutOffSaysItMayCommit: a direct write whose context
// ends while its batch waits is outcome_unknown, not a failure: the
// batch still commits it.
func TestADirectWriteCutOffSaysItMayCommit(t *testing.T) {
	ctx := context.Background()
	admin, st := openReplicas(t, 1)
	s := startSession(t, st[0])
	release := holdSession(t, admin, s.ID)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go directCall(cctx, st[0], s.ID, "call_cut", done)
	pgtest.AwaitLockWait(t, admin, done, "the write")
	cancel()
	if err := <-done; !failure.Is(err, failure.OutcomeUnknown) {
		t.Fatalf("a direct write cut off while queued: %v, want outcome_unknown", err)
	}
	release()
	if err := st[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := admin.Pool.QueryRow(ctx, `SELECT count(*) FROM workflow.events WHERE session_id = $1 AND call_id = 'call_cut'`, s.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("the cut-off write left %d events, want both (it committed)", n)
	}
}
