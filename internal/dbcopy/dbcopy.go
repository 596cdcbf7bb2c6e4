// Package dbcopy copies the SQLite tables of a data directory into the
// PostgreSQL tables of the same stores (`webcodex migrate`) and proves the
// copy: every table is counted and digested on both sides, row by row in
// key order, and the two must agree.
//
// It copies rows, not domain objects: each table's columns are matched by
// name, a SQLite column that has no PostgreSQL column must be listed as
// omitted (with the reason it need not be copied), and values are
// converted to the PostgreSQL column's type (SQLite's 0/1 to boolean, text
// to bytea). The whole copy is one PostgreSQL transaction: a failure
// leaves the target as it was.
package dbcopy

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// BatchRows is how many rows one COPY sends at most, bounding the memory a
// table of any size takes.
const BatchRows = 1000

// A Table maps one SQLite table of a data directory to its PostgreSQL
// table.
type Table struct {
	// File is the SQLite database file in the data directory
	// ("workflow.db").
	File string
	// From is the SQLite table, To the schema-qualified PostgreSQL table.
	From, To string
	// Key are the columns that order the rows uniquely (the primary key),
	// on both sides.
	Key []string
	// Omit names SQLite columns that are not copied, each with why.
	Omit map[string]string
	// Rename maps a SQLite column to the PostgreSQL column that holds it
	// under another name. Its key may be "rowid", SQLite's implicit row
	// number (the order rows were inserted in, which a PostgreSQL identity
	// column keeps).
	Rename map[string]string
	// Set gives PostgreSQL columns that have no SQLite column a value for
	// every row (not part of the digest: the data directory does not hold
	// it).
	Set map[string]any
}

// A Statement is run after the tables are copied, in the same
// transaction, to bring derived state (a counter row, an identity) in line
// with the copied rows.
type Statement struct {
	SQL  string
	Args []any
}

// Result is one copied table: its rows and their digest (the same on both
// sides).
type Result struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	Digest string `json:"digest"`
}

// column is a copied column: its SQLite name, its PostgreSQL name and
// type.
type column struct {
	name, pgName, pgType string
}

// Copy copies every table of plan from dataDir's SQLite files into db,
// then runs fixups (statements that bring derived state, such as a
// counter row or an identity sequence, in line with the copied rows), all
// in one transaction, and verifies each table by count and digest before
// committing. Errors: failure.InvalidArguments for a plan that would lose
// a column; failure.Conflict when a copied table does not verify; those
// of the databases.
func Copy(ctx context.Context, db *pgdb.DB, dataDir string, plan []Table, fixups []Statement) ([]Result, error) {
	var out []Result
	err := db.Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = out[:0]
		srcs := map[string]*sql.DB{}
		defer func() {
			for _, s := range srcs {
				s.Close()
			}
		}()
		for _, t := range plan {
			src := srcs[t.File]
			if src == nil {
				var err error
				if src, err = sqlitedb.OpenReadOnly(filepath.Join(dataDir, t.File)); err != nil {
					return fmt.Errorf("open %s: %w", t.File, err)
				}
				srcs[t.File] = src
			}
			r, err := copyTable(ctx, src, tx, t)
			if err != nil {
				return fmt.Errorf("%s %s → %s: %w", t.File, t.From, t.To, err)
			}
			out = append(out, r)
		}
		if err := resetIdentities(ctx, tx, plan); err != nil {
			return err
		}
		for _, f := range fixups {
			if _, err := tx.Exec(ctx, f.SQL, f.Args...); err != nil {
				return fmt.Errorf("after the copy: %w", err)
			}
		}
		return nil
	})
	return out, err
}

// columns returns the columns t copies: the SQLite table's columns that
// are not omitted, each of which must exist in the PostgreSQL table (and
// not be generated there).
func columns(ctx context.Context, src *sql.DB, tx pgx.Tx, t Table) ([]column, error) {
	schema, table, ok := strings.Cut(t.To, ".")
	if !ok {
		return nil, failure.New(failure.InvalidArguments, "%s is not schema-qualified", t.To)
	}
	pgTypes := map[string]string{}
	rows, err := tx.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER'`, schema, table)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var n, ty string
		if err := rows.Scan(&n, &ty); err != nil {
			rows.Close()
			return nil, err
		}
		pgTypes[n] = ty
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(pgTypes) == 0 {
		return nil, failure.New(failure.InvalidArguments, "no table %s in the database", t.To)
	}
	info, err := src.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, t.From)
	if err != nil {
		return nil, err
	}
	defer info.Close()
	var names []string
	for info.Next() {
		var n string
		if err := info.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	if err := info.Err(); err != nil {
		return nil, err
	}
	if _, ok := t.Rename["rowid"]; ok && len(names) > 0 {
		names = append(names, "rowid")
	}
	var cols []column
	for _, n := range names {
		if _, omitted := t.Omit[n]; omitted {
			continue
		}
		pn := n
		if r, ok := t.Rename[n]; ok {
			pn = r
		}
		ty, ok := pgTypes[pn]
		if !ok {
			return nil, failure.New(failure.InvalidArguments, "column %s has no column in %s and is not listed as omitted", n, t.To)
		}
		cols = append(cols, column{name: n, pgName: pn, pgType: ty})
	}
	if len(cols) == 0 {
		return nil, failure.New(failure.InvalidArguments, "no table %s in the data directory", t.From)
	}
	for _, k := range t.Key {
		if !slices.ContainsFunc(cols, func(c column) bool { return c.name == k }) {
			return nil, failure.New(failure.InvalidArguments, "key column %s is not copied", k)
		}
	}
	return cols, nil
}

// copyTable copies one table in batches of BatchRows and verifies it.
func copyTable(ctx context.Context, src *sql.DB, tx pgx.Tx, t Table) (Result, error) {
	cols, err := columns(ctx, src, tx, t)
	if err != nil {
		return Result{}, err
	}
	names, pgNames := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		names[i], pgNames[i] = c.name, c.pgName
	}
	var setVals []any
	for _, k := range slices.Sorted(maps.Keys(t.Set)) {
		pgNames, setVals = append(pgNames, k), append(setVals, t.Set[k])
	}
	schema, table, _ := strings.Cut(t.To, ".")
	rows, err := src.QueryContext(ctx, `SELECT `+quoteList(names)+` FROM "`+t.From+`" ORDER BY `+quoteList(t.Key))
	if err != nil {
		return Result{}, err
	}
	defer rows.Close()
	sum := newDigest()
	var batch [][]any
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{schema, table}, pgNames, pgx.CopyFromRows(batch))
		batch = batch[:0]
		return err
	}
	for rows.Next() {
		raw := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Result{}, err
		}
		row := make([]any, len(cols))
		for i, c := range cols {
			if row[i], err = convert(raw[i], c.pgType); err != nil {
				return Result{}, failure.Wrap(failure.InvalidArguments, err, "column %s", c.name)
			}
		}
		sum.add(row)
		batch = append(batch, append(row, setVals...))
		if len(batch) == BatchRows {
			if err := flush(); err != nil {
				return Result{}, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	if err := flush(); err != nil {
		return Result{}, err
	}
	got, err := digestTarget(ctx, tx, t, cols)
	if err != nil {
		return Result{}, err
	}
	want := Result{Table: t.To, Rows: sum.rows, Digest: sum.hex()}
	if got != want {
		return Result{}, failure.New(failure.Conflict, "the copy does not verify: %d rows, digest %s in the data directory; %d rows, digest %s in the database",
			want.Rows, want.Digest, got.Rows, got.Digest)
	}
	return want, nil
}

// digestTarget counts and digests the copied table as it is in the
// database, in the same key order (bytewise, as SQLite orders text).
func digestTarget(ctx context.Context, tx pgx.Tx, t Table, cols []column) (Result, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.pgName
	}
	order := make([]string, len(t.Key))
	for i, k := range t.Key {
		for _, c := range cols {
			if c.name == k {
				order[i] = `"` + c.pgName + `"`
				if c.pgType == "text" {
					order[i] += ` COLLATE "C"`
				}
			}
		}
	}
	rows, err := tx.Query(ctx, `SELECT `+quoteList(names)+` FROM `+t.To+` ORDER BY `+strings.Join(order, ", "))
	if err != nil {
		return Result{}, err
	}
	defer rows.Close()
	sum := newDigest()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return Result{}, err
		}
		sum.add(vals)
	}
	return Result{Table: t.To, Rows: sum.rows, Digest: sum.hex()}, rows.Err()
}

// convert turns a SQLite value into the Go value of PostgreSQL type
// pgType.
func convert(v any, pgType string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch pgType {
	case "boolean":
		n, ok := v.(int64)
		if !ok || (n != 0 && n != 1) {
			return nil, fmt.Errorf("%v is not a boolean (0 or 1)", v)
		}
		return n == 1, nil
	case "bytea":
		switch b := v.(type) {
		case []byte:
			// An empty blob (a purged evidence payload) may scan as a nil
			// slice, which pgx would send as NULL.
			if b == nil {
				b = []byte{}
			}
			return b, nil
		case string:
			return []byte(b), nil
		}
	case "text":
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
	case "bigint", "integer", "smallint":
		if n, ok := v.(int64); ok {
			return n, nil
		}
	case "double precision", "real":
		switch f := v.(type) {
		case float64:
			return f, nil
		case int64:
			return float64(f), nil
		}
	}
	return nil, fmt.Errorf("a %T cannot be stored as %s", v, pgType)
}

// digest is a running SHA-256 over rows: each value is written with a
// type tag and a length, so that no two different rows encode alike.
type digest struct {
	h    hash.Hash
	rows int64
}

func newDigest() *digest { return &digest{h: sha256.New()} }

func (d *digest) add(row []any) {
	d.rows++
	for _, v := range row {
		var tag byte
		var b []byte
		switch x := v.(type) {
		case nil:
			tag = 'n'
		case bool:
			tag, b = 'b', []byte(strconv.FormatBool(x))
		case int64:
			tag, b = 'i', []byte(strconv.FormatInt(x, 10))
		case int32:
			tag, b = 'i', []byte(strconv.FormatInt(int64(x), 10))
		case int16:
			tag, b = 'i', []byte(strconv.FormatInt(int64(x), 10))
		case float64:
			tag, b = 'f', []byte(strconv.FormatFloat(x, 'g', -1, 64))
		case float32:
			tag, b = 'f', []byte(strconv.FormatFloat(float64(x), 'g', -1, 64))
		case string:
			tag, b = 's', []byte(x)
		case []byte:
			tag, b = 'x', x
		default:
			tag, b = '?', []byte(fmt.Sprintf("%T %v", v, v))
		}
		var n [9]byte
		n[0] = tag
		binary.BigEndian.PutUint64(n[1:], uint64(len(b)))
		d.h.Write(n[:])
		d.h.Write(b)
	}
	d.h.Write([]byte{'\n'})
}

func (d *digest) hex() string { return hex.EncodeToString(d.h.Sum(nil)) }

// resetIdentities moves the sequence of every identity column of the
// copied tables past the largest copied value, so rows inserted later do
// not collide with copied ones.
func resetIdentities(ctx context.Context, tx pgx.Tx, plan []Table) error {
	for _, t := range plan {
		schema, table, _ := strings.Cut(t.To, ".")
		rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = $2 AND is_identity = 'YES'`, schema, table)
		if err != nil {
			return err
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, c := range cols {
			if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), m, true)
				FROM (SELECT max("`+c+`") AS m FROM `+t.To+`) x WHERE m IS NOT NULL`, t.To, c); err != nil {
				return fmt.Errorf("%s.%s identity: %w", t.To, c, err)
			}
		}
	}
	return nil
}

// quoteList joins names as quoted identifiers.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}
