package goaldb_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/goal/goaldb"
	"github.com/webcodex/webcodex/internal/goal/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		st, err := goaldb.Open(context.Background(), filepath.Join(t.TempDir(), goaldb.FileName))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
