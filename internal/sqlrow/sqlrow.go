// Package sqlrow is what a store shares when one set of statements runs
// on both its drivers (SQLite through database/sql, PostgreSQL through
// pgx): a Querier written with ? placeholders over a transaction or a
// pool, the rows it yields, and the rewrite of ? into PostgreSQL's $n.
// It knows no table and no domain.
package sqlrow

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// ErrNoRows is what a Querier's row reports when a query found no row.
var ErrNoRows = errors.New("sqlrow: no rows")

// Row is one result row.
type Row interface{ Scan(dest ...any) error }

// Querier runs statements on one transaction or pool.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) error
	// QueryRow's Scan reports ErrNoRows when there is no row.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query calls each for every row.
	Query(ctx context.Context, query string, args []any, each func(Row) error) error
}

// Rows is what *sql.Rows and pgx.Rows share.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Each calls each for every row of rows (which the caller closes) and
// returns the first error.
func Each(rows Rows, each func(Row) error) error {
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Dollar rewrites the ? placeholders of q into $1, $2, ... in order. q
// must hold no other ? (no literal, comment or operator uses one).
func Dollar(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
