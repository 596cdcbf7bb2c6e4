package intentpg_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/intent/intentpg"
	"github.com/webcodex/webcodex/internal/intent/storetest"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestContract runs the suite; the second handle is a second pool on the
// same database, as a second replica holds.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Store, storetest.Store) {
		db, second := pgtest.Replicas(t)
		a, err := intentpg.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		b, err := intentpg.Open(context.Background(), second)
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	})
}
