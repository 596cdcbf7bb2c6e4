package workflowpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// BoardChannel is the LISTEN/NOTIFY channel of board changes: every
// committed change of a board's message-observation revision sends, in
// its own transaction, one notification on it whose payload is the
// session id alone (a listener re-reads the board by revision).
const BoardChannel = "workflow_board"

// boardStoreName names the board in the errors callers see (workflowdb
// calls it the session store too).
const boardStoreName = "session store"

// Board implements [workflow.BoardStore] and [workflow.SnapshotReader] on
// PostgreSQL. Several replicas may run a Board over one database: every
// change to one session's board is made in a transaction that holds that
// board's message_boards row locked FOR UPDATE from its first read to its
// commit, so the changes of one board are ordered across replicas as
// workflow.db's single writer orders them, and every read-then-write of
// workflow.Board (a delivery key, a completion key, a fence, a counter)
// judges the state it writes over.
type Board struct {
	db     *pgdb.DB
	key    []byte
	behind *behindQueue
}

var (
	_ workflow.BoardStore     = (*Board)(nil)
	_ workflow.SnapshotReader = (*Board)(nil)
)

// OpenBoard migrates the schema workflow of db, loads the observation key
// (created by the first replica to open the database, read by every other
// one) and starts the writer of behind board writes. The pool stays the
// caller's; Close stops the writer. Errors: those of pgdb.DB.Migrate; a
// database that cannot be read.
func OpenBoard(ctx context.Context, db *pgdb.DB) (*Board, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	key, err := loadObservationKey(ctx, db)
	if err != nil {
		return nil, err
	}
	b := &Board{db: db, key: key}
	b.behind = newBehindQueue(b)
	return b, nil
}

// Close stops the writer of behind board writes once those already queued
// have ended; one queued after Close fails with failure.Unavailable.
func (b *Board) Close() error {
	b.behind.close()
	return nil
}

// ObservationKey implements workflow.BoardStore: the database's key, the
// same for every replica and across restarts.
func (b *Board) ObservationKey() []byte { return b.key }

func boardErr(err error) error { return pgdb.StoreError(err, boardStoreName) }

// ViewBoard implements workflow.BoardStore: fn reads one snapshot (a
// REPEATABLE READ, READ ONLY transaction), taken after the behind board
// writes this Board queued for the session have ended.
func (b *Board) ViewBoard(ctx context.Context, id string, fn func(workflow.BoardReader) error) error {
	if err := b.behind.wait(ctx, id); err != nil {
		return boardErr(err)
	}
	return boardErr(b.snapshot(ctx, func(tx pgx.Tx) error {
		return fn(&boardTx{ctx: ctx, tx: tx, id: id})
	}))
}

// snapshot runs fn in one REPEATABLE READ, READ ONLY transaction.
func (b *Board) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := b.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "the database is unavailable")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(tx); err != nil {
		return err
	}
	return ctx.Err()
}

// UpdateBoard implements workflow.BoardStore: fn runs in one READ
// COMMITTED transaction holding session id's board row FOR UPDATE (and
// the session's row FOR SHARE, so that a session cannot close while a
// change to its board is being decided), and UpdateBoard returns once it
// committed. A change that advanced the board's observation revision
// notifies BoardChannel in the same transaction.
func (b *Board) UpdateBoard(ctx context.Context, id string, fn func(workflow.BoardWriter) error) error {
	return boardErr(b.db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		w, err := lockBoard(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := fn(w); err != nil {
			return err
		}
		return w.notify()
	}))
}

// qLockBoard locks session $1's board row FOR UPDATE and its session row
// FOR SHARE, and reads the board's observation revision; no row when the
// session or its board row does not exist.
const qLockBoard = `SELECT m.observation_revision FROM workflow.sessions s
	JOIN workflow.message_boards m ON m.session_id = s.session_id
	WHERE s.session_id = $1 FOR UPDATE OF m FOR SHARE OF s`

// lockBoard locks session id's board in tx (see qLockBoard), creating its
// row first when the session has none yet: the row every writer of the
// board locks must exist before the first one. A session that does not
// exist locks nothing; State then reports it unknown.
func lockBoard(ctx context.Context, tx pgx.Tx, id string) (*boardTx, error) {
	w := &boardTx{ctx: ctx, tx: tx, id: id}
	err := tx.QueryRow(ctx, qLockBoard, id).Scan(&w.lockedRev)
	if errors.Is(err, pgx.ErrNoRows) {
		_, ierr := tx.Exec(ctx, `INSERT INTO workflow.message_boards
			(session_id, posted, retained, removed, observation_revision, observation_low_watermark)
			SELECT session_id, 0, 0, 0, 0, 0 FROM workflow.sessions WHERE session_id = $1
			ON CONFLICT (session_id) DO NOTHING`, id)
		if ierr != nil {
			return nil, fmt.Errorf("create board: %w", ierr)
		}
		err = tx.QueryRow(ctx, qLockBoard, id).Scan(&w.lockedRev)
		if errors.Is(err, pgx.ErrNoRows) {
			return w, nil // no such session
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock board: %w", err)
	}
	w.rev = w.lockedRev
	return w, nil
}

// notify ends w's writes: it queues session w.id on BoardChannel when its
// observation revision advanced (delivered only if the transaction
// commits) and sends every queued write.
func (w *boardTx) notify() error {
	if w.rev > w.lockedRev {
		w.writes.Exec(`SELECT pg_notify($1, $2)`, BoardChannel, w.id)
		w.lockedRev = w.rev
	}
	return w.flush()
}

// qAttentionPossible is whether any message of session $1 qualifies for
// a session_attention block of a call that began at $2.
var qAttentionPossible = `SELECT EXISTS (SELECT 1 FROM workflow.messages WHERE session_id = $1` +
	workflowrow.AttentionWhere("$2") + `)`

// AttentionPossible implements workflow.BoardStore: one statement, no
// transaction, no wait for behind writes (they only ever make a message
// ineligible).
func (b *Board) AttentionPossible(ctx context.Context, id string, before time.Time) (bool, error) {
	var possible bool
	err := b.db.Pool.QueryRow(ctx, qAttentionPossible, id, before.UnixNano()).Scan(&possible)
	return possible, boardErr(err)
}
