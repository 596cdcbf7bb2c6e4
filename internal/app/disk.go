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
// are skipped). It is the one place sizes are computed.
func DiskUsage(dir string) ([]StoreSize, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	by := map[string]*StoreSize{}
	add := func(name string, size int64) {
		s := by[name]
		if s == nil {
			s = &StoreSize{Store: name}
			by[name] = s
		}
		s.Bytes += size
		s.Files++
	}
	for _, e := range entries {
		name := storeOf(e.Name())
		if !e.IsDir() {
			if info, err := e.Info(); err == nil {
				add(name, info.Size())
			}
			continue
		}
		err := filepath.WalkDir(filepath.Join(dir, e.Name()), func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					add(name, info.Size())
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if by[name] == nil {
			by[name] = &StoreSize{Store: name}
		}
	}
	out := make([]StoreSize, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b StoreSize) int { return strings.Compare(a.Store, b.Store) })
	return out, nil
}

// storeOf is the store a data directory entry belongs to: "workflow" for
// workflow.db, workflow.db-wal and workflow.db-shm; the name itself
// otherwise.
func storeOf(name string) string {
	for _, suffix := range []string{".db", ".db-wal", ".db-shm", ".db-journal"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && base != "" {
			return base
		}
	}
	return name
}
