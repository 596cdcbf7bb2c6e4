// Package agenttaskpg is the PostgreSQL implementation of
// [agenttask.Store]: Agent Tasks and their attempts in the schema tasks
// of a shared database, which shares nothing with any other schema.
// Every decision is made by the database: a mutation locks the task's row
// FOR UPDATE in one READ COMMITTED transaction while the task is judged,
// so two replicas racing for one task are served one after the other and
// the second judges what the first stored; and the partial unique index
// attempts_one_live refuses a second live attempt even so. Every change of
// a task notifies Channel in its transaction, so waiters on every replica
// wake (wait_for_agent_events).
package agenttaskpg

import (
	"context"
	"embed"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/taskrow"
	"github.com/webcodex/webcodex/internal/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the store's PostgreSQL schema.
const Schema = "tasks"

// Channel is the LISTEN/NOTIFY channel of task changes: every transaction
// that changes a task notifies it with the key of the task's owner and
// project (agenttask.FeedKey), delivered at commit.
const Channel = "agent_tasks"

const storeName = "agent task store"

var dialect = taskrow.Dialect{
	Prefix:    Schema + ".",
	ForUpdate: " FOR UPDATE",
	LockKey:   `SELECT pg_advisory_xact_lock(hashtext('webcodex.tasks.idempotency'), hashtext(?))`,
	IDOrder:   `COLLATE "C"`,
	Dollar:    true,
	Notify:    `SELECT pg_notify('` + Channel + `', ?)`,
}

// Store is an agenttask.Store on PostgreSQL. Mutate locks the task's row
// FOR UPDATE while the task is judged; List reads one REPEATABLE READ
// snapshot, so its page and total agree; creates with one idempotency key
// are serialized by a transaction-scoped advisory lock on its scope.
type Store struct{ *taskrow.Store }

var _ agenttask.Store = (*Store)(nil)

// Open migrates the schema tasks of db and returns its store; the pool
// stays the caller's. Errors: those of pgdb.DB.Migrate.
func Open(ctx context.Context, db *pgdb.DB) (*Store, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	st := &Store{&taskrow.Store{
		Dialect:    dialect,
		Read:       pool(db),
		StoreError: storeError,
		Write: func(ctx context.Context, fn func(q taskrow.Querier) error) error {
			return storeError(db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error { return fn(over(tx)) }))
		},
		Snapshot: func(ctx context.Context, fn func(q taskrow.Querier) error) error {
			tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
			if err != nil {
				return storeError(err)
			}
			defer tx.Rollback(context.WithoutCancel(ctx))
			return storeError(fn(over(tx)))
		},
	}}
	if err := st.LoadEventKey(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// Migrate brings the store's schema in db up to this version without
// opening the store.
func Migrate(ctx context.Context, db *pgdb.DB) error {
	return db.Migrate(ctx, Schema, migrations, "migrations")
}

// querier is a taskrow.Querier over a transaction or the pool.
type querier struct {
	exec     func(ctx context.Context, sql string, args ...any) error
	queryRow func(ctx context.Context, sql string, args ...any) pgx.Row
	query    func(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func over(tx pgx.Tx) querier {
	return querier{
		exec: func(ctx context.Context, sql string, args ...any) error {
			_, err := tx.Exec(ctx, sql, args...)
			return err
		},
		queryRow: tx.QueryRow, query: tx.Query,
	}
}

func pool(db *pgdb.DB) querier {
	return querier{
		exec: func(ctx context.Context, sql string, args ...any) error {
			_, err := db.Pool.Exec(ctx, sql, args...)
			return err
		},
		queryRow: db.Pool.QueryRow, query: db.Pool.Query,
	}
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return taskrow.ErrNoRows
	}
	return err
}

func (q querier) Exec(ctx context.Context, query string, args ...any) error {
	return q.exec(ctx, query, args...)
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) taskrow.Row {
	return row{q.queryRow(ctx, query, args...)}
}

func (q querier) Query(ctx context.Context, query string, args []any, each func(taskrow.Row) error) error {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskrow.Each(rows, each)
}

func storeError(err error) error { return pgdb.StoreError(err, storeName) }
