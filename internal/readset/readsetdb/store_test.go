package readsetdb_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetdb"
	"github.com/webcodex/webcodex/internal/readset/storetest"
)

func open(t *testing.T, path string) *readsetdb.Store {
	st, err := readsetdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestContract runs the suite; the second handle opens the same file, as
// a second process would.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (readset.Store, readset.Store) {
		path := filepath.Join(t.TempDir(), readsetdb.FileName)
		return open(t, path), open(t, path)
	})
}
