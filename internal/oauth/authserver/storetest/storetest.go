// Package storetest is the contract suite that every [authserver.Store]
// implementation must pass. Implementation packages call [Run] from their
// own tests with a constructor for a fresh, empty store.
//
// Times are whole microseconds so that a backend storing microseconds
// (PostgreSQL) passes as well as one storing nanoseconds.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// Run runs the authserver.Store contract against stores returned by open.
// open must return a new, empty store for every call and arrange its
// cleanup.
func Run(t *testing.T, open func(t *testing.T) authserver.Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(t *testing.T, s authserver.Store)
	}{
		{"PutClientGetList", testPutClientGetList},
		{"PutClientUpdates", testPutClientUpdates},
		{"PutClientRevokedConflict", testPutClientRevokedConflict},
		{"RevokeClientRevokesGrants", testRevokeClientRevokesGrants},
		{"CreateGrantRefusesUnknownOrRevokedClient", testCreateGrantRefuses},
		{"CreateGrantFind", testCreateGrantFind},
		{"Redeem", testRedeem},
		{"RedeemReplayRevokes", testRedeemReplay},
		{"RedeemIsAtomic", testRedeemAtomic},
		{"RevokeGrantKeepsFirstTime", testRevokeGrant},
		{"Sweep", testSweep},
		{"SweepClientsNobodyApproved", testSweepClients},
		{"FindIsNeverStale", testFindNeverStale},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, open(t)) })
	}
}

// base is the contract's clock: whole microseconds, UTC.
var base = time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.UTC)

func client(id string, created time.Duration) authserver.Client {
	return authserver.Client{
		ID: id, Name: "client " + id, Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"https://app.example/cb", "http://127.0.0.1/cb"},
		AuthMethod:   authserver.AuthClientSecretBasic, SecretHash: hash(1000),
		CreatedAt: base.Add(created),
	}
}

func grant(id, clientID string) authserver.Grant {
	return authserver.Grant{
		ID: id, ClientID: clientID, Owner: "alice", Subject: "tok_0000000000000001",
		Scopes:   []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite},
		Resource: "https://wc.example/mcp", Project: "prj_one",
		CreatedAt: base, ExpiresAt: base.Add(authserver.GrantTTL),
	}
}

func secret(h string, kind authserver.SecretKind, grantID string, ttl time.Duration) authserver.Secret {
	s := authserver.Secret{Hash: h, Kind: kind, GrantID: grantID, CreatedAt: base, ExpiresAt: base.Add(ttl)}
	if kind == authserver.KindCode {
		s.Challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
		s.RedirectURI = "https://app.example/cb"
	}
	return s
}

// hash returns a distinct 64-hex-digit secret hash.
func hash(i int) string { return fmt.Sprintf("%064x", i) }

func mustPutClient(t *testing.T, s authserver.Store, c authserver.Client) {
	t.Helper()
	if err := s.PutClient(context.Background(), c); err != nil {
		t.Fatalf("PutClient(%s): %v", c.ID, err)
	}
}

func mustCreateGrant(t *testing.T, s authserver.Store, g authserver.Grant, code authserver.Secret) {
	t.Helper()
	if err := s.CreateGrant(context.Background(), g, code); err != nil {
		t.Fatalf("CreateGrant(%s): %v", g.ID, err)
	}
}

func mustFind(t *testing.T, s authserver.Store, h string) (authserver.Secret, authserver.Grant) {
	t.Helper()
	sec, g, err := s.Find(context.Background(), h)
	if err != nil {
		t.Fatalf("Find(%s…): %v", h[:8], err)
	}
	return sec, g
}

func wantNotFound(t *testing.T, s authserver.Store, h string) {
	t.Helper()
	if sec, _, err := s.Find(context.Background(), h); !failure.Is(err, failure.NotFound) {
		t.Errorf("Find(%s…) = %+v, %v; want %q", h[:8], sec, err, failure.NotFound)
	}
}

func wantTime(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func testPutClientGetList(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	b, a := client("wc_client_000000000000000b", time.Second), client("https://a.example/client.json", 0)
	a.Enrolment, a.AuthMethod, a.SecretHash = authserver.EnrolCIMD, authserver.AuthNone, ""
	a.FetchedAt, a.FreshUntil = base, base.Add(time.Hour)
	mustPutClient(t, s, b)
	mustPutClient(t, s, a)
	got, err := s.Client(ctx, a.ID)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("Client (-want +got):\n%s", diff)
	}
	list, err := s.Clients(ctx)
	if err != nil {
		t.Fatalf("Clients: %v", err)
	}
	if diff := cmp.Diff([]authserver.Client{a, b}, list); diff != "" {
		t.Errorf("Clients not ordered by creation (-want +got):\n%s", diff)
	}
	if _, err := s.Client(ctx, "wc_client_ffffffffffffffff"); !failure.Is(err, failure.NotFound) {
		t.Errorf("Client unknown: %v, want %q", err, failure.NotFound)
	}
}

// testPutClientUpdates: a CIMD document fetched again replaces the name,
// redirect URIs, auth method and cache times, and keeps the creation time.
func testPutClientUpdates(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	c := client("https://a.example/client.json", 0)
	c.Enrolment, c.AuthMethod, c.SecretHash = authserver.EnrolCIMD, authserver.AuthNone, ""
	c.FetchedAt, c.FreshUntil = base, base.Add(time.Hour)
	mustPutClient(t, s, c)
	again := c
	again.Name, again.RedirectURIs = "renamed", []string{"https://b.example/cb"}
	again.FetchedAt, again.FreshUntil = base.Add(2*time.Hour), base.Add(3*time.Hour)
	again.CreatedAt = base.Add(2 * time.Hour)
	mustPutClient(t, s, again)
	got, err := s.Client(ctx, c.ID)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	want := again
	want.CreatedAt = c.CreatedAt
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Client after the update (-want +got):\n%s", diff)
	}
	if list, err := s.Clients(ctx); err != nil || len(list) != 1 {
		t.Errorf("Clients after an update = %d clients, %v; want 1", len(list), err)
	}
}

func testPutClientRevokedConflict(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	c := client("https://a.example/client.json", 0)
	mustPutClient(t, s, c)
	at := base.Add(time.Minute)
	if _, err := s.RevokeClient(ctx, c.ID, at); err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	again := c
	again.Name, again.RedirectURIs = "back again", []string{"https://evil.example/cb"}
	if err := s.PutClient(ctx, again); !failure.Is(err, failure.Conflict) {
		t.Fatalf("PutClient of a revoked client: %v, want %q", err, failure.Conflict)
	}
	got, err := s.Client(ctx, c.ID)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	want := c
	want.RevokedAt = &at
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("revoked client after a refused PutClient (-want +got):\n%s", diff)
	}
}

func testRevokeClientRevokesGrants(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	c, other := client("wc_client_0000000000000001", 0), client("wc_client_0000000000000002", time.Second)
	mustPutClient(t, s, c)
	mustPutClient(t, s, other)
	mustCreateGrant(t, s, grant("grt_1", c.ID), secret(hash(1), authserver.KindCode, "grt_1", authserver.CodeTTL))
	mustCreateGrant(t, s, grant("grt_2", c.ID), secret(hash(2), authserver.KindCode, "grt_2", authserver.CodeTTL))
	mustCreateGrant(t, s, grant("grt_3", other.ID), secret(hash(3), authserver.KindCode, "grt_3", authserver.CodeTTL))
	earlier := base.Add(time.Minute)
	if err := s.RevokeGrant(ctx, "grt_2", earlier); err != nil {
		t.Fatalf("RevokeGrant: %v", err)
	}
	first := base.Add(time.Hour)
	got, err := s.RevokeClient(ctx, c.ID, first)
	if err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	wantTime(t, "RevokedAt", got.RevokedAt, first)
	if got.ID != c.ID || got.Name != c.Name {
		t.Errorf("RevokeClient returned %+v, want client %s", got, c.ID)
	}
	got, err = s.RevokeClient(ctx, c.ID, first.Add(time.Hour))
	if err != nil {
		t.Fatalf("second RevokeClient: %v", err)
	}
	wantTime(t, "RevokedAt after a second RevokeClient", got.RevokedAt, first)
	if stored, err := s.Client(ctx, c.ID); err != nil {
		t.Fatalf("Client: %v", err)
	} else {
		wantTime(t, "stored RevokedAt", stored.RevokedAt, first)
	}
	_, g1 := mustFind(t, s, hash(1))
	wantTime(t, "grant 1 RevokedAt", g1.RevokedAt, first)
	_, g2 := mustFind(t, s, hash(2))
	wantTime(t, "grant 2 (revoked before) RevokedAt", g2.RevokedAt, earlier)
	if _, g3 := mustFind(t, s, hash(3)); g3.Revoked() {
		t.Errorf("another client's grant was revoked: %v", g3.RevokedAt)
	}
	if o, err := s.Client(ctx, other.ID); err != nil || o.Revoked() {
		t.Errorf("another client = %+v, %v; want it unrevoked", o, err)
	}
	if _, err := s.RevokeClient(ctx, "wc_client_ffffffffffffffff", first); !failure.Is(err, failure.NotFound) {
		t.Errorf("RevokeClient unknown: %v, want %q", err, failure.NotFound)
	}
	if list, err := s.Clients(ctx); err != nil || len(list) != 2 {
		t.Errorf("Clients after revoking an unknown client = %d, %v; want 2", len(list), err)
	}
}

func testCreateGrantRefuses(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	c := client("wc_client_0000000000000001", 0)
	mustPutClient(t, s, c)
	if _, err := s.RevokeClient(ctx, c.ID, base); err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	for i, id := range []string{"wc_client_ffffffffffffffff", c.ID} {
		g := grant(fmt.Sprintf("grt_%d", i), id)
		if err := s.CreateGrant(ctx, g, secret(hash(i), authserver.KindCode, g.ID, authserver.CodeTTL)); !failure.Is(err, failure.NotFound) {
			t.Errorf("CreateGrant for client %s: %v, want %q", id, err, failure.NotFound)
		}
		wantNotFound(t, s, hash(i))
		if err := s.RevokeGrant(ctx, g.ID, base); !failure.Is(err, failure.NotFound) {
			t.Errorf("RevokeGrant of a refused grant: %v, want %q (it must not be stored)", err, failure.NotFound)
		}
	}
	if n, err := s.Sweep(ctx, base.Add(10*authserver.GrantTTL)); err != nil || n != 0 {
		t.Errorf("Sweep after refused grants = %d, %v; want 0 rows", n, err)
	}
}

func testCreateGrantFind(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	c := client("wc_client_0000000000000001", 0)
	mustPutClient(t, s, c)
	g := grant("grt_1", c.ID)
	code := secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL)
	mustCreateGrant(t, s, g, code)
	sec, got := mustFind(t, s, hash(1))
	if diff := cmp.Diff(code, sec); diff != "" {
		t.Errorf("Find secret (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(g, got); diff != "" {
		t.Errorf("Find grant (-want +got):\n%s", diff)
	}
	// The caller owns what Find returns.
	got.Scopes[0] = auth.ScopeAdmin
	if _, again := mustFind(t, s, hash(1)); !cmp.Equal(g.Scopes, again.Scopes) {
		t.Errorf("Find after the caller changed its scopes = %v, want %v", again.Scopes, g.Scopes)
	}
	wantNotFound(t, s, hash(2))
	if err := s.RevokeGrant(ctx, "grt_unknown", base); !failure.Is(err, failure.NotFound) {
		t.Errorf("RevokeGrant unknown: %v, want %q", err, failure.NotFound)
	}
}

func testRedeem(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	g := grant("grt_1", "wc_client_0000000000000001")
	mustCreateGrant(t, s, g, secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL))
	at := base.Add(time.Minute)
	access := secret(hash(2), authserver.KindAccess, g.ID, authserver.AccessTTL)
	refresh := secret(hash(3), authserver.KindRefresh, g.ID, authserver.RefreshTTL)
	if err := s.Redeem(ctx, hash(1), at, []authserver.Secret{access, refresh}); err != nil {
		t.Fatalf("Redeem: %v", err)
	}
	code, _ := mustFind(t, s, hash(1))
	wantTime(t, "the code's UsedAt", code.UsedAt, at)
	for _, want := range []authserver.Secret{access, refresh} {
		sec, gg := mustFind(t, s, want.Hash)
		if diff := cmp.Diff(want, sec); diff != "" {
			t.Errorf("issued %s (-want +got):\n%s", want.Kind, diff)
		}
		if diff := cmp.Diff(g, gg); diff != "" {
			t.Errorf("issued %s's grant (-want +got):\n%s", want.Kind, diff)
		}
	}
	if err := s.Redeem(ctx, hash(99), at, []authserver.Secret{secret(hash(4), authserver.KindAccess, g.ID, time.Hour)}); !failure.Is(err, failure.NotFound) {
		t.Errorf("Redeem unknown: %v, want %q", err, failure.NotFound)
	}
	wantNotFound(t, s, hash(4))
}

// testRedeemReplay: a spent secret redeemed again revokes its grant (the
// revocation is kept although Redeem fails) and issues nothing.
func testRedeemReplay(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	g := grant("grt_1", "wc_client_0000000000000001")
	mustCreateGrant(t, s, g, secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL))
	first := base.Add(time.Minute)
	if err := s.Redeem(ctx, hash(1), first, []authserver.Secret{secret(hash(2), authserver.KindRefresh, g.ID, time.Hour)}); err != nil {
		t.Fatalf("Redeem: %v", err)
	}
	replay := first.Add(time.Minute)
	err := s.Redeem(ctx, hash(1), replay, []authserver.Secret{secret(hash(3), authserver.KindAccess, g.ID, time.Hour)})
	if !failure.Is(err, failure.Conflict) {
		t.Fatalf("Redeem of a spent secret: %v, want %q", err, failure.Conflict)
	}
	wantNotFound(t, s, hash(3))
	code, gg := mustFind(t, s, hash(1))
	wantTime(t, "the code's UsedAt after the replay", code.UsedAt, first)
	wantTime(t, "the grant's RevokedAt", gg.RevokedAt, replay)
	_, gg = mustFind(t, s, hash(2))
	wantTime(t, "the grant's RevokedAt seen from its refresh token", gg.RevokedAt, replay)
	// A third presentation keeps the first revocation time.
	if err := s.Redeem(ctx, hash(1), replay.Add(time.Hour), nil); !failure.Is(err, failure.Conflict) {
		t.Fatalf("third Redeem: %v, want %q", err, failure.Conflict)
	}
	_, gg = mustFind(t, s, hash(1))
	wantTime(t, "RevokedAt after a third presentation", gg.RevokedAt, replay)
}

// testRedeemAtomic: when what Redeem issues cannot be stored (a hash
// already taken), the secret stays unspent and nothing is issued.
func testRedeemAtomic(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	g := grant("grt_1", "wc_client_0000000000000001")
	mustCreateGrant(t, s, g, secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL))
	mustCreateGrant(t, s, grant("grt_2", g.ClientID), secret(hash(2), authserver.KindCode, "grt_2", authserver.CodeTTL))
	issue := []authserver.Secret{
		secret(hash(3), authserver.KindAccess, g.ID, time.Hour),
		secret(hash(2), authserver.KindRefresh, g.ID, time.Hour), // taken
	}
	if err := s.Redeem(ctx, hash(1), base.Add(time.Minute), issue); err == nil {
		t.Fatal("Redeem issuing a taken hash succeeded")
	}
	if code, gg := mustFind(t, s, hash(1)); code.UsedAt != nil || gg.Revoked() {
		t.Errorf("after a failed Redeem the code is used at %v, its grant revoked at %v; want neither", code.UsedAt, gg.RevokedAt)
	}
	wantNotFound(t, s, hash(3))
	if other, _ := mustFind(t, s, hash(2)); other.Kind != authserver.KindCode || other.GrantID != "grt_2" {
		t.Errorf("the taken hash now holds %+v, want grant 2's code", other)
	}
	if err := s.Redeem(ctx, hash(1), base.Add(time.Minute), issue[:1]); err != nil {
		t.Errorf("Redeem after a failed one: %v", err)
	}
}

func testRevokeGrant(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	g := grant("grt_1", "wc_client_0000000000000001")
	mustCreateGrant(t, s, g, secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL))
	first := base.Add(time.Minute)
	for _, at := range []time.Time{first, first.Add(time.Hour)} {
		if err := s.RevokeGrant(ctx, g.ID, at); err != nil {
			t.Fatalf("RevokeGrant(%v): %v", at, err)
		}
		_, gg := mustFind(t, s, hash(1))
		wantTime(t, "RevokedAt", gg.RevokedAt, first)
	}
	if c, err := s.Client(ctx, g.ClientID); err != nil || c.Revoked() {
		t.Errorf("the grant's client = %+v, %v; want it unrevoked", c, err)
	}
}

// testSweep: unspent secrets that expired before t go; spent ones of live
// grants stay; grants revoked or expired before t go with their secrets;
// what ends exactly at t stays.
func testSweep(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	at := base.Add(30 * time.Minute)
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	live, revoked, expired := grant("grt_live", "wc_client_0000000000000001"), grant("grt_revoked", "wc_client_0000000000000001"), grant("grt_expired", "wc_client_0000000000000001")
	expired.ExpiresAt = base.Add(10 * time.Minute)
	mustCreateGrant(t, s, live, secret(hash(1), authserver.KindCode, live.ID, 5*time.Minute))    // spent below
	mustCreateGrant(t, s, revoked, secret(hash(10), authserver.KindCode, revoked.ID, time.Hour)) // its grant goes
	mustCreateGrant(t, s, expired, secret(hash(20), authserver.KindCode, expired.ID, time.Hour)) // its grant goes
	mustCreateGrant(t, s, grant("grt_edge", live.ClientID), secret(hash(30), authserver.KindCode, "grt_edge", 0))
	if err := s.Redeem(ctx, hash(1), base.Add(time.Minute), []authserver.Secret{
		secret(hash(2), authserver.KindRefresh, live.ID, 20*time.Minute), // unspent, expired: goes
		secret(hash(3), authserver.KindAccess, live.ID, 30*time.Minute),  // expires exactly at t: stays
		secret(hash(4), authserver.KindAccess, live.ID, time.Hour),       // live: stays
		secret(hash(5), authserver.KindRefresh, live.ID, 10*time.Minute), // spent below: stays
	}); err != nil {
		t.Fatalf("Redeem: %v", err)
	}
	if err := s.Redeem(ctx, hash(5), base.Add(2*time.Minute), nil); err != nil {
		t.Fatalf("Redeem refresh: %v", err)
	}
	if err := s.RevokeGrant(ctx, revoked.ID, base.Add(time.Minute)); err != nil {
		t.Fatalf("RevokeGrant: %v", err)
	}
	// grt_edge's code expired at base (before t): it goes, its grant stays.
	n, err := s.Sweep(ctx, at)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 6 { // hash 2, hash 30; grt_revoked and hash 10; grt_expired and hash 20
		t.Errorf("Sweep deleted %d rows, want 6", n)
	}
	for _, h := range []string{hash(2), hash(10), hash(20), hash(30)} {
		wantNotFound(t, s, h)
	}
	for _, h := range []string{hash(1), hash(3), hash(4), hash(5)} {
		mustFind(t, s, h)
	}
	if err := s.RevokeGrant(ctx, revoked.ID, at); !failure.Is(err, failure.NotFound) {
		t.Errorf("RevokeGrant of a swept grant: %v, want %q", err, failure.NotFound)
	}
	if err := s.RevokeGrant(ctx, "grt_edge", at); err != nil {
		t.Errorf("RevokeGrant of a live grant whose code was swept: %v", err)
	}
	// A spent code presented again is still a replay.
	if err := s.Redeem(ctx, hash(1), at, nil); !failure.Is(err, failure.Conflict) {
		t.Errorf("Redeem of a spent code kept by Sweep: %v, want %q", err, failure.Conflict)
	}
	if n, err := s.Sweep(ctx, base); err != nil || n != 0 {
		t.Errorf("Sweep at an earlier time = %d, %v; want 0", n, err)
	}
}

// testSweepClients: an unrevoked client created before t-UnusedClientTTL
// that holds no grant goes; one created at t-UnusedClientTTL or later, one
// with a live grant and a revoked one stay. A client whose only grant the
// sweep deletes holds no grant after it: it is gone after a second sweep
// at the latest.
func testSweepClients(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	at := base.Add(authserver.UnusedClientTTL + time.Minute)
	for _, c := range []authserver.Client{
		client("unused", 0), client("edge", time.Minute), client("young", time.Hour),
		client("granted", 0), client("revoked", 0), client("ended", 0),
	} {
		mustPutClient(t, s, c)
	}
	mustCreateGrant(t, s, grant("grt_granted", "granted"), secret(hash(1), authserver.KindCode, "grt_granted", authserver.GrantTTL))
	mustCreateGrant(t, s, grant("grt_ended", "ended"), secret(hash(2), authserver.KindCode, "grt_ended", authserver.GrantTTL))
	if err := s.RevokeGrant(ctx, "grt_ended", base.Add(time.Second)); err != nil {
		t.Fatalf("RevokeGrant: %v", err)
	}
	if _, err := s.RevokeClient(ctx, "revoked", base.Add(time.Second)); err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	var n int64
	for range 2 {
		k, err := s.Sweep(ctx, at)
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		n += k
	}
	if n != 4 { // unused; grt_ended, its code and its client
		t.Errorf("Sweep deleted %d rows, want 4", n)
	}
	for _, id := range []string{"unused", "ended"} {
		if c, err := s.Client(ctx, id); !failure.Is(err, failure.NotFound) {
			t.Errorf("client %s after the sweep = %+v, %v; want %q", id, c, err, failure.NotFound)
		}
	}
	for _, id := range []string{"edge", "young", "granted", "revoked"} {
		if _, err := s.Client(ctx, id); err != nil {
			t.Errorf("client %s after the sweep: %v, want it kept", id, err)
		}
	}
	mustFind(t, s, hash(1))
	if list, err := s.Clients(ctx); err != nil || len(list) != 4 {
		t.Errorf("Clients after the sweep = %d, %v; want 4", len(list), err)
	}
}

// testFindNeverStale: whatever a read cache keeps, Find after a change
// returns the change.
func testFindNeverStale(t *testing.T, s authserver.Store) {
	ctx := context.Background()
	mustPutClient(t, s, client("wc_client_0000000000000001", 0))
	g := grant("grt_1", "wc_client_0000000000000001")
	mustCreateGrant(t, s, g, secret(hash(1), authserver.KindCode, g.ID, authserver.CodeTTL))
	for range 2 {
		if sec, gg := mustFind(t, s, hash(1)); sec.UsedAt != nil || gg.Revoked() {
			t.Fatalf("Find before any change = %+v, %+v", sec, gg)
		}
	}
	used := base.Add(time.Minute)
	if err := s.Redeem(ctx, hash(1), used, []authserver.Secret{secret(hash(2), authserver.KindAccess, g.ID, time.Hour)}); err != nil {
		t.Fatalf("Redeem: %v", err)
	}
	sec, _ := mustFind(t, s, hash(1))
	wantTime(t, "UsedAt right after Redeem", sec.UsedAt, used)
	mustFind(t, s, hash(2))
	revoked := base.Add(2 * time.Minute)
	if err := s.RevokeGrant(ctx, g.ID, revoked); err != nil {
		t.Fatalf("RevokeGrant: %v", err)
	}
	_, gg := mustFind(t, s, hash(2))
	wantTime(t, "RevokedAt right after RevokeGrant", gg.RevokedAt, revoked)

	g2 := grant("grt_2", g.ClientID)
	mustCreateGrant(t, s, g2, secret(hash(3), authserver.KindCode, g2.ID, authserver.CodeTTL))
	mustFind(t, s, hash(3))
	clientRevoked := base.Add(3 * time.Minute)
	if _, err := s.RevokeClient(ctx, g.ClientID, clientRevoked); err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	_, gg = mustFind(t, s, hash(3))
	wantTime(t, "RevokedAt right after RevokeClient", gg.RevokedAt, clientRevoked)
	if _, err := s.Sweep(ctx, base.Add(authserver.GrantTTL+time.Hour)); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	wantNotFound(t, s, hash(3))
}
