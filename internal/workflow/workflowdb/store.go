// Package workflowdb implements [workflow.Store] on SQLite (workflow.db).
//
// Session headers are kept as canonical JSON (the exact bytes restore
// returns) beside a few indexed columns; events are stored column by column
// so that a session's rows validate without decoding a document per row. Every mutation goes through the database's group-commit writer
// and is durable (WAL, synchronous=FULL) when the method returns.
//
// # Restore
//
// [Open] reads no session or event row, so start-up does not grow with
// the ledger (decision 0021). Each session is validated the first time this
// process uses it (Get, Update, Events, or a List that meets a malformed
// header): a header or event that does not validate is moved to the
// discarded_rows table (kept for forensics, never served) and counted in
// [workflow.StoreStatus.DiscardedRows] from then on; valid rows are
// unaffected. [Store.ValidateAll] is the full pass over every row.
package workflowdb

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite Workflow Session store.
type Store struct {
	db  *sqlitedb.DB
	now func() time.Time
	// inst is this process's claim on the ledger; open calls carry it.
	inst *instance
	// checks are this process's first-use validations (see check).
	checks workflowrow.Checks
	// board holds the message board's writer statements (messages.go).
	board boardStatements
	// boardReads puts the board's fixed read queries in the read pool's
	// statement cache, once, before the first read snapshot.
	boardReads sync.Once
	// stmts are Update's statements, prepared once on the writer.
	stmts struct {
		header, insertEvent, trim, updateHeader, updateKnown, openCall, closeCall, outbox, readMark *sql.Stmt
	}
	// headers caches each session's last decoded header and its retained
	// count (see scanHeader, and appendKnown, which writes on it).
	headers sync.Map
	// pending maps a session id to the ticket of its newest behind write
	// (see AppendCall); readSeq numbers this process's behind writes.
	pending sync.Map
	readMu  sync.Mutex
	readSeq int64
	// boardPending maps a session id to the ticket of its newest behind
	// board write (see UpdateBoardBehind), which board readers wait for;
	// boardMu orders those tickets as pending's are ordered by readMu.
	boardPending sync.Map
	boardMu      sync.Mutex
	// unrecorded is the number of reads acknowledged by dead processes
	// and never committed, found by Open.
	unrecorded int64
	// obsKey authenticates observation tokens (serverkey.go).
	obsKey []byte
}

const (
	sqlHeader       = `SELECT header_json, retained FROM sessions WHERE session_id = ?`
	sqlInsertEvent  = `INSERT INTO events (session_id, ` + eventColumns + `) VALUES ` + eventValues
	sqlTrim         = `DELETE FROM events WHERE session_id = ? AND seq <= ?`
	sqlUpdateHeader = `UPDATE sessions SET lifecycle = ?, updated_at = ?, retained = ?, header_json = ? WHERE session_id = ?`
	// sqlUpdateKnown is sqlUpdateHeader on the condition that the row still
	// holds the header and retained count the update was computed from.
	sqlUpdateKnown = `UPDATE sessions SET lifecycle = ?, updated_at = ?, retained = ?, header_json = ? WHERE session_id = ? AND header_json = ? AND retained = ?`
	sqlOpenCall    = `INSERT OR IGNORE INTO open_calls (session_id, call_id, invocation_id, tool, role, started_at, started_seq, instance) VALUES (?,?,?,?,?,?,?,?)`
	sqlCloseCall   = `DELETE FROM open_calls WHERE session_id = ? AND call_id = ?`
	sqlOutbox      = `INSERT INTO evidence_outbox (body) VALUES (?)`
	sqlReadMark    = `INSERT INTO read_marks (instance, seq) VALUES (?1, ?2) ON CONFLICT (instance) DO UPDATE SET seq = MAX(seq, ?2)`
)

var _ workflow.Store = (*Store)(nil)

// RestoreReport counts rows validated and moved aside: by this process's
// first-use checks so far ([Store.Restored]) or by one full pass
// ([Store.ValidateAll]).
type RestoreReport = workflowrow.RestoreReport

// BehindGather is how long a batch of behind writes (read-only calls'
// events, board and outbox upkeep) waits for more before it commits
// (sqlitedb.Writer.GatherBehind): sequential calls arrive a millisecond or
// two apart, and each would otherwise pay a transaction of its own. Every
// reader of the ledger, a mutation and Close end the wait at once.
const BehindGather = 10 * time.Millisecond

// Open opens (creating if needed) the ledger at path. It reads no session
// or event row: each session is validated at its first use. now may be nil.
func Open(ctx context.Context, path string, now func() time.Time) (*Store, error) {
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Migrations(migrations, "migrations"))
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	inst, err := newInstance(path)
	if err != nil {
		db.Close()
		return nil, err
	}
	db.Writer.GatherBehind(BehindGather)
	s := &Store{db: db, now: now, inst: inst}
	if err := db.Writer.PrepareAll(ctx, sqlitedb.Stmt{Dst: &s.stmts.header, Query: sqlHeader}, sqlitedb.Stmt{Dst: &s.stmts.insertEvent, Query: sqlInsertEvent},
		sqlitedb.Stmt{Dst: &s.stmts.trim, Query: sqlTrim}, sqlitedb.Stmt{Dst: &s.stmts.updateHeader, Query: sqlUpdateHeader},
		sqlitedb.Stmt{Dst: &s.stmts.updateKnown, Query: sqlUpdateKnown},
		sqlitedb.Stmt{Dst: &s.stmts.openCall, Query: sqlOpenCall}, sqlitedb.Stmt{Dst: &s.stmts.closeCall, Query: sqlCloseCall},
		sqlitedb.Stmt{Dst: &s.stmts.outbox, Query: sqlOutbox}, sqlitedb.Stmt{Dst: &s.stmts.readMark, Query: sqlReadMark}); err != nil {
		db.Close()
		inst.close()
		return nil, fmt.Errorf("workflowdb: prepare: %w", err)
	}
	if s.unrecorded, err = s.countUnrecorded(ctx); err != nil {
		db.Close()
		inst.close()
		return nil, fmt.Errorf("workflowdb: read marks: %w", err)
	}
	if s.obsKey, err = loadObservationKey(ctx, db); err != nil {
		db.Close()
		inst.close()
		return nil, err
	}
	return s, nil
}

// Close closes the database after queued writes commit.
func (s *Store) Close() error {
	err := s.db.Close()
	s.inst.close()
	return err
}

// Restored reports what this process's first-use checks have validated and
// moved aside so far (rows moved by ValidateAll are in Discarded too).
func (s *Store) Restored() RestoreReport {
	return s.checks.Report()
}

// DB exposes the underlying database for benchmarks and tests in this
// module.
func (s *Store) DB() *sqlitedb.DB { return s.db }

func storeErr(err error) error { return sqlitedb.StoreError(err, "session store") }

// Status implements workflow.Store.
func (s *Store) Status(ctx context.Context) (workflow.StoreStatus, error) {
	var st workflow.StoreStatus
	err := s.db.Read.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM sessions),
		(SELECT COUNT(*) FROM sessions WHERE lifecycle = 'active'),
		(SELECT COALESCE(SUM(retained), 0) FROM sessions),
		(SELECT COUNT(*) FROM discarded_rows)`).Scan(&st.Sessions, &st.ActiveSessions, &st.Events, &st.DiscardedRows)
	st.UnrecordedReads = s.unrecorded
	return st, storeErr(err)
}
