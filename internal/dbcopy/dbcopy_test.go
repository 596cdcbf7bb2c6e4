package dbcopy_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/dbcopy"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// fixture is a data directory with one SQLite table and a database with
// its PostgreSQL counterpart.
func fixture(t *testing.T, rows int) (string, *pgdb.DB) {
	t.Helper()
	dir := t.TempDir()
	src, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Exec(`CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL, flag INTEGER NOT NULL, body BLOB, note TEXT, seq INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tx, err := src.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		// Ids whose bytewise order differs from a natural-language
		// collation's ("B" < "a"), and a NULL, a blob and a big number.
		id := string(rune('A'+i%2*32+i%26)) + strconv.Itoa(i) + "é"
		if _, err := tx.Exec(`INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)`, id, int64(1)<<40+int64(i), i%2, []byte{0, byte(i)}, nil, i+1); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db := pgtest.Open(t)
	if _, err := db.Pool.Exec(context.Background(), `CREATE SCHEMA s; CREATE TABLE s.items (id text PRIMARY KEY, n bigint NOT NULL,
		flag boolean NOT NULL, body bytea, note text, ord bigint NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY, added text NOT NULL DEFAULT '')`); err != nil {
		t.Fatal(err)
	}
	return dir, db
}

var plan = []dbcopy.Table{{File: "x.db", From: "items", To: "s.items", Key: []string{"id"}, Rename: map[string]string{"rowid": "seq", "seq": "ord"}, Set: map[string]any{"added": "migrated"}}}

func count(t *testing.T, db *pgdb.DB) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM s.items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCopyVerifiesAndResetsIdentities copies more than one COPY batch,
// converting 0/1 to boolean and keeping NULLs, blobs and bytewise key
// order, and moves the identity sequence past the copied values.
func TestCopyVerifiesAndResetsIdentities(t *testing.T) {
	n := dbcopy.BatchRows + 7
	dir, db := fixture(t, n)
	ctx := context.Background()
	res, err := dbcopy.Copy(ctx, db, dir, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Rows != int64(n) || len(res[0].Digest) != 64 {
		t.Fatalf("results %+v", res)
	}
	var next int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO s.items (id, n, flag, ord) VALUES ('new', 0, true, 0) RETURNING seq`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next != int64(n)+1 {
		t.Fatalf("next identity = %d, want %d", next, n+1)
	}
	// rowid became seq, and the column seq became ord.
	var seq, ord int64
	var added string
	if err := db.Pool.QueryRow(ctx, `SELECT seq, ord, added FROM s.items WHERE id = 'b1é'`).Scan(&seq, &ord, &added); err != nil || seq != 2 || ord != 2 || added != "migrated" {
		t.Fatalf("row 2: seq %d ord %d added %q %v", seq, ord, added, err)
	}
}

// TestCopyRefusesWhatItCannotCopyWhole: a column with no home, a value
// that is not a boolean, and a target that changes rows as they arrive
// (the verification catches it) each fail with their kind, leaving the
// database empty.
func TestCopyRefusesWhatItCannotCopyWhole(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(dir string, db *pgdb.DB)
		kind  failure.Kind
	}{
		{"a column with no home", func(_ string, db *pgdb.DB) {
			db.Pool.Exec(ctx, `ALTER TABLE s.items DROP COLUMN note`)
		}, failure.InvalidArguments},
		{"a flag of 2", func(dir string, _ *pgdb.DB) {
			src, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "x.db"))
			defer src.Close()
			src.Exec(`UPDATE items SET flag = 2 WHERE rowid = 3`)
		}, failure.InvalidArguments},
		{"a target that rewrites rows", func(_ string, db *pgdb.DB) {
			db.Pool.Exec(ctx, `CREATE FUNCTION s.bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.n := NEW.n + 1; RETURN NEW; END $$;
				CREATE TRIGGER bump BEFORE INSERT ON s.items FOR EACH ROW EXECUTE FUNCTION s.bump()`)
		}, failure.Conflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, db := fixture(t, 10)
			c.setup(dir, db)
			_, err := dbcopy.Copy(ctx, db, dir, plan, nil)
			if err == nil {
				t.Fatal("copied")
			}
			if failure.KindOf(err) != c.kind {
				t.Fatalf("error %v, want kind %s", err, c.kind)
			}
			if got := count(t, db); got != 0 {
				t.Fatalf("%d rows left in the database", got)
			}
		})
	}
}
