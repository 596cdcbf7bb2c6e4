// Package sqlitetest helps tests of the SQLite stores.
package sqlitetest

import (
	"database/sql"
	"strings"
	"testing"
)

// Plan is SQLite's query plan for query with args on db (EXPLAIN QUERY
// PLAN), one detail line per step, joined by newlines: a test asserts
// that a query uses the index meant for it.
func Plan(t testing.TB, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
