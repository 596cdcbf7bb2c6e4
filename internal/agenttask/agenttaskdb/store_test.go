package agenttaskdb_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/agenttask/agenttaskdb"
	"github.com/webcodex/webcodex/internal/agenttask/storetest"
)

func open(t *testing.T, path string) *agenttaskdb.Store {
	st, err := agenttaskdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestContract runs the suite; the second handle opens the same file, as
// a second process would.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Store, storetest.Store) {
		path := filepath.Join(t.TempDir(), agenttaskdb.FileName)
		return open(t, path), open(t, path)
	})
}
