package memorydb

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/memory/storetest"
	"github.com/webcodex/webcodex/internal/redact"
)

func open(t testing.TB) (*Store, *memory.Service, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, memory.NewService(st, nil), path
}

var scopeA = storetest.ScopeA

func mustSet(t testing.TB, svc *memory.Service, p memory.SetParams) memory.SetResult {
	t.Helper()
	if p.Scope.ID == "" {
		p.Scope = scopeA
	}
	r, err := svc.Set(context.Background(), p)
	if err != nil {
		t.Fatalf("set %s: %v", p.Key, err)
	}
	return r
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("err = %v, want kind %s", err, k)
	}
}

// TestContract runs the memory.Store contract suite on SQLite.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		st, _, _ := open(t)
		return storetest.Backend{
			Store:    st,
			Snapshot: func(t *testing.T) string { return snapshot(t, st) },
			Fill: func(t testing.TB, scope memory.Scope, entries []memory.Entry) {
				fillEntries(t, st, scope, entries)
			},
			KeptHistory: func(t *testing.T, memoryID, revision string) (kept, current int) {
				if err := st.db.Read.QueryRow(`SELECT count(*), count(*) FILTER (WHERE revision = ?) FROM memory_history WHERE memory_id = ?`,
					revision, memoryID).Scan(&kept, &current); err != nil {
					t.Fatal(err)
				}
				return kept, current
			},
		}
	})
}

// snapshot is every row of every table, concatenated by SQLite (cheap
// even for a full scope), to prove a refused call changed nothing. It
// also checks that each scope's kept entry count is its row count.
func snapshot(t *testing.T, st *Store) string {
	t.Helper()
	var bad int
	if err := st.db.Read.QueryRow(`SELECT count(*) FROM memory_scopes s
		WHERE s.entries <> (SELECT count(*) FROM memory_entries e WHERE e.scope_id = s.scope_id)`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("%d scopes keep a wrong entry count (%v)", bad, err)
	}
	var b strings.Builder
	for _, q := range []string{
		`SELECT scope_id || project || root || entries AS x FROM memory_scopes ORDER BY scope_id`,
		`SELECT memory_key || memory_id || revision || body || tags || written_by || updated_at_ms AS x FROM memory_entries ORDER BY id`,
		`SELECT memory_id || generation || revision || body AS x FROM memory_history ORDER BY memory_id, generation`,
		`SELECT count(*) AS x FROM memory_fts`,
	} {
		var v string
		if err := st.db.Read.QueryRow(`SELECT coalesce(group_concat(x, char(10)), '') FROM (` + q + `)`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		b.WriteString(v)
		b.WriteByte(0)
	}
	return b.String()
}

// fill inserts n entries into scope in one transaction (the benchmarks).
func fill(t testing.TB, st *Store, scope memory.Scope, n int, body func(i int) string) {
	t.Helper()
	fillEntries(t, st, scope, storetest.FillEntries(n, body))
}

func fillEntries(t testing.TB, st *Store, scope memory.Scope, entries []memory.Entry) {
	t.Helper()
	err := st.db.Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		for _, e := range entries {
			if err := st.put(ctx, tx, scope, e, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSecretNeverStored plants a credential in a body and a tag and scans
// every byte of memory.db and its WAL.
func TestSecretNeverStored(t *testing.T) {
	st, svc, path := open(t)
	secret := "ghp_" + strings.Repeat("Z9", 18)
	r := mustSet(t, svc, memory.SetParams{Key: "deploy", Body: "token is " + secret + " and password=hunter2hunter2"})
	if !r.Redacted {
		t.Fatal("redaction not reported")
	}
	e, _, _ := svc.Read(context.Background(), memory.ReadParams{Scope: scopeA, Key: "deploy"})
	if strings.Contains(e.Body, secret) || strings.Contains(e.Body, "hunter2hunter2") {
		t.Fatalf("read returned the secret: %q", e.Body)
	}
	_, err := svc.Set(context.Background(), memory.SetParams{Scope: scopeA, Key: "key " + secret, Body: "b"})
	wantKind(t, err, failure.InvalidArguments)
	// Scan while open (the WAL holds the frames) and after close (the
	// checkpoint has moved them into the file).
	scan := func(when string, needWAL bool) {
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil && (needWAL || !os.IsNotExist(err)) {
				t.Fatal(err)
			}
			if f == path+"-wal" && needWAL && !bytes.Contains(b, []byte(redact.Marker)) {
				t.Fatalf("%s: the WAL does not hold the redacted body: the scan saw nothing", when)
			}
			for _, s := range []string{secret, "hunter2hunter2"} {
				if bytes.Contains(b, []byte(s)) {
					t.Fatalf("%s: %s holds the planted secret %q", when, filepath.Base(f), s)
				}
			}
		}
	}
	scan("open", true)
	st.Close()
	scan("closed", false)
}
