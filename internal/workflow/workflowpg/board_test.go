package workflowpg

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/boardtest"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// openBoard opens a Board over a new pool on the database at url, both
// closed when t ends (the Board first).
func openBoard(t testing.TB, url string) (*Board, *pgdb.DB) {
	t.Helper()
	db, err := pgdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	b, err := OpenBoard(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, db
}

// createSession stores a new active session's row as workflowdb's Create
// does (the header the workflow package applies its first events to,
// encoded by workflowrow): the ledger Store is not this file's subject.
func createSession(t testing.TB, db *pgdb.DB) workflow.Session {
	t.Helper()
	now := time.Now().UTC()
	sess := workflow.Session{ID: workflow.NewSessionID(), Project: "agent:local:demo", Title: "fix the flaky test",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, OwnerFingerprint: auth.Fingerprint("local"), CreatedAt: now, UpdatedAt: now}
	evs, _ := workflow.Apply(&sess, []workflow.Event{
		{Kind: workflow.EventSessionCreated, At: now, Facts: map[string]string{"mode": string(sess.Mode)}},
		{Kind: workflow.EventTaskInstruction, At: now, Text: "fix the flaky test"},
	}, now, 0)
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO workflow.sessions
		(session_id, project, owner_fp, lifecycle, updated_at, retained, header_json) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		sess.ID, sess.Project, sess.OwnerFingerprint, string(sess.Lifecycle), sess.UpdatedAt.UnixNano(), len(evs),
		workflowrow.EncodeHeader(sess)); err != nil {
		t.Fatal(err)
	}
	return sess
}

// closeSession rewrites session id's header closed, as the ledger's close
// does (its event is not this file's subject).
func closeSession(t testing.TB, db *pgdb.DB, id string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), qCloseSession, closeArgs(t, db, id)...); err != nil {
		t.Fatal(err)
	}
}

// qCloseSession stores a closed header (closeArgs).
const qCloseSession = `UPDATE workflow.sessions SET lifecycle = $2, updated_at = $3, header_json = $4 WHERE session_id = $1`

// closeArgs are the arguments of qCloseSession closing session id now.
func closeArgs(t testing.TB, db *pgdb.DB, id string) []any {
	t.Helper()
	var hdr string
	if err := db.Pool.QueryRow(context.Background(), `SELECT header_json FROM workflow.sessions WHERE session_id = $1`, id).Scan(&hdr); err != nil {
		t.Fatal(err)
	}
	sess, err := workflowrow.DecodeHeader([]byte(hdr))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	sess.Lifecycle, sess.ClosedAt, sess.UpdatedAt = workflow.Closed, &now, now
	return []any{id, string(sess.Lifecycle), now.UnixNano(), workflowrow.EncodeHeader(sess)}
}

// pgLedger is a PostgreSQL database under the board contract, with
// replicas.
type pgLedger struct {
	url   string
	db    *pgdb.DB
	board *Board
}

func (l *pgLedger) Store() boardtest.Store { return l.board }

func (l *pgLedger) Start(t testing.TB) workflow.Session { return createSession(t, l.db) }

func (l *pgLedger) Close(t testing.TB, id string) { closeSession(t, l.db, id) }

// Reopen closes the Board and its pool and opens new ones on the same
// database: a restart, or another replica.
func (l *pgLedger) Reopen(t testing.TB) {
	t.Helper()
	l.board.Close()
	l.db.Close()
	l.board, l.db = openBoard(t, l.url)
}

// Replica opens another Board, on a pool of its own, over the same
// database: a second replica.
func (l *pgLedger) Replica(t testing.TB) boardtest.Store {
	b, _ := openBoard(t, l.url)
	return b
}

func (l *pgLedger) Flush(t testing.TB) {
	t.Helper()
	if err := l.board.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestBoardContract runs the board contract suite on PostgreSQL.
func TestBoardContract(t *testing.T) {
	boardtest.Run(t, func(t *testing.T) boardtest.Ledger {
		l := &pgLedger{url: pgtest.URL(t)}
		l.board, l.db = openBoard(t, l.url)
		return l
	})
}

// TestReplicasShareTheObservationKey: replicas opening one new database at
// once all load the one key the first of them stored.
func TestReplicasShareTheObservationKey(t *testing.T) {
	url := pgtest.URL(t)
	const n = 4
	keys := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := pgdb.Open(context.Background(), url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			b, err := OpenBoard(context.Background(), db)
			if err != nil {
				errs[i] = err
				return
			}
			defer b.Close()
			keys[i] = string(b.ObservationKey())
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || keys[i] != keys[0] || len(keys[i]) != workflow.ObservationKeyBytes {
			t.Fatalf("replica %d: key of %d bytes, same as the first: %v (%v)", i, len(keys[i]), keys[i] == keys[0], errs[i])
		}
	}
}
