package oauthpg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/authserver/storetest"
	"github.com/webcodex/webcodex/internal/oauth/oauthpg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// open returns a store on a fresh database of t's own.
func open(t *testing.T) (*oauthpg.Store, *pgdb.DB) {
	t.Helper()
	db := pgtest.Open(t)
	s, err := oauthpg.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, db
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) authserver.Store {
		s, _ := open(t)
		return s
	})
}

// TestOpenAgain: opening a migrated database again migrates nothing and
// keeps what it holds.
func TestOpenAgain(t *testing.T) {
	ctx := context.Background()
	s, db := open(t)
	c := authserver.Client{ID: "wc_client_0000000000000001", Name: "codex", Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"http://127.0.0.1/cb"}, AuthMethod: authserver.AuthNone, CreatedAt: at}
	if err := s.PutClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	again, err := oauthpg.Open(ctx, db)
	if err != nil {
		t.Fatalf("Open a migrated database: %v", err)
	}
	if got, err := again.Client(ctx, c.ID); err != nil || got.Name != c.Name {
		t.Errorf("Client after a second Open = %+v, %v; want %s", got, err, c.Name)
	}
}

// TestOpenRefusesNewerSchema: a database whose oauth schema a newer
// WebCodex migrated is refused with failure.Conflict naming the schema,
// and left as it is.
func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	_, db := open(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO oauth.schema_migrations (version, name) VALUES (2, '0002_from_the_future.sql')`); err != nil {
		t.Fatal(err)
	}
	_, err := oauthpg.Open(ctx, db)
	if !failure.Is(err, failure.Conflict) {
		t.Fatalf("Open of a newer schema: %v, want %q", err, failure.Conflict)
	}
	if !strings.Contains(err.Error(), oauthpg.Schema) {
		t.Errorf("Open's error %q does not name the schema %s", err, oauthpg.Schema)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM oauth.schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Errorf("schema_migrations after a refused Open = %d rows, %v; want 2", n, err)
	}
}

// TestZeroCacheTimesStoredAsZero: a DCR client's zero FetchedAt and
// FreshUntil are stored as 0, as oauthdb stores them, and read back zero.
func TestZeroCacheTimesStoredAsZero(t *testing.T) {
	ctx := context.Background()
	s, db := open(t)
	c := authserver.Client{ID: "wc_client_0000000000000001", Name: "codex", Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"http://127.0.0.1/cb"}, AuthMethod: authserver.AuthNone, CreatedAt: at}
	if err := s.PutClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	var fetched, fresh int64
	if err := db.Pool.QueryRow(ctx, `SELECT fetched_at, fresh_until FROM oauth.clients WHERE id = $1`, c.ID).Scan(&fetched, &fresh); err != nil {
		t.Fatal(err)
	}
	if fetched != 0 || fresh != 0 {
		t.Errorf("stored fetched_at, fresh_until = %d, %d; want 0, 0", fetched, fresh)
	}
	got, err := s.Client(ctx, c.ID)
	if err != nil || !got.FetchedAt.IsZero() || !got.FreshUntil.IsZero() {
		t.Errorf("Client = %+v, %v; want zero cache times", got, err)
	}
}
