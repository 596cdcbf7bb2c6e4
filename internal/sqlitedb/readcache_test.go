package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// TestReadCacheSeesEveryCommit holds a ReadCache to what a fresh read
// returns: a commit by the same DB's writer and one by a second handle on
// the file (another process, such as `webcodex project remove`) each make
// the next Get load again, and a Get with no commit since reuses the row.
func TestReadCacheSeesEveryCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	migrations := fstest.MapFS{"0001_kv.sql": {Data: []byte(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);`)}}
	db, err := sqlitedb.Open(ctx, path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sqlitedb.Open(ctx, path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	set := func(on *sqlitedb.DB, v string) {
		t.Helper()
		if err := on.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('a', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, v)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	loads := 0
	load := func(ctx context.Context) (string, error) {
		loads++
		var v string
		err := db.QueryRow(ctx, `SELECT v FROM kv WHERE k = 'a'`).Scan(&v)
		return v, err
	}
	c := sqlitedb.NewReadCache[string](db)
	get := func(want string, wantLoads int) {
		t.Helper()
		got, err := c.Get(ctx, "a", load)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || loads != wantLoads {
			t.Fatalf("Get = %q after %d loads, want %q after %d", got, loads, want, wantLoads)
		}
	}

	if _, err := c.Get(ctx, "a", load); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("Get of a missing row = %v, want sql.ErrNoRows", err)
	}
	set(db, "one")
	get("one", 2) // the failed load was not kept
	get("one", 2) // nothing committed: reused
	set(db, "two")
	get("two", 3) // this DB's writer committed
	set(other, "three")
	get("three", 4) // another handle on the file committed
	get("three", 4)
}
