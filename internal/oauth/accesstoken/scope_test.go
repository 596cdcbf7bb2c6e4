package accesstoken_test

import (
	"context"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/oauth/accesstoken"
)

func TestMapScopes(t *testing.T) {
	cases := []struct {
		names []string
		want  []auth.Scope
	}{
		{nil, []auth.Scope{}},
		{[]string{"openid", "profile", "offline_access", "PROJECT:READ", "project:*"}, []auth.Scope{}},
		// Project scopes do not bring the memory scopes with them.
		{[]string{"project:write", "project:read", "job:run", "runtime:read"},
			[]auth.Scope{auth.ScopeRuntimeRead, auth.ScopeProjectRead, auth.ScopeProjectWrite, auth.ScopeJobRun}},
		// Memory scopes named by the token are granted.
		{[]string{"memory:read", "project:read", "memory:read"}, []auth.Scope{auth.ScopeProjectRead, auth.ScopeMemoryRead}},
		{[]string{"memory:manage"}, []auth.Scope{auth.ScopeMemoryManage}},
		// admin is never granted: it would imply every scope.
		{[]string{"admin", "account:manage"}, []auth.Scope{auth.ScopeAccountManage}},
	}
	for _, tc := range cases {
		got := accesstoken.MapScopes(tc.names)
		if got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("MapScopes(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestScopeClaims(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	cases := []struct {
		name       string
		scope, scp any
		want       []auth.Scope
	}{
		{"project scopes only", "project:read project:write", nil, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite}},
		{"unknown and admin ignored", "openid admin project:read email", nil, []auth.Scope{auth.ScopeProjectRead}},
		{"explicit memory", "project:read memory:read", nil, []auth.Scope{auth.ScopeProjectRead, auth.ScopeMemoryRead}},
		{"scope as an array", []string{"job:run", "nope"}, nil, []auth.Scope{auth.ScopeJobRun}},
		{"scp array merged", "project:read", []string{"memory:manage", "x"}, []auth.Scope{auth.ScopeProjectRead, auth.ScopeMemoryManage}},
		{"no scope claim", nil, nil, []auth.Scope{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := is.good(resource, now)
			c.Scope, c.Scp = tc.scope, tc.scp
			a, err := v.Verify(context.Background(), sign(t, k, c))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Principal.Scopes, tc.want) {
				t.Fatalf("scopes = %q, want %q", a.Principal.Scopes, tc.want)
			}
			p := a.Principal
			if tc.name == "project scopes only" && (p.Has(auth.ScopeMemoryRead) || p.Has(auth.ScopeMemoryManage)) {
				t.Fatalf("project scopes gained a memory scope: %q", p.Scopes)
			}
			if p.Has(auth.ScopeAdmin) {
				t.Fatalf("an OAuth token was granted admin: %q", p.Scopes)
			}
		})
	}
}

func TestOwner(t *testing.T) {
	a, b := accesstoken.Owner("https://a.example", "u"), accesstoken.Owner("https://b.example", "u")
	if a == b || a != accesstoken.Owner("https://a.example", "u") {
		t.Fatalf("owners %q %q: want stable and distinct across issuers", a, b)
	}
	// Length-prefixed: moving a character between issuer and subject
	// changes the owner.
	if accesstoken.Owner("https://a.example", "bc") == accesstoken.Owner("https://a.exampleb", "c") {
		t.Fatal("owner fields are not separated")
	}
	if len(a) > auth.MaxOwner || a == auth.DefaultOwner {
		t.Fatalf("owner %q", a)
	}
}

// BenchmarkVerifyCached is a verification with the issuer discovered and its
// key cached: the per-call cost an OAuth access token adds (issue 26's
// ≤1.05× goal against a wc_pat_ token compares an MCP call made with each).
func BenchmarkVerifyCached(b *testing.B) {
	for _, alg := range []string{"RS256", "ES256"} {
		b.Run(alg, func(b *testing.B) {
			is := newIssuer(b)
			k := rsaKey(b, "k1")
			if alg == "ES256" {
				k = ecKey(b, "k1")
			}
			is.publish(k)
			now := t0
			v := newVerifier(b, is, &now)
			raw := sign(b, k, is.good(resource, now))
			if _, err := v.Verify(context.Background(), raw); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), raw); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if n := is.jwksFetch.Load(); n != 1 {
				b.Fatalf("JWKS fetched %d times, want 1", n)
			}
		})
	}
}
