// Package storetest is the contract suite that every [auth.Store]
// implementation must pass. Implementation packages call [Run] from their own
// tests with a constructor for a fresh, empty store.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// Run runs the auth.Store contract against stores returned by open. open
// must return a new, empty store for every call and arrange its cleanup.
func Run(t *testing.T, open func(t *testing.T) auth.Store) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	mk := func(i int) (auth.Token, string) {
		t := auth.Token{
			ID:        fmt.Sprintf("tok_%016x", i),
			Name:      fmt.Sprintf("token %d", i),
			Owner:     "local",
			Scopes:    []auth.Scope{auth.ScopeProjectRead, auth.ScopeJobRun},
			CreatedAt: base.Add(time.Duration(i) * time.Second),
			Kind:      auth.KindAPIToken,
		}
		if i%2 == 0 {
			t.Tools = []string{"read_files", "git_diff"} // a tool profile round-trips
		}
		return t, fmt.Sprintf("%064x", i)
	}

	t.Run("CreateFindList", func(t *testing.T) {
		s := open(t)
		t2, h2 := mk(2)
		t1, h1 := mk(1)
		for _, c := range []struct {
			t auth.Token
			h string
		}{{t2, h2}, {t1, h1}} {
			if err := s.Create(ctx, c.t, c.h); err != nil {
				t.Fatalf("Create(%s): %v", c.t.ID, err)
			}
		}
		got, err := s.FindByHash(ctx, h1)
		if err != nil {
			t.Fatalf("FindByHash: %v", err)
		}
		if diff := cmp.Diff(t1, got); diff != "" {
			t.Errorf("FindByHash (-want +got):\n%s", diff)
		}
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if diff := cmp.Diff([]auth.Token{t1, t2}, list); diff != "" {
			t.Errorf("List not ordered by creation (-want +got):\n%s", diff)
		}
	})

	t.Run("KindsRoundTrip", func(t *testing.T) { kindsRoundTrip(t, open(t), mk, base) })

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		if _, err := s.FindByHash(ctx, fmt.Sprintf("%064x", 99)); !failure.Is(err, failure.NotFound) {
			t.Errorf("FindByHash unknown: %v, want %q", err, failure.NotFound)
		}
		if _, err := s.Revoke(ctx, "tok_00000000000000ff", base); !failure.Is(err, failure.NotFound) {
			t.Errorf("Revoke unknown: %v, want %q", err, failure.NotFound)
		}
		if err := s.Touch(ctx, "tok_00000000000000ff", base); !failure.Is(err, failure.NotFound) {
			t.Errorf("Touch unknown: %v, want %q", err, failure.NotFound)
		}
	})

	t.Run("ErrInvalidArguments", func(t *testing.T) { errInvalidArguments(t, open(t), mk) })

	t.Run("ErrConflict", func(t *testing.T) {
		s := open(t)
		tok, h := mk(1)
		if err := s.Create(ctx, tok, h); err != nil {
			t.Fatalf("Create: %v", err)
		}
		other, otherHash := mk(2)
		dupID := other
		dupID.ID = tok.ID
		if err := s.Create(ctx, dupID, otherHash); !failure.Is(err, failure.Conflict) {
			t.Errorf("Create with a taken id: %v, want %q", err, failure.Conflict)
		}
		if err := s.Create(ctx, other, h); !failure.Is(err, failure.Conflict) {
			t.Errorf("Create with a taken hash: %v, want %q", err, failure.Conflict)
		}
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if diff := cmp.Diff([]auth.Token{tok}, list); diff != "" {
			t.Errorf("List after refused creates (-want +got):\n%s", diff)
		}
	})

	t.Run("RevokeKeepsFirstTime", func(t *testing.T) {
		s := open(t)
		tok, h := mk(1)
		if err := s.Create(ctx, tok, h); err != nil {
			t.Fatalf("Create: %v", err)
		}
		first := base.Add(time.Hour)
		got, err := s.Revoke(ctx, tok.ID, first)
		if err != nil {
			t.Fatalf("Revoke: %v", err)
		}
		if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
			t.Fatalf("RevokedAt = %v, want %v", got.RevokedAt, first)
		}
		got, err = s.Revoke(ctx, tok.ID, first.Add(time.Hour))
		if err != nil {
			t.Fatalf("second Revoke: %v", err)
		}
		if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
			t.Errorf("RevokedAt after second Revoke = %v, want the first %v", got.RevokedAt, first)
		}
		found, err := s.FindByHash(ctx, h)
		if err != nil {
			t.Fatalf("FindByHash of a revoked token: %v, want the record", err)
		}
		if found.RevokedAt == nil || !found.RevokedAt.Equal(first) {
			t.Errorf("FindByHash RevokedAt = %v, want %v", found.RevokedAt, first)
		}
	})

	t.Run("TouchOnlyAdvances", func(t *testing.T) {
		s := open(t)
		tok, h := mk(1)
		if err := s.Create(ctx, tok, h); err != nil {
			t.Fatalf("Create: %v", err)
		}
		later := base.Add(2 * time.Hour)
		if err := s.Touch(ctx, tok.ID, later); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if err := s.Touch(ctx, tok.ID, base.Add(time.Hour)); err != nil {
			t.Fatalf("Touch with an older time: %v", err)
		}
		got, err := s.FindByHash(ctx, h)
		if err != nil {
			t.Fatalf("FindByHash: %v", err)
		}
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(later) {
			t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, later)
		}
	})
}

// kindsRoundTrip checks that a token's kind, project and expiry (from
// base) round-trip through s, and that a token stored without a kind reads back as an API
// token.
func kindsRoundTrip(t *testing.T, s auth.Store, mk func(int) (auth.Token, string), base time.Time) {
	ctx := context.Background()
	expires := base.Add(24 * time.Hour)
	cred, hc := mk(1)
	cred.Kind, cred.Project, cred.ExpiresAt = auth.KindProjectCredential, "demo", &expires
	share, hs := mk(2)
	share.Kind, share.Project, share.Owner = auth.KindProjectShare, "agent:box:api", "friend"
	legacy, hl := mk(3)
	legacy.Kind = "" // stored and read back as an API token
	for _, c := range []struct {
		t auth.Token
		h string
	}{{cred, hc}, {share, hs}, {legacy, hl}} {
		if err := s.Create(ctx, c.t, c.h); err != nil {
			t.Fatalf("Create(%s): %v", c.t.ID, err)
		}
	}
	legacy.Kind = auth.KindAPIToken
	for _, want := range []struct {
		t auth.Token
		h string
	}{{cred, hc}, {share, hs}, {legacy, hl}} {
		got, err := s.FindByHash(ctx, want.h)
		if err != nil {
			t.Fatalf("FindByHash(%s): %v", want.t.ID, err)
		}
		if diff := cmp.Diff(want.t, got); diff != "" {
			t.Errorf("FindByHash(%s) (-want +got):\n%s", want.t.ID, diff)
		}
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]auth.Token{cred, share, legacy}, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

// errInvalidArguments: a token without an id or a hash is refused and
// nothing is stored.
func errInvalidArguments(t *testing.T, s auth.Store, mk func(int) (auth.Token, string)) {
	ctx := context.Background()
	tok, h := mk(1)
	noID := tok
	noID.ID = ""
	if err := s.Create(ctx, noID, h); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("Create without an id: %v, want %q", err, failure.InvalidArguments)
	}
	if err := s.Create(ctx, tok, ""); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("Create without a hash: %v, want %q", err, failure.InvalidArguments)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after refused creates = %v, %v; want none", list, err)
	}
}
