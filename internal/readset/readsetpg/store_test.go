package readsetpg_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetpg"
	"github.com/webcodex/webcodex/internal/readset/storetest"
)

func open(t *testing.T, db *pgdb.DB) *readsetpg.Store {
	st, err := readsetpg.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestContract runs the suite; the second handle is a second pool on the
// same database, as a second replica holds.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (readset.Store, readset.Store) {
		db := pgtest.Open(t)
		second, err := pgdb.Open(context.Background(), db.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(second.Close)
		return open(t, db), open(t, second)
	})
}
