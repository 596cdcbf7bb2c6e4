package authpg_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authpg"
	"github.com/webcodex/webcodex/internal/auth/storetest"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// open returns a Store on a fresh database of its own.
func open(t *testing.T) *authpg.Store {
	t.Helper()
	return mustOpen(t, pgtest.Open(t))
}

func mustOpen(t *testing.T, db *pgdb.DB) *authpg.Store {
	t.Helper()
	s, err := authpg.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) auth.Store { return open(t) })
}

func TestConsoleContract(t *testing.T) {
	storetest.RunConsole(t, func(t *testing.T) auth.ConsoleStore { return open(t) })
}

// TestPersistsAcrossReopen opens a second Store on the same database (as a
// restarted process or another replica does): the tokens, the revocation
// and the console session are there, and Open migrates nothing twice.
func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	s := mustOpen(t, db)
	svc, err := auth.NewService(s, auth.Options{Consoles: s})
	if err != nil {
		t.Fatal(err)
	}
	raw, tok, err := svc.CreateToken(ctx, "ci", "team-a", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	revokedRaw, revoked, err := svc.CreateToken(ctx, "old", "team-a", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if _, err := svc.RevokeToken(ctx, revoked.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	login, err := svc.LoginConsole(ctx, raw)
	if err != nil {
		t.Fatalf("LoginConsole: %v", err)
	}
	// Neither the raw token nor the cookie reaches the database.
	var rows string
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT string_agg(t::text, ' ') FROM auth.tokens t) || ' ' ||
		(SELECT string_agg(c::text, ' ') FROM auth.console_sessions c)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rows, raw) || strings.Contains(rows, login.Cookie) || !strings.Contains(rows, auth.HashToken(raw)) {
		t.Fatalf("auth rows hold a raw credential, or not the token's hash: %s", rows)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, db)
	svc, err = auth.NewService(s, auth.Options{Consoles: s})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, raw)
	if err != nil {
		t.Fatalf("Authenticate after reopen: %v", err)
	}
	want := auth.Principal{Kind: auth.KindAPIToken, ID: tok.ID, Owner: "team-a", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("principal after reopen (-want +got):\n%s", diff)
	}
	if _, err := svc.Authenticate(ctx, revokedRaw); !failure.Is(err, failure.Unauthenticated) {
		t.Errorf("revoked token after reopen: %v, want %q", err, failure.Unauthenticated)
	}
	if p, err := svc.ConsolePrincipal(ctx, login.Cookie); err != nil || p.ID != tok.ID {
		t.Errorf("console session after reopen = %+v, %v; want token %s", p, err, tok.ID)
	}
	var versions int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM auth.schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != 1 {
		t.Errorf("auth.schema_migrations has %d rows after two opens, want 1", versions)
	}
}

// TestRevocationSeenByAnotherStore holds FindByHash to the database: a
// token revoked through a second Store on the same database (another
// replica, or `webcodex token revoke`) is refused by the first Store's
// next authentication.
func TestRevocationSeenByAnotherStore(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	serving, other := mustOpen(t, db), mustOpen(t, db)
	svc, err := auth.NewService(serving, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, tok, err := svc.CreateToken(ctx, "agent", "alice", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := svc.Authenticate(ctx, raw); err != nil || p.ID != tok.ID {
		t.Fatalf("Authenticate = %+v, %v; want token %s", p, err, tok.ID)
	}
	if _, err := other.Revoke(ctx, tok.ID, tok.CreatedAt); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, raw); !failure.Is(err, failure.Unauthenticated) {
		t.Fatalf("Authenticate after another store revoked the token: %v, want %q", err, failure.Unauthenticated)
	}
}

// TestRefusesNewerSchema: a database whose auth schema a newer WebCodex
// migrated is refused with failure.Conflict naming the schema, and left as
// it was.
func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	mustOpen(t, db)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO auth.schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	_, err := authpg.Open(ctx, db)
	if !failure.Is(err, failure.Conflict) {
		t.Fatalf("Open of a newer schema: %v, want %q", err, failure.Conflict)
	}
	if !strings.Contains(err.Error(), "schema "+authpg.Schema) {
		t.Errorf("Open's error %q does not name the schema %s", err, authpg.Schema)
	}
	var versions int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM auth.schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != 2 {
		t.Errorf("auth.schema_migrations has %d rows after a refused open, want 2", versions)
	}
}

// racers is how many stores race in TestRacingReplicas.
const racers = 8

// TestRacingReplicas runs racers Stores at once on one database (on the
// connections of one pool, where replicas would each have their own),
// creating tokens with one hash, then revoking one token at different
// times: exactly one create wins and every other gets failure.Conflict,
// and every Revoke returns the one revocation time that was stored.
func TestRacingReplicas(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Open(t)
	stores := make([]*authpg.Store, racers)
	for i := range stores {
		stores[i] = mustOpen(t, db)
	}
	base := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	hash := auth.HashToken(auth.TokenPrefix + strings.Repeat("A", 43))
	createErrs := make([]error, racers)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			tok := auth.Token{ID: fmt.Sprintf("tok_%016x", i), Name: "racer", Owner: "local", CreatedAt: base, Kind: auth.KindAPIToken}
			createErrs[i] = s.Create(ctx, tok, hash)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range createErrs {
		switch {
		case err == nil:
			won++
		case !failure.Is(err, failure.Conflict):
			t.Errorf("racer %d Create: %v, want nil or %q", i, err, failure.Conflict)
		}
	}
	winner, err := stores[0].FindByHash(ctx, hash)
	if won != 1 || err != nil {
		t.Fatalf("%d creates won, FindByHash: %v; want exactly 1 and the winner", won, err)
	}

	revoked := make([]auth.Token, racers)
	revokeErrs := make([]error, racers)
	for i, s := range stores {
		wg.Go(func() {
			revoked[i], revokeErrs[i] = s.Revoke(ctx, winner.ID, base.Add(time.Duration(i+1)*time.Hour))
		})
	}
	wg.Wait()
	stored, err := stores[0].FindByHash(ctx, hash)
	if err != nil || stored.RevokedAt == nil {
		t.Fatalf("FindByHash after the revocations = %+v, %v; want a revoked token", stored, err)
	}
	for i := range stores {
		if revokeErrs[i] != nil || revoked[i].RevokedAt == nil || !revoked[i].RevokedAt.Equal(*stored.RevokedAt) {
			t.Errorf("racer %d Revoke = %v, %v; want the stored first time %v", i, revoked[i].RevokedAt, revokeErrs[i], stored.RevokedAt)
		}
	}
}
