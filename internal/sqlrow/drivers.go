package sqlrow

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLConn is what *sql.Tx and *sql.DB share.
type SQLConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// SQL is a Querier over a database/sql transaction or pool (SQLite);
// statements are passed as written.
func SQL(c SQLConn) Querier { return sqlQuerier{c} }

type sqlQuerier struct{ c SQLConn }

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.c.ExecContext(ctx, query, args...)
	return err
}

func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return sqlRow{q.c.QueryRowContext(ctx, query, args...)}
}

func (q sqlQuerier) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	rows, err := q.c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return Each(rows, each)
}

// PGXConn is what pgx.Tx and a pgx pool share.
type PGXConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// PGX is a Querier over a pgx transaction or pool (PostgreSQL);
// statements are passed as written (rewrite placeholders with Dollar).
func PGX(c PGXConn) Querier { return pgxQuerier{c} }

type pgxQuerier struct{ c PGXConn }

type pgxRow struct{ r pgx.Row }

func (r pgxRow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

func (q pgxQuerier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.c.Exec(ctx, query, args...)
	return err
}

func (q pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return pgxRow{q.c.QueryRow(ctx, query, args...)}
}

func (q pgxQuerier) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	rows, err := q.c.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return Each(rows, each)
}
