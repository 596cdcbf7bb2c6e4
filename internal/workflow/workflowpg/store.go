package workflowpg

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

const storeName = "session store"

// Store is the PostgreSQL Workflow Session store. Every fact a write is
// judged on is read under the session row's lock (SELECT … FOR UPDATE),
// so replicas appending to one session take turns; reads go to the
// database every time.
type Store struct {
	db  *pgdb.DB
	now func() time.Time
	// inst is this process's claim on the ledger (instance.go).
	inst *instance
	// checks are this process's first-use validations (see check).
	checks workflowrow.Checks
	// w is the writer of behind writes (behind.go).
	w writer
	// unrecorded is the number of reads acknowledged by dead processes
	// and never committed, found by Open and by OpenCalls.
	unrecorded atomic.Int64
}

var _ workflow.Store = (*Store)(nil)

// RestoreReport counts rows validated and moved aside: by this process's
// first-use checks so far ([Store.Restored]) or by one full pass
// ([Store.ValidateAll]).
type RestoreReport = workflowrow.RestoreReport

// OutboxRow is one evidence outbox row.
type OutboxRow = workflowrow.OutboxRow

// Open migrates the schema workflow of db, registers this process as a
// live instance (holding its advisory lock on a connection of its own)
// and starts the writer of behind writes. The pool stays the caller's;
// Close releases what Open took. now may be nil. Errors: those of
// pgdb.DB.Migrate (failure.Conflict for a newer schema), or
// failure.Unavailable.
func Open(ctx context.Context, db *pgdb.DB, now func() time.Time) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	s := &Store{db: db, now: now}
	var err error
	if s.inst, err = register(ctx, db, now()); err != nil {
		return nil, err
	}
	n, err := s.countUnrecorded(ctx)
	if err != nil {
		s.inst.close(ctx, db)
		return nil, storeErr(err)
	}
	s.unrecorded.Store(n)
	s.w.start(s)
	return s, nil
}

// Close commits the writes queued so far, then releases this process's
// instance: its open calls (none, after a clean stop) become another
// replica's to recover.
func (s *Store) Close() error {
	s.w.stop()
	return s.inst.close(context.Background(), s.db)
}

// Lost is closed when this process's claim on the ledger was lost for
// good: its lock's connection was lost and another instance forgot it
// meanwhile (and may have recovered its open calls). The process must
// stop writing: LostErr says why.
func (s *Store) Lost() <-chan struct{} { return s.inst.hold.Lost() }

// LostErr is why the claim was lost, nil while it holds.
func (s *Store) LostErr() error { return s.inst.hold.Err() }

// Restored reports what this process's first-use checks have validated and
// moved aside so far (rows moved by ValidateAll are in Discarded too).
func (s *Store) Restored() RestoreReport {
	return s.checks.Report()
}

// Shared reports true: several replicas may serve one database, so this
// process never assumes it alone has the ledger open.
func (s *Store) Shared() bool { return true }

// Remembered reports false: this store keeps no header in process memory
// (workflow.Service.RememberedClaim then reads the session).
func (s *Store) Remembered(string) (workflow.Session, string, bool) {
	return workflow.Session{}, "", false
}

func storeErr(err error) error { return pgdb.StoreError(err, storeName) }

// Status implements workflow.Store.
func (s *Store) Status(ctx context.Context) (workflow.StoreStatus, error) {
	var st workflow.StoreStatus
	err := s.db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM workflow.sessions),
		(SELECT count(*) FROM workflow.sessions WHERE lifecycle = 'active'),
		(SELECT coalesce(sum(retained), 0)::bigint FROM workflow.sessions),
		(SELECT count(*) FROM workflow.discarded_rows)`).Scan(&st.Sessions, &st.ActiveSessions, &st.Events, &st.DiscardedRows)
	st.UnrecordedReads = s.unrecorded.Load()
	return st, storeErr(err)
}

// unknown is the error of a session that does not exist.
func unknown(id string) error {
	return failure.New(failure.UnknownSessionID, "no Workflow Session %s exists", id)
}
