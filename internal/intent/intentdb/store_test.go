package intentdb_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/intent/intentdb"
	"github.com/webcodex/webcodex/internal/intent/storetest"
)

func open(t *testing.T, path string) *intentdb.Store {
	st, err := intentdb.Open(context.Background(), path)
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
		path := filepath.Join(t.TempDir(), intentdb.FileName)
		return open(t, path), open(t, path)
	})
}
