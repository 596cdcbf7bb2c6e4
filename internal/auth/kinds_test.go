package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestProjectCredentialAuthenticatesBoundAndExpires(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raw, tok, err := e.svc.CreateProjectCredential(ctx, "", "alice", "demo", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantExpiry := e.clock.Now().Add(auth.DefaultProjectCredentialTTL)
	if tok.Kind != auth.KindProjectCredential || tok.Project != "demo" || tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(wantExpiry) ||
		tok.Name != "project-credential demo" || !cmp.Equal(tok.Scopes, auth.ProjectScopes) {
		t.Fatalf("record %+v", tok)
	}
	p, err := e.svc.Authenticate(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := auth.Principal{Kind: auth.KindProjectCredential, ID: tok.ID, Owner: "alice", Scopes: auth.ProjectScopes, Project: "demo"}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Fatalf("principal (-want +got):\n%s", diff)
	}
	// The spec's scope rule: project scopes never bring Memory with them.
	if p.Has(auth.ScopeMemoryRead) || p.Has(auth.ScopeMemoryManage) {
		t.Fatal("a project credential holds a memory scope")
	}
	// One nanosecond before expiry it holds; at expiry it is refused.
	e.clock.Advance(auth.DefaultProjectCredentialTTL - time.Nanosecond)
	if _, err := e.svc.Authenticate(ctx, raw); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	e.clock.Advance(time.Nanosecond)
	_, err = e.svc.Authenticate(ctx, raw)
	wantKind(t, "at expiry", err, failure.Unauthenticated)
	if !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired credential: %v, want it said", err)
	}
}

func TestProjectCredentialBounds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	_, tok, err := e.svc.CreateProjectCredential(ctx, "ci", "alice", "demo", []auth.Scope{auth.ScopeProjectRead}, auth.MaxProjectCredentialTTL)
	if err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	if !tok.ExpiresAt.Equal(e.clock.Now().Add(auth.MaxProjectCredentialTTL)) || !cmp.Equal(tok.Scopes, []auth.Scope{auth.ScopeProjectRead}) {
		t.Fatalf("record %+v", tok)
	}
	for name, ttl := range map[string]time.Duration{"over the bound": auth.MaxProjectCredentialTTL + time.Nanosecond, "negative": -time.Second} {
		_, _, err := e.svc.CreateProjectCredential(ctx, "x", "alice", "demo", nil, ttl)
		wantKind(t, name, err, failure.InvalidArguments)
	}
	_, _, err = e.svc.CreateProjectCredential(ctx, "x", "alice", "", nil, 0)
	wantKind(t, "no project", err, failure.InvalidArguments)
	_, _, err = e.svc.CreateProjectCredential(ctx, "x", "alice", strings.Repeat("p", auth.MaxTokenProject+1), nil, 0)
	wantKind(t, "long project", err, failure.InvalidArguments)
	// Nothing refused was stored.
	toks, err := e.svc.ListTokens(ctx)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens after refusals: %d, %v", len(toks), err)
	}
}

func TestProjectBoundCredentialsRefuseOperatorScopes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	for _, sc := range []auth.Scope{auth.ScopeMemoryRead, auth.ScopeMemoryManage, auth.ScopeAccountManage, auth.ScopeAdmin} {
		_, _, err := e.svc.CreateProjectCredential(ctx, "x", "alice", "demo", []auth.Scope{auth.ScopeProjectRead, sc}, 0)
		wantKind(t, "credential "+string(sc), err, failure.InvalidArguments)
		if !strings.Contains(err.Error(), string(sc)) || failure.DetailOf(err)["scope"] != string(sc) {
			t.Errorf("refusal of %s does not name it: %v", sc, err)
		}
		_, _, err = e.svc.CreateProjectShare(ctx, "x", "bob", "demo", []auth.Scope{sc}, nil)
		wantKind(t, "share "+string(sc), err, failure.InvalidArguments)
		if !strings.Contains(err.Error(), string(sc)) {
			t.Errorf("share refusal of %s does not name it: %v", sc, err)
		}
	}
	_, _, err := e.svc.CreateProjectShare(ctx, "x", "bob", "demo", []auth.Scope{"project:everything"}, nil)
	wantKind(t, "unknown scope", err, failure.InvalidArguments)
	if toks, err := e.svc.ListTokens(ctx); err != nil || len(toks) != 0 {
		t.Fatalf("refused credentials stored: %d, %v", len(toks), err)
	}
}

func TestProjectShare(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raw, tok, err := e.svc.CreateProjectShare(ctx, "", "bob", "agent:box:api", []auth.Scope{auth.ScopeProjectRead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind != auth.KindProjectShare || tok.Owner != "bob" || tok.ExpiresAt != nil {
		t.Fatalf("record %+v", tok)
	}
	p, err := e.svc.Authenticate(ctx, raw)
	if err != nil || p.Kind != auth.KindProjectShare || p.Project != "agent:box:api" || p.Owner != "bob" {
		t.Fatalf("principal %+v, %v", p, err)
	}
	// Revoked like any token.
	if _, err := e.svc.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(ctx, raw)
	wantKind(t, "revoked share", err, failure.Unauthenticated)

	// An expiry must be in the future; a share with one ends then.
	past := e.clock.Now()
	_, _, err = e.svc.CreateProjectShare(ctx, "x", "bob", "demo", nil, &past)
	wantKind(t, "expiry now", err, failure.InvalidArguments)
	later := e.clock.Now().Add(time.Hour)
	raw, _, err = e.svc.CreateProjectShare(ctx, "x", "bob", "demo", nil, &later)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	_, err = e.svc.Authenticate(ctx, raw)
	wantKind(t, "expired share", err, failure.Unauthenticated)
}

// Only an API token signs in to the console: a project-bound credential
// reaches one project, not the console's every project.
func TestConsoleRefusesProjectBoundCredentials(t *testing.T) {
	ctx := context.Background()
	e := consoleEnv(t, auth.Options{})
	cred, _, err := e.svc.CreateProjectCredential(ctx, "", "alice", "demo", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	share, _, err := e.svc.CreateProjectShare(ctx, "", "bob", "demo", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]string{"project credential": cred, "project share": share} {
		_, err := e.svc.LoginConsole(ctx, raw)
		wantKind(t, name, err, failure.Unauthenticated)
		if !strings.Contains(err.Error(), "API token") {
			t.Errorf("%s: %v, want it to say an API token is needed", name, err)
		}
	}
}
