package sqlitedb_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/sqlitedb"
)

// BenchmarkCommitOnTmpfs times one durable write through Writer.Do (a
// prepared INSERT in the writer's transaction, its group commit and the
// hand-back to the caller) against the floor of the same write: a plain
// BEGIN IMMEDIATE / INSERT / COMMIT on a connection of its own, with the
// same pragmas, on another file of the same tmpfs (/dev/shm, where fsync
// returns at once), alternately (benchpair). The difference is the
// writer's own cost per commit.
func BenchmarkCommitOnTmpfs(b *testing.B) {
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		b.Skip("no /dev/shm")
	}
	dir, err := os.MkdirTemp("/dev/shm", "wcbench-sqlitedb-")
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	schema := `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL);`
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "writer.db"), fstest.MapFS{"0001_init.sql": {Data: []byte(schema)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ins, err := db.Writer.Prepare(ctx, `INSERT INTO kv (v) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(FULL)", "busy_timeout(10000)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	plain, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "plain.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	plain.SetMaxOpenConns(1)
	b.Cleanup(func() { plain.Close() })
	if _, err := plain.Exec(schema); err != nil {
		b.Fatal(err)
	}
	plainIns, err := plain.Prepare(`INSERT INTO kv (v) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	const v = "a value of a few dozen bytes, as an event row has"
	benchpair.Run(b, "plain", func() {
		tx, err := plain.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(plainIns).Exec(v); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}, "writer", func() {
		if err := db.Writer.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.StmtContext(ctx, ins).ExecContext(ctx, v)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	})
}
