package authserver_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestFlow: a public and a confidential client register, are authorized,
// redeem their codes, authenticate, refresh and revoke.
func TestFlow(t *testing.T) {
	e := newEnv(t)
	pub := e.register(authserver.AuthNone, cliRedirect)
	e.advance(time.Second)
	conf := e.register("", appRedirect) // client_secret_basic by default
	if pub.Secret != "" || pub.Client.SecretHash != "" {
		t.Errorf("a public client got a secret: %+v", pub)
	}
	if !strings.HasPrefix(conf.Secret, authserver.ClientSecretPrefix) || conf.Client.SecretHash != authserver.HashSecret(conf.Secret) ||
		conf.Client.AuthMethod != authserver.AuthClientSecretBasic {
		t.Errorf("confidential registration = %+v", conf)
	}
	clients, err := e.svc.Clients(e.ctx)
	if err != nil || len(clients) != 2 || clients[0].ID != pub.Client.ID || clients[1].ID != conf.Client.ID {
		t.Fatalf("Clients = %+v, %v; want the two registered", clients, err)
	}
	for _, c := range []struct {
		reg      authserver.Registration
		redirect string
	}{{pub, "http://127.0.0.1:49152/callback"}, {conf, appRedirect}} {
		t.Run(c.reg.Client.AuthMethod, func(t *testing.T) {
			defer func(parent *testing.T) { e.t = parent }(e.t)
			e.t = t
			flow(e, c.reg, c.redirect)
		})
	}
	if got := e.svc.ClientNames(e.ctx, []string{pub.Client.ID, "wc_client_ffffffffffffffff"}); !cmp.Equal(got, map[string]string{pub.Client.ID: "test client"}) {
		t.Errorf("ClientNames = %v", got)
	}
}

func flow(e *env, reg authserver.Registration, redirect string) {
	t := e.t
	a := request(reg.Client.ID, redirect)
	r := e.authorize(a)
	host := strings.SplitN(redirect, "/", 4)[2]
	if r.Client.ID != reg.Client.ID || r.RedirectURI != redirect || r.State != "st-1" || r.Resource != resource ||
		!slices.Equal(r.Scopes, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite}) || r.RedirectHost() != host {
		t.Errorf("Authorize = %+v (host %q)", r, r.RedirectHost())
	}
	to, err := e.svc.Approve(e.ctx, r, authserver.Approval{Approver: alice, Project: "prj_1"})
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	q := redirectQuery(t, to, redirect)
	if q.Get("state") != "st-1" || !strings.HasPrefix(q.Get("code"), authserver.CodePrefix) {
		t.Errorf("Approve redirect %q: want a code and state st-1", to)
	}
	tr, err := e.exchange(creds(reg), q.Get("code"), redirect, a.verifier)
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if !strings.HasPrefix(tr.AccessToken, authserver.AccessTokenPrefix) || !strings.HasPrefix(tr.RefreshToken, authserver.RefreshTokenPrefix) ||
		tr.TokenType != "Bearer" || tr.ExpiresIn != int64(authserver.AccessTTL/time.Second) || tr.Scope != "project:read project:write" {
		t.Errorf("Token = %+v", tr)
	}
	if !authserver.IsAccessToken(tr.AccessToken) || authserver.IsAccessToken(tr.RefreshToken) {
		t.Errorf("IsAccessToken is wrong about %q or %q", tr.AccessToken, tr.RefreshToken)
	}
	p := e.live(tr.AccessToken)
	want := auth.Principal{Kind: authserver.PrincipalKind, ID: p.ID, Owner: "alice",
		Scopes: []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite}, Project: "prj_1", OAuthClientID: reg.Client.ID}
	if diff := cmp.Diff(want, p); diff != "" || !strings.HasPrefix(p.ID, authserver.GrantIDPrefix) {
		t.Errorf("principal %q (-want +got):\n%s", p.ID, diff)
	}

	e.advance(time.Minute)
	rt, err := e.refresh(creds(reg), tr.RefreshToken, "")
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if rt.AccessToken == tr.AccessToken || rt.RefreshToken == tr.RefreshToken || rt.Scope != tr.Scope {
		t.Errorf("refresh did not rotate: %+v after %+v", rt, tr)
	}
	if p2 := e.live(rt.AccessToken); p2.ID != p.ID {
		t.Errorf("refreshed token's grant = %s, want %s", p2.ID, p.ID)
	}
	rt2, err := e.refresh(creds(reg), rt.RefreshToken, "project:read offline_access")
	if err != nil {
		t.Fatalf("second refresh, asking for a granted scope: %v", err)
	}
	if rt2.Scope != tr.Scope {
		t.Errorf("refresh scope = %q, want the grant's %q", rt2.Scope, tr.Scope)
	}

	if err := e.svc.Revoke(e.ctx, creds(reg), rt2.AccessToken); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	for _, tok := range []string{tr.AccessToken, rt.AccessToken, rt2.AccessToken} {
		e.dead(tok)
	}
	_, err = e.refresh(creds(reg), rt2.RefreshToken, "")
	wantCode(t, "refresh after Revoke", err, authserver.ErrInvalidGrant)
	if err := e.svc.Revoke(e.ctx, creds(reg), rt2.AccessToken); err != nil {
		t.Errorf("Revoke of a revoked token: %v, want nil", err)
	}
}

// TestRevokeRefreshToken: revoking a refresh token ends the grant.
func TestRevokeRefreshToken(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	if err := e.svc.Revoke(e.ctx, creds(reg), tr.RefreshToken); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	e.dead(tr.AccessToken)
	_, err := e.refresh(creds(reg), tr.RefreshToken, "")
	wantCode(t, "refresh after its revocation", err, authserver.ErrInvalidGrant)
}

// TestRevokeQuietAboutUnknownTokens: RFC 7009 §2.2 answers the same for a
// token that is unknown, malformed or a code; nothing is revoked.
func TestRevokeQuietAboutUnknownTokens(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	code, a := e.code(reg, cliRedirect)
	for _, raw := range []string{"", "garbage", authserver.AccessTokenPrefix + strings.Repeat("A", 43), code, tr.AccessToken + "x"} {
		if err := e.svc.Revoke(e.ctx, creds(reg), raw); err != nil {
			t.Errorf("Revoke(%q): %v, want nil", raw, err)
		}
	}
	e.live(tr.AccessToken)
	if _, err := e.exchange(creds(reg), code, cliRedirect, a.verifier); err != nil {
		t.Errorf("the code after Revoke named it: %v, want it redeemable", err)
	}
}

// TestRevokeOtherClientsToken: unauthorized_client, and the token still
// works.
func TestRevokeOtherClientsToken(t *testing.T) {
	e := newEnv(t)
	victim, attacker := e.public(), e.public()
	tr := e.tokens(victim, cliRedirect)
	for _, tok := range []string{tr.AccessToken, tr.RefreshToken} {
		wantCode(t, "Revoke of another client's token", e.svc.Revoke(e.ctx, creds(attacker), tok), authserver.ErrUnauthorizedClient)
	}
	e.live(tr.AccessToken)
	if _, err := e.refresh(creds(victim), tr.RefreshToken, ""); err != nil {
		t.Errorf("the victim's refresh after the refused revocation: %v", err)
	}
}

// TestRevokeNeedsClientAuth: a confidential client's revocation needs its
// secret; a revoked client cannot revoke.
func TestRevokeNeedsClientAuth(t *testing.T) {
	e := newEnv(t)
	conf := e.register(authserver.AuthClientSecretBasic, appRedirect)
	tr := e.tokens(conf, appRedirect)
	bad := creds(conf)
	bad.Secret = authserver.ClientSecretPrefix + strings.Repeat("A", 43)
	wantCode(t, "Revoke with a wrong secret", e.svc.Revoke(e.ctx, bad, tr.AccessToken), authserver.ErrInvalidClient)
	e.live(tr.AccessToken)
	if _, err := e.svc.RevokeClient(e.ctx, conf.Client.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "Revoke by a revoked client", e.svc.Revoke(e.ctx, creds(conf), tr.AccessToken), authserver.ErrInvalidClient)
}

// TestReusedCode: a code redeemed twice is refused, and the tokens the
// first redemption issued stop working.
func TestReusedCode(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	code, a := e.code(reg, cliRedirect)
	tr, err := e.exchange(creds(reg), code, cliRedirect, a.verifier)
	if err != nil {
		t.Fatal(err)
	}
	e.advance(time.Second)
	_, err = e.exchange(creds(reg), code, cliRedirect, a.verifier)
	wantCode(t, "reused code", err, authserver.ErrInvalidGrant)
	e.dead(tr.AccessToken)
	_, err = e.refresh(creds(reg), tr.RefreshToken, "")
	wantCode(t, "refresh token of a reused code", err, authserver.ErrInvalidGrant)
	// The refused requests issued nothing: the grant, its code and its
	// first two tokens are all there is.
	if n := e.rows(); n != 4 {
		t.Errorf("store holds %d rows, want 4 (grant, code, access, refresh)", n)
	}
}

// TestReusedRefreshToken: a refresh token presented again revokes the
// family: the newest tokens stop working.
func TestReusedRefreshToken(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	first := e.tokens(reg, cliRedirect)
	second, err := e.refresh(creds(reg), first.RefreshToken, "")
	if err != nil {
		t.Fatal(err)
	}
	e.live(second.AccessToken)
	_, err = e.refresh(creds(reg), first.RefreshToken, "")
	wantCode(t, "reused refresh token", err, authserver.ErrInvalidGrant)
	e.dead(second.AccessToken)
	e.dead(first.AccessToken)
	_, err = e.refresh(creds(reg), second.RefreshToken, "")
	wantCode(t, "newest refresh token after a reuse", err, authserver.ErrInvalidGrant)
}

// TestOtherAudience: a token of this server is refused by a server of the
// same issuer and store for another resource (RFC 8707), and the other way
// round.
func TestOtherAudience(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	other := e.service("https://wc.example/other-mcp")
	if p, err := other.Authenticate(e.ctx, tr.AccessToken); !failure.Is(err, failure.Unauthenticated) {
		t.Errorf("another resource's Authenticate = %+v, %v; want %q", p, err, failure.Unauthenticated)
	}
	// A trailing slash names the same resource.
	if _, err := e.service(resource+"/").Authenticate(e.ctx, tr.AccessToken); err != nil {
		t.Errorf("Authenticate by the resource with a trailing slash: %v", err)
	}
	e.live(tr.AccessToken)
}

// TestAccessTTL: an access token lives AccessTTL, not a nanosecond more;
// its refresh token outlives it.
func TestAccessTTL(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	e.advance(authserver.AccessTTL - time.Nanosecond)
	e.live(tr.AccessToken)
	e.advance(time.Nanosecond)
	e.dead(tr.AccessToken)
	next, err := e.refresh(creds(reg), tr.RefreshToken, "")
	if err != nil {
		t.Fatalf("refresh after the access token expired: %v", err)
	}
	e.live(next.AccessToken)
}

// TestConcurrentRedemption: a code or a refresh token presented twice at
// once is redeemed by one request only; the other is a replay, which
// ends the family, so the winner's tokens stop working too.
func TestConcurrentRedemption(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	code, a := e.code(reg, cliRedirect)
	tr := e.tokens(reg, cliRedirect)
	for name, redeem := range map[string]func() (authserver.TokenResponse, error){
		"code":          func() (authserver.TokenResponse, error) { return e.exchange(creds(reg), code, cliRedirect, a.verifier) },
		"refresh token": func() (authserver.TokenResponse, error) { return e.refresh(creds(reg), tr.RefreshToken, "") },
	} {
		var wg sync.WaitGroup
		results := make([]authserver.TokenResponse, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				results[i], errs[i] = redeem()
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch authserver.CodeOf(err) {
			case "":
				won++
				e.dead(results[i].AccessToken)
			case authserver.ErrInvalidGrant:
			default:
				t.Errorf("%s: concurrent redemption: %v", name, err)
			}
		}
		if won != 1 {
			t.Errorf("%s: %d concurrent redemptions succeeded, want 1", name, won)
		}
	}
}
