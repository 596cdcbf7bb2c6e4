package goalpg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal/goalpg"
	"github.com/webcodex/webcodex/internal/goal/storetest"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store {
		st, err := goalpg.Open(context.Background(), pgtest.Open(t))
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// TestOpenRefusesANewerSchema: a database a newer WebCodex migrated is
// refused, naming the schema.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	if _, err := goalpg.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO goals.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := goalpg.Open(ctx, db); !failure.Is(err, failure.Conflict) || !strings.Contains(err.Error(), "goals") {
		t.Fatalf("Open on a newer schema: %v", err)
	}
}
