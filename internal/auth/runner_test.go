package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestRunnerTokens(t *testing.T) {
	e := newEnv(t, auth.Options{})
	ctx := context.Background()
	raw, tok, err := e.svc.CreateRunnerToken(ctx, "box", "team-a")
	if err != nil || !strings.HasPrefix(raw, auth.RunnerTokenPrefix) || !auth.WellFormedRunnerToken(raw) || tok.Runner != "box" || len(tok.Scopes) != 0 {
		t.Fatalf("CreateRunnerToken: %v %q %+v", err, raw, tok)
	}
	if got, err := e.svc.AuthenticateRunner(ctx, raw); err != nil || got.ID != tok.ID || got.Owner != "team-a" {
		t.Fatalf("AuthenticateRunner: %v %+v", err, got)
	}
	// It is no API credential, and an API token is no runner credential.
	if _, err := e.svc.Authenticate(ctx, raw); !failure.Is(err, failure.Unauthenticated) {
		t.Fatalf("a runner token as an API credential: %v", err)
	}
	api, _, err := e.svc.CreateToken(ctx, "ci", "team-a", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AuthenticateRunner(ctx, api); !failure.Is(err, failure.Unauthenticated) {
		t.Fatalf("an API token on the runner channel: %v", err)
	}
	// A client id belongs to one owner while a live token holds it.
	before, _ := e.svc.ListTokens(ctx)
	if _, _, err := e.svc.CreateRunnerToken(ctx, "box", "team-b"); !failure.Is(err, failure.PermissionDenied) {
		t.Fatalf("box for another owner: %v", err)
	}
	for _, bad := range []string{"", "../box", "a b", strings.Repeat("x", 65)} {
		if _, _, err := e.svc.CreateRunnerToken(ctx, bad, "team-a"); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("client id %q: %v", bad, err)
		}
	}
	if after, _ := e.svc.ListTokens(ctx); len(after) != len(before) {
		t.Fatalf("refused creations stored tokens: %d, before %d", len(after), len(before))
	}
	// Revoked: no longer authenticates, and the client id is free again.
	if _, err := e.svc.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AuthenticateRunner(ctx, raw); !failure.Is(err, failure.Unauthenticated) {
		t.Fatalf("a revoked runner token: %v", err)
	}
	if _, _, err := e.svc.CreateRunnerToken(ctx, "box", "team-b"); err != nil {
		t.Fatalf("box for another owner after revocation: %v", err)
	}
}
