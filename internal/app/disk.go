package app

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// StoreSize is how much of the data directory one store takes.
type StoreSize struct {
	// Store is the store's name: a database file's name without ".db"
	// (its -wal and -shm files counted with it), or a top-level
	// directory's or file's name.
	Store string `json:"store"`
	Bytes int64  `json:"bytes"`
	Files int    `json:"files"`
}

// DiskUsage is the size of each store of the data directory dir, by
// store name, from what is on disk now (files that vanish while it walks
// are skipped). A database store is measured by databaseSize, the one
// per-database computation (/metrics' store_bytes uses it too, without
// walking the data directory); every other entry is walked.
func DiskUsage(dir string) ([]StoreSize, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	by := map[string]*StoreSize{}
	add := func(name string, size int64, files int) {
		s := by[name]
		if s == nil {
			s = &StoreSize{Store: name}
			by[name] = s
		}
		s.Bytes += size
		s.Files += files
	}
	measured := map[string]bool{} // databases, measured once whichever of their files comes first
	for _, e := range entries {
		if base, ok := databaseOf(e.Name()); ok && !e.IsDir() {
			if !measured[base] {
				measured[base] = true
				size, files := databaseSize(filepath.Join(dir, base+databaseSuffix))
				add(base, size, files)
			}
			continue
		}
		name := e.Name()
		if !e.IsDir() {
			if info, err := e.Info(); err == nil {
				add(name, info.Size(), 1)
			}
			continue
		}
		err := filepath.WalkDir(filepath.Join(dir, name), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					add(name, info.Size(), 1)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		add(name, 0, 0)
	}
	out := make([]StoreSize, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b StoreSize) int { return strings.Compare(a.Store, b.Store) })
	return out, nil
}

// databaseSuffix ends a SQLite database file's name in the data
// directory.
const databaseSuffix = ".db"

// databaseCompanions are what SQLite appends to a database's path for
// the files that belong to it: its write-ahead log, its shared-memory
// index and a rollback journal.
var databaseCompanions = []string{"-wal", "-shm", "-journal"}

// databaseSize is the size of the SQLite database at path and how many
// files it takes: the database file and each companion present (an
// absent or vanished one counts nothing).
func databaseSize(path string) (bytes int64, files int) {
	for _, suffix := range append([]string{""}, databaseCompanions...) {
		if fi, err := os.Stat(path + suffix); err == nil && fi.Mode().IsRegular() {
			bytes += fi.Size()
			files++
		}
	}
	return bytes, files
}

// databaseOf is the store a data directory entry belongs to when it is
// one of a database's files: "workflow" for workflow.db, workflow.db-wal,
// workflow.db-shm and workflow.db-journal.
func databaseOf(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, databaseSuffix)
	for _, suffix := range databaseCompanions {
		if ok {
			break
		}
		base, ok = strings.CutSuffix(name, databaseSuffix+suffix)
	}
	return base, ok && base != ""
}
