package oauthpg_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// Sizes of the race tests: how many goroutines redeem one secret, and how
// many independent rounds each test runs (each round is one interleaving
// the scheduler picks; -count repeats them).
const (
	racers = 8
	rounds = 4
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)

func testClient(id string, created time.Time) authserver.Client {
	return authserver.Client{ID: id, Name: "client " + id, Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"http://127.0.0.1/cb"}, AuthMethod: authserver.AuthNone, CreatedAt: created}
}

func testGrant(id, clientID string) authserver.Grant {
	return authserver.Grant{ID: id, ClientID: clientID, Owner: "alice", Subject: "tok_0000000000000001",
		Scopes: []auth.Scope{auth.ScopeProjectRead}, Resource: "https://wc.example/mcp", CreatedAt: at, ExpiresAt: at.Add(authserver.GrantTTL)}
}

func testSecret(h string, kind authserver.SecretKind, grantID string) authserver.Secret {
	return authserver.Secret{Hash: h, Kind: kind, GrantID: grantID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
}

// together runs fns at once (each waits for the others to have started)
// and waits for all of them.
func together(fns ...func()) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for _, fn := range fns {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			fn()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// TestRedeemConcurrentlyOneWins: of racers redeeming one code at once,
// exactly one succeeds and stores what it issued; every other one is a
// replay (failure.Conflict) that issues nothing and revokes the grant.
func TestRedeemConcurrentlyOneWins(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if err := s.PutClient(ctx, testClient("wc_client_0000000000000001", at)); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		g := testGrant(fmt.Sprintf("grt_%d", r), "wc_client_0000000000000001")
		code := fmt.Sprintf("code_%d", r)
		if err := s.CreateGrant(ctx, g, testSecret(code, authserver.KindCode, g.ID)); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, racers)
		fns := make([]func(), racers)
		for i := range racers {
			fns[i] = func() {
				errs[i] = s.Redeem(ctx, code, at.Add(time.Duration(i+1)*time.Minute),
					[]authserver.Secret{testSecret(fmt.Sprintf("access_%d_%d", r, i), authserver.KindAccess, g.ID)})
			}
		}
		together(fns...)
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: racers %d and %d both redeemed the code", r, winner, i)
			case err == nil:
				winner = i
			case !failure.Is(err, failure.Conflict):
				t.Errorf("round %d: racer %d: %v, want nil or %q", r, i, err, failure.Conflict)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no racer redeemed the code: %v", r, errs)
		}
		sec, gg := mustFind(t, s, code)
		wantAt := at.Add(time.Duration(winner+1) * time.Minute)
		if sec.UsedAt == nil || !sec.UsedAt.Equal(wantAt) {
			t.Errorf("round %d: the code's UsedAt = %v, want the winner's %v", r, sec.UsedAt, wantAt)
		}
		if !gg.Revoked() {
			t.Errorf("round %d: the grant survived %d replays", r, racers-1)
		}
		for i := range racers {
			_, _, err := s.Find(ctx, fmt.Sprintf("access_%d_%d", r, i))
			if i == winner && err != nil {
				t.Errorf("round %d: the winner's access token: %v", r, err)
			}
			if i != winner && !failure.Is(err, failure.NotFound) {
				t.Errorf("round %d: loser %d's access token: %v, want %q", r, i, err, failure.NotFound)
			}
		}
	}
}

// TestCreateGrantRacesRevokeClient: whichever commits first, no live grant
// of a revoked client remains: either CreateGrant is refused, or its grant
// is revoked with the client.
func TestCreateGrantRacesRevokeClient(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for r := range rounds {
		id, g, sec := roundClient(t, s, r)
		code := sec.Hash
		var createErr, revokeErr error
		together(
			func() { createErr = s.CreateGrant(ctx, g, sec) },
			func() { _, revokeErr = s.RevokeClient(ctx, id, at.Add(time.Minute)) },
		)
		if revokeErr != nil {
			t.Fatalf("round %d: RevokeClient: %v", r, revokeErr)
		}
		switch {
		case failure.Is(createErr, failure.NotFound):
			wantNotFound(t, s, code)
		case createErr != nil:
			t.Fatalf("round %d: CreateGrant: %v, want nil or %q", r, createErr, failure.NotFound)
		default:
			if _, gg := mustFind(t, s, code); !gg.Revoked() {
				t.Errorf("round %d: a grant of the revoked client %s is live", r, id)
			}
		}
	}
}

// TestSweepRacesCreateGrant: a sweep deleting an unused client and a
// grant approved for it at the same moment never both succeed: either the
// grant is stored and its client kept, or CreateGrant is refused and the
// client is gone. Neither fails otherwise.
func TestSweepRacesCreateGrant(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	now := at.Add(authserver.UnusedClientTTL + time.Hour)
	for r := range rounds {
		id, g, sec := roundClient(t, s, r)
		code := sec.Hash
		sec.ExpiresAt = now.Add(time.Hour) // not swept itself
		var createErr, sweepErr error
		together(
			func() { createErr = s.CreateGrant(ctx, g, sec) },
			func() { _, sweepErr = s.Sweep(ctx, now) },
		)
		if sweepErr != nil {
			t.Fatalf("round %d: Sweep: %v", r, sweepErr)
		}
		_, clientErr := s.Client(ctx, id)
		switch {
		case failure.Is(createErr, failure.NotFound):
			wantNotFound(t, s, code)
			if !failure.Is(clientErr, failure.NotFound) {
				t.Errorf("round %d: CreateGrant was refused but the client is there: %v", r, clientErr)
			}
		case createErr != nil:
			t.Fatalf("round %d: CreateGrant: %v, want nil or %q", r, createErr, failure.NotFound)
		default:
			mustFind(t, s, code)
			if clientErr != nil {
				t.Errorf("round %d: the sweep deleted a client that holds a grant: %v", r, clientErr)
			}
		}
	}
}

// roundClient stores a new client for round r, created at at, and returns
// its id with a grant of it and the grant's code, neither stored.
func roundClient(t *testing.T, s authserver.Store, r int) (string, authserver.Grant, authserver.Secret) {
	t.Helper()
	id := fmt.Sprintf("wc_client_%016d", r)
	if err := s.PutClient(context.Background(), testClient(id, at)); err != nil {
		t.Fatal(err)
	}
	g := testGrant(fmt.Sprintf("grt_%d", r), id)
	return id, g, testSecret(fmt.Sprintf("code_%d", r), authserver.KindCode, g.ID)
}

func mustFind(t *testing.T, s authserver.Store, h string) (authserver.Secret, authserver.Grant) {
	t.Helper()
	sec, g, err := s.Find(context.Background(), h)
	if err != nil {
		t.Fatalf("Find(%s): %v", h, err)
	}
	return sec, g
}

func wantNotFound(t *testing.T, s authserver.Store, h string) {
	t.Helper()
	if sec, _, err := s.Find(context.Background(), h); !failure.Is(err, failure.NotFound) {
		t.Errorf("Find(%s) = %+v, %v; want %q", h, sec, err, failure.NotFound)
	}
}

// TestPutClientConcurrently: replicas enrolling the same new client at
// once all succeed and leave one client.
func TestPutClientConcurrently(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	for r := range rounds {
		id := fmt.Sprintf("https://app%d.example/client.json", r)
		errs := make([]error, racers)
		fns := make([]func(), racers)
		for i := range racers {
			fns[i] = func() {
				c := testClient(id, at)
				c.Name = fmt.Sprintf("fetch %d", i)
				errs[i] = s.PutClient(ctx, c)
			}
		}
		together(fns...)
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: PutClient %d: %v", r, i, err)
			}
		}
	}
	if list, err := s.Clients(ctx); err != nil || len(list) != rounds {
		t.Errorf("Clients = %d, %v; want %d", len(list), err, rounds)
	}
}
