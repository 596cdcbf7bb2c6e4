package workflowdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
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
