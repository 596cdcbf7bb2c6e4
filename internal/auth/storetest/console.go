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

// RunConsole runs the auth.ConsoleStore contract against stores returned
// by open. open must return a new, empty store for every call and arrange
// its cleanup.
func RunConsole(t *testing.T, open func(t *testing.T) auth.ConsoleStore) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	// mk is session i, created at base and expiring i hours later.
	mk := func(i int) auth.ConsoleSession {
		return auth.ConsoleSession{
			Hash:      fmt.Sprintf("%064x", 0x100+i),
			TokenHash: fmt.Sprintf("%064x", i),
			CreatedAt: base,
			ExpiresAt: base.Add(time.Duration(i) * time.Hour),
		}
	}

	t.Run("CreateFindDelete", func(t *testing.T) {
		s := open(t)
		c := mk(1)
		if err := s.CreateConsole(ctx, c); err != nil {
			t.Fatalf("CreateConsole: %v", err)
		}
		got, err := s.FindConsole(ctx, c.Hash)
		if err != nil {
			t.Fatalf("FindConsole: %v", err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("FindConsole (-want +got):\n%s", diff)
		}
		if err := s.DeleteConsole(ctx, c.Hash); err != nil {
			t.Fatalf("DeleteConsole: %v", err)
		}
		if _, err := s.FindConsole(ctx, c.Hash); !failure.Is(err, failure.NotFound) {
			t.Errorf("FindConsole after DeleteConsole: %v, want %q", err, failure.NotFound)
		}
		if err := s.DeleteConsole(ctx, c.Hash); err != nil {
			t.Errorf("DeleteConsole of a session that is gone: %v, want nil", err)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		s := open(t)
		if _, err := s.FindConsole(ctx, mk(9).Hash); !failure.Is(err, failure.NotFound) {
			t.Errorf("FindConsole unknown: %v, want %q", err, failure.NotFound)
		}
		c := mk(1)
		if err := s.CreateConsole(ctx, c); err != nil {
			t.Fatalf("CreateConsole: %v", err)
		}
		dup := mk(2)
		dup.Hash = c.Hash
		if err := s.CreateConsole(ctx, dup); !failure.Is(err, failure.Conflict) {
			t.Errorf("CreateConsole with a taken hash: %v, want %q", err, failure.Conflict)
		}
		if got, err := s.FindConsole(ctx, c.Hash); err != nil || !cmp.Equal(c, got) {
			t.Errorf("FindConsole after a refused duplicate = %+v, %v; want the first session", got, err)
		}
		noHash, noToken := mk(3), mk(4)
		noHash.Hash, noToken.TokenHash = "", ""
		for _, bad := range []auth.ConsoleSession{noHash, noToken} {
			if err := s.CreateConsole(ctx, bad); !failure.Is(err, failure.InvalidArguments) {
				t.Errorf("CreateConsole(%+v): %v, want %q", bad, err, failure.InvalidArguments)
			}
		}
	})

	t.Run("CreateSweepsExpired", func(t *testing.T) {
		s := open(t)
		early, late := mk(1), mk(3)
		for _, c := range []auth.ConsoleSession{early, late} {
			if err := s.CreateConsole(ctx, c); err != nil {
				t.Fatalf("CreateConsole: %v", err)
			}
		}
		// A session created exactly when early expires sweeps it (expired
		// at its expiry) and keeps late.
		next := mk(5)
		next.CreatedAt = early.ExpiresAt
		if err := s.CreateConsole(ctx, next); err != nil {
			t.Fatalf("CreateConsole: %v", err)
		}
		if _, err := s.FindConsole(ctx, early.Hash); !failure.Is(err, failure.NotFound) {
			t.Errorf("FindConsole of a session expired at the next creation: %v, want %q", err, failure.NotFound)
		}
		for _, c := range []auth.ConsoleSession{late, next} {
			if got, err := s.FindConsole(ctx, c.Hash); err != nil || !cmp.Equal(c, got) {
				t.Errorf("FindConsole(%s) = %+v, %v; want %+v", c.Hash, got, err, c)
			}
		}
	})
}
