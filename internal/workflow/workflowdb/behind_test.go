package workflowdb_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// readPair is the events a read-only call records: started and finished
// in one append.
func readPair(call string) []workflow.Event {
	return []workflow.Event{
		{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: call, InvocationID: "inv_" + call, Role: workflow.RoleRecorder},
		{Kind: workflow.EventToolCallFinished, Tool: "read_files", CallID: call, InvocationID: "inv_" + call, Role: workflow.RoleRecorder, Outcome: workflow.OutcomeOK},
	}
}

// copyDir copies the regular files of src (and of its subdirectories one
// level down) to dst: taken while the process runs, it is what a kill -9
// at that moment leaves (written pages are in the files; nothing queued in
// memory is).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		if strings.HasSuffix(p, "-shm") { // rebuilt from the WAL on open
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBehindWritesAndAKill queues read-only calls' events behind their
// callers while the writer is held, and checks that the callers did not
// wait, that a reader of the session waits for them and sees them in
// order with their outbox rows, and that a kill -9 at that moment (a copy
// of the data directory) leaves them counted as unrecorded by the next
// process to open the ledger, never silently missing.
func TestBehindWritesAndAKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := open(t, filepath.Join(dir, "workflow.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)

	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- st.DB().Writer.Do(ctx, func(context.Context, *sql.Tx) error { close(entered); <-release; return nil })
	}()
	<-entered
	done := make(chan error, 3)
	for _, call := range []string{"call_a", "call_b", "call_c"} {
		w := workflow.CallWrite{Behind: true, Outbox: []byte("record " + call), Done: func(err error) { done <- err }}
		// Returns while the writer is held: the caller never waits.
		if err := svc.FinishCall(ctx, s.ID, time.Now(), w, readPair(call)...); err != nil {
			t.Fatalf("behind write %s: %v", call, err)
		}
	}
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	// A claim check does not wait for them: the header as committed, whose
	// lifecycle, owner and project a behind write never changes.
	if c, err := st.GetCommitted(ctx, s.ID); err != nil || c.EventsObserved != 2 || c.Lifecycle != workflow.Active {
		t.Fatalf("GetCommitted while the writer is held: %+v %v, want the committed header (2 events)", c, err)
	}
	if cl := svc.ReadClaim(ctx, s.ID); !cl.Found() || cl.Session.EventsObserved != 2 {
		t.Fatalf("ReadClaim while the writer is held: %+v, want the committed header", cl)
	}

	// A reader of the session waits for the queued writes.
	got := make(chan []workflow.Event, 1)
	go func() {
		evs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
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

	// The copy is the directory as kill -9 left it: the three reads were
	// acknowledged (the instance file says 3) and none was committed.
	after := open(t, filepath.Join(crashed, "workflow.db"))
	st2, err := after.Status(ctx)
	if err != nil || st2.UnrecordedReads != 3 {
		t.Fatalf("unrecorded reads after the kill = %d (%v), want 3", st2.UnrecordedReads, err)
	}
	evs2, err := after.Events(ctx, s.ID, 0)
	if err != nil || len(evs2) != 2 {
		t.Fatalf("events after the kill: %d (%v), want the 2 committed before it", len(evs2), err)
	}
	if rows, err := after.Outbox(ctx, 0, 10); err != nil || len(rows) != 0 {
		t.Fatalf("outbox after the kill holds %d rows (%v), want none", len(rows), err)
	}
	after.Close()
	// Counted once: the next open finds nothing more.
	again := open(t, filepath.Join(crashed, "workflow.db"))
	if st3, err := again.Status(ctx); err != nil || st3.UnrecordedReads != 0 {
		t.Fatalf("unrecorded reads at the second open = %d (%v), want 0", st3.UnrecordedReads, err)
	}
}

// TestQueueRecordAndAKill queues the evidence records of sessionless
// reads (QueueRecord) while the writer is held: the callers do not wait,
// a flush commits them in order into the outbox, and a kill -9 before the
// commit (a copy of the data directory) leaves them counted as unrecorded
// reads by the next process, with the reads of sessions.
func TestQueueRecordAndAKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := open(t, filepath.Join(dir, "workflow.db"))
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- st.DB().Writer.Do(ctx, func(context.Context, *sql.Tx) error { close(entered); <-release; return nil })
	}()
	<-entered
	done := make(chan error, 2)
	for _, body := range []string{"sessionless a", "sessionless b"} {
		if err := st.QueueRecord(ctx, []byte(body), func(err error) { done <- err }); err != nil {
			t.Fatalf("QueueRecord %s: %v", body, err)
		}
	}
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
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
	after := open(t, filepath.Join(crashed, "workflow.db"))
	if sum, err := after.Status(ctx); err != nil || sum.UnrecordedReads != 2 {
		t.Fatalf("unrecorded reads after the kill = %d (%v), want 2", sum.UnrecordedReads, err)
	}
	if rows, err := after.Outbox(ctx, 0, 10); err != nil || len(rows) != 0 {
		t.Fatalf("outbox after the kill holds %d rows (%v), want none", len(rows), err)
	}
}

// TestTrimOutbox deletes rows up to a sequence and keeps the rest.
func TestTrimOutbox(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
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

// TestOutboxSeqNeverGoesBack: a trim up to the newest row keeps that row,
// so the next row (in this process and after a restart) takes a seq above
// every seq given out before; the journal's watermark would skip a reused
// one, losing its record.
func TestOutboxSeqNeverGoesBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st := open(t, path)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	store := func(st *workflowdb.Store, svc *workflow.Service, call string) int64 {
		t.Helper()
		if err := svc.FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte(call)}, readPair(call)...); err != nil {
			t.Fatal(err)
		}
		rows, err := st.Outbox(ctx, 0, 100)
		if err != nil || len(rows) == 0 || string(rows[len(rows)-1].Body) != call {
			t.Fatalf("outbox after storing %s: %v %v", call, rows, err)
		}
		return rows[len(rows)-1].Seq
	}
	trimAll := func(st *workflowdb.Store, upTo int64) {
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
	a := store(st, svc, "call_a")
	b := store(st, svc, "call_b")
	trimAll(st, b)
	c := store(st, svc, "call_c")
	if !(a < b && b < c) {
		t.Fatalf("seqs %d, %d, %d do not increase", a, b, c)
	}
	trimAll(st, c)
	st.Close()
	st = open(t, path)
	d := store(st, workflow.NewService(st, nil), "call_d")
	if d <= c {
		t.Fatalf("seq after a restart %d, want above %d", d, c)
	}
}

// TestOutboxMigrationKeepsTheSequence: migration 0007 drops the outbox's
// AUTOINCREMENT; a ledger whose outbox was trimmed empty (the old
// sequence alone remembers its last seq) or left holding rows continues
// above the last seq the old table gave out.
func TestOutboxMigrationKeepsTheSequence(t *testing.T) {
	for _, left := range []int{0, 2} {
		t.Run(fmt.Sprint("rows_left=", left), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "workflow.db")
			st := open(t, path)
			// Back to the outbox of migration 0004: seqs 1..5 given out,
			// all but the last left ones trimmed.
			if err := st.DB().Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
				for _, q := range []string{
					`DROP TABLE evidence_outbox`,
					`CREATE TABLE evidence_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, body BLOB NOT NULL)`,
					`INSERT INTO evidence_outbox (body) VALUES ('r1'), ('r2'), ('r3'), ('r4'), ('r5')`,
					fmt.Sprintf(`DELETE FROM evidence_outbox WHERE seq <= %d`, 5-left),
					`DROP INDEX messages_by_reply`,
					`CREATE INDEX messages_by_reply ON messages(session_id, reply_to, seq)`,
					`DELETE FROM schema_migrations WHERE name = '0007_leaner_commits.sql'`,
				} {
					if _, err := tx.ExecContext(ctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			st = open(t, path)
			var auto int
			if err := st.DB().Read.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'evidence_outbox' AND sql LIKE '%AUTOINCREMENT%'`).Scan(&auto); err != nil || auto != 0 {
				t.Fatalf("outbox still AUTOINCREMENT after the migration (%d, %v)", auto, err)
			}
			rows, err := st.Outbox(ctx, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, r := range rows {
				seqs = append(seqs, r.Seq)
			}
			want := []int64{5} // the old sequence's last value, an empty row
			if left > 0 {
				want = []int64{4, 5}
			}
			if fmt.Sprint(seqs) != fmt.Sprint(want) {
				t.Fatalf("outbox seqs after the migration %v, want %v", seqs, want)
			}
			if left == 0 && len(rows[0].Body) != 0 {
				t.Fatalf("the kept sequence row has a body %q", rows[0].Body)
			}
			svc := workflow.NewService(st, nil)
			s := start(t, svc)
			if err := svc.FinishCall(ctx, s.ID, time.Now(), workflow.CallWrite{Outbox: []byte("new")}, readPair("call_new")...); err != nil {
				t.Fatal(err)
			}
			if rows, err := st.Outbox(ctx, 5, 10); err != nil || len(rows) != 1 || rows[0].Seq != 6 || string(rows[0].Body) != "new" {
				t.Fatalf("the first row after the migration: %v %v, want seq 6", rows, err)
			}
		})
	}
}

// TestHeaderCacheFollowsTheStoredBytes checks that a header changed in
// the database behind the store's back (another process, an operator) is
// read as stored, never from the cache of its previous bytes, and that a
// malformed one is an error, not the cached value.
func TestHeaderCacheFollowsTheStoredBytes(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
	s := start(t, workflow.NewService(st, nil))
	if got, err := st.Get(ctx, s.ID); err != nil || got.Title != s.Title {
		t.Fatalf("get: %+v %v", got, err)
	}
	set := func(hdr string) {
		if err := st.DB().Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE sessions SET header_json = ? WHERE session_id = ?`, hdr, s.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	changed := s
	changed.Title = "renamed elsewhere"
	b, _ := json.Marshal(changed)
	set(string(b))
	if got, err := st.Get(ctx, s.ID); err != nil || got.Title != "renamed elsewhere" {
		t.Fatalf("get after the row changed: title %q %v, want the stored one", got.Title, err)
	}
	set(`{"session_id":"` + s.ID + `","bogus":1}`)
	if got, err := st.Get(ctx, s.ID); err == nil {
		t.Fatalf("get of a malformed header returned %+v, want an error", got)
	}
}

// TestBoardReadersSeeBehindBoardWrites: a board read waits for the behind
// board writes queued before it (projection facts, fetches), so that it
// sees every acknowledged call. The writer gathers behind writes for an
// hour here: without the wait the read would find the write uncommitted.
func TestBoardReadersSeeBehindBoardWrites(t *testing.T) {
	ctx := context.Background()
	e := newBoardEnv(t)
	m := e.post(t, workflow.PostParams{Kind: workflow.MessageNote, Body: "context"})
	e.st.DB().Writer.GatherBehind(time.Hour)
	done := make(chan error, 1)
	err := e.st.UpdateBoardBehind(ctx, e.sess.ID, func(w workflow.BoardWriter) error {
		got, ok, err := w.Message(m.ID)
		if err != nil || !ok {
			return fmt.Errorf("message %s: %v %v", m.ID, ok, err)
		}
		got.ProjectionCount++
		return w.Save(got)
	}, func(err error) { done <- err })
	if err != nil {
		t.Fatal(err)
	}
	var count int64
	if err := e.st.ViewBoard(ctx, e.sess.ID, func(r workflow.BoardReader) error {
		got, _, err := r.Message(m.ID)
		count = got.ProjectionCount
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if count != m.ProjectionCount+1 {
		t.Errorf("projection count seen by the board read = %d, want %d (the behind write queued before it)", count, m.ProjectionCount+1)
	}
	if err := e.st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
