package memorydb

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// TestMigrationDropsCurrentRevisionCopies: a memory.db written under
// 0001 alone, whose puts copied every revision into memory_history (the
// current one included), reads back the same history after 0002, which
// leaves only the superseded revisions in memory_history; 0003 makes the
// order index ascending.
func TestMigrationDropsCurrentRevisionCopies(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	first, err := fs.ReadFile(migrations, "migrations/0001_memory.sql")
	if err != nil {
		t.Fatal(err)
	}
	old, err := sqlitedb.Open(ctx, path, fstest.MapFS{"0001_memory.sql": {Data: first}})
	if err != nil {
		t.Fatal(err)
	}
	const id = "wc_mem_0123456789abcdef0123456789abcdef"
	for _, q := range []string{
		`INSERT INTO memory_scopes (scope_id, project, root, created_at_ms, entries) VALUES ('` + scopeA.ID + `', 'p', '/srv/a', 1000, 1)`,
		`INSERT INTO memory_entries (scope_id, memory_key, memory_id, generation, revision, definition_hash, body, tags, tag_text, pinned, written_by, created_at_ms, updated_at_ms)
			VALUES ('` + scopeA.ID + `', 'k', '` + id + `', 2, 'mrev_2_bbbbbbbbbbbbbbbbbbbbbbbb', 'h2', 'two', '[]', '', 0, 'wc_sess_b', 1000, 2000)`,
		`INSERT INTO memory_history VALUES ('` + id + `', 1, 'mrev_1_aaaaaaaaaaaaaaaaaaaaaaaa', 'one', '[]', 'wc_sess_a', 1000)`,
		`INSERT INTO memory_history VALUES ('` + id + `', 2, 'mrev_2_bbbbbbbbbbbbbbbbbbbbbbbb', 'two', '[]', 'wc_sess_b', 2000)`,
	} {
		if err := old.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var kept int
	if err := st.db.Read.QueryRow(`SELECT count(*) FROM memory_history WHERE memory_id = ? AND generation = 1`, id).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("superseded revision kept %d (%v), want 1", kept, err)
	}
	if err := st.db.Read.QueryRow(`SELECT count(*) FROM memory_history`).Scan(&kept); err != nil || kept != 1 {
		t.Fatalf("memory_history holds %d rows (%v), want only the superseded one", kept, err)
	}
	// 0003: the order index is ascending (a new entry appends at the right
	// end of its scope) and still names scope, pinned and time.
	var cols []string
	rows, err := st.db.Read.Query(`SELECT coalesce(name, 'rowid'), desc FROM pragma_index_xinfo('memory_entries_order') WHERE key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var (
			name string
			desc bool
		)
		if err := rows.Scan(&name, &desc); err != nil {
			t.Fatal(err)
		}
		if desc {
			t.Fatalf("memory_entries_order column %s is DESC", name)
		}
		cols = append(cols, name)
	}
	rows.Close()
	if strings.Join(cols, ",") != "scope_id,pinned,updated_at_ms" {
		t.Fatalf("memory_entries_order columns %v", cols)
	}
	_, hist, err := memory.NewService(st, nil).Read(ctx, memory.ReadParams{Scope: scopeA, Key: "k", WithHistory: true})
	if err != nil || len(hist) != 2 {
		t.Fatalf("history %+v (%v), want 2 revisions", hist, err)
	}
	if hist[0].Revision != "mrev_2_bbbbbbbbbbbbbbbbbbbbbbbb" || hist[0].Body != "two" || hist[0].WrittenBy != "wc_sess_b" || hist[0].WrittenAt.UnixMilli() != 2000 ||
		hist[1].Revision != "mrev_1_aaaaaaaaaaaaaaaaaaaaaaaa" || hist[1].Body != "one" || hist[1].WrittenBy != "wc_sess_a" || hist[1].WrittenAt.UnixMilli() != 1000 {
		t.Fatalf("history after migration: %+v", hist)
	}
}
