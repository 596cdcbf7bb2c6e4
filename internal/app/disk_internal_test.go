package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOneStoreSize: DiskUsage measures a database store with
// databaseSize (the function /metrics' store_bytes calls), counting the
// database, its WAL, shared-memory index and rollback journal, while
// other entries are walked; an orphan companion still counts under its
// database's name.
func TestOneStoreSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("workflow.db", 4096)
	write("workflow.db-wal", 1000)
	write("workflow.db-shm", 300)
	write("workflow.db-journal", 7)
	write("orphan.db-wal", 11)
	write("jobs/p/1/out", 50)
	write("jobs/p/2/out", 5)
	write("config.toml", 3)
	if b, n := databaseSize(filepath.Join(dir, "workflow.db")); b != 4096+1000+300+7 || n != 4 {
		t.Fatalf("databaseSize = %d bytes, %d files", b, n)
	}
	if b, n := databaseSize(filepath.Join(dir, "absent.db")); b != 0 || n != 0 {
		t.Fatalf("databaseSize of no database = %d, %d", b, n)
	}
	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []StoreSize{{"config.toml", 3, 1}, {"jobs", 55, 2}, {"orphan", 11, 1}, {"workflow", 5403, 4}}
	if !slices.Equal(got, want) {
		t.Fatalf("DiskUsage = %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		name, base string
		ok         bool
	}{{"a.db", "a", true}, {"a.db-wal", "a", true}, {"a.db-shm", "a", true}, {"a.db-journal", "a", true},
		{".db", "", false}, {"a.dbx", "", false}, {"a.db-other", "", false}, {"config.toml", "", false}} {
		if base, ok := databaseOf(c.name); ok != c.ok || (ok && base != c.base) {
			t.Errorf("databaseOf(%q) = %q, %v", c.name, base, ok)
		}
	}
}
