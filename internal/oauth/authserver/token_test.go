package authserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestTokenRefusalsKeepTheCode: every refused code redemption leaves the
// code as it was: it is redeemed afterwards with the right request.
func TestTokenRefusalsKeepTheCode(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	other := e.public()
	code, a := e.code(reg, cliRedirect)
	wrong, _ := pkce(43)
	wrong = strings.ToUpper(wrong[:1]) + wrong[1:]
	if wrong == a.verifier {
		wrong = "B" + wrong[1:]
	}
	good := authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantAuthorizationCode, Code: code,
		RedirectURI: cliRedirect, CodeVerifier: a.verifier, Resource: resource}
	edit := func(f func(r *authserver.TokenRequest)) authserver.TokenRequest {
		r := good
		f(&r)
		return r
	}
	cases := []struct {
		name string
		r    authserver.TokenRequest
		code authserver.ErrorCode
	}{
		{"wrong verifier", edit(func(r *authserver.TokenRequest) { r.CodeVerifier = wrong }), authserver.ErrInvalidGrant},
		{"missing verifier", edit(func(r *authserver.TokenRequest) { r.CodeVerifier = "" }), authserver.ErrInvalidGrant},
		{"the challenge as verifier", edit(func(r *authserver.TokenRequest) { r.CodeVerifier = a.q.Get("code_challenge") }), authserver.ErrInvalidGrant},
		{"42-character verifier", edit(func(r *authserver.TokenRequest) { r.CodeVerifier = a.verifier[:42] }), authserver.ErrInvalidGrant},
		{"verifier with a space", edit(func(r *authserver.TokenRequest) { r.CodeVerifier = a.verifier[:42] + " " }), authserver.ErrInvalidGrant},
		{"other redirect_uri", edit(func(r *authserver.TokenRequest) { r.RedirectURI = cliRedirect + "/" }), authserver.ErrInvalidGrant},
		{"missing redirect_uri", edit(func(r *authserver.TokenRequest) { r.RedirectURI = "" }), authserver.ErrInvalidGrant},
		{"another client", edit(func(r *authserver.TokenRequest) { r.Client = creds(other) }), authserver.ErrInvalidGrant},
		{"unknown client", edit(func(r *authserver.TokenRequest) { r.Client.ID = "wc_client_ffffffffffffffff" }), authserver.ErrInvalidClient},
		{"missing client", edit(func(r *authserver.TokenRequest) { r.Client.ID = "" }), authserver.ErrInvalidClient},
		{"another resource", edit(func(r *authserver.TokenRequest) { r.Resource = "https://other.example/mcp" }), authserver.ErrInvalidTarget},
		{"scope not granted", edit(func(r *authserver.TokenRequest) { r.Scope = "project:read job:run" }), authserver.ErrInvalidScope},
		{"code as refresh token", edit(func(r *authserver.TokenRequest) {
			r.GrantType, r.RefreshToken = authserver.GrantRefreshToken, code
		}), authserver.ErrInvalidGrant},
		{"malformed code", edit(func(r *authserver.TokenRequest) { r.Code = code + "x" }), authserver.ErrInvalidGrant},
		{"unknown code", edit(func(r *authserver.TokenRequest) { r.Code = authserver.CodePrefix + strings.Repeat("A", 43) }), authserver.ErrInvalidGrant},
		{"missing grant_type", edit(func(r *authserver.TokenRequest) { r.GrantType = "" }), authserver.ErrInvalidRequest},
		{"password grant", edit(func(r *authserver.TokenRequest) { r.GrantType = "password" }), authserver.ErrUnsupportedGrantType},
		{"client_credentials", edit(func(r *authserver.TokenRequest) { r.GrantType = "client_credentials" }), authserver.ErrUnsupportedGrantType},
	}
	for _, c := range cases {
		tr, err := e.svc.Token(e.ctx, c.r)
		wantCode(t, c.name, err, c.code)
		if tr != (authserver.TokenResponse{}) {
			t.Errorf("%s: a refusal issued %+v", c.name, tr)
		}
	}
	if _, err := e.svc.Token(e.ctx, good); err != nil {
		t.Errorf("the right request after the refusals: %v, want the code redeemed", err)
	}
	if n := e.rows(); n != 4 {
		t.Errorf("store holds %d rows, want 4 (the grant, its code and the two tokens of the one redemption)", n)
	}
}

// TestLongestVerifier: a 128-character verifier (RFC 7636's longest) is
// accepted, a 129-character one refused.
func TestLongestVerifier(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	for n, want := range map[int]authserver.ErrorCode{128: "", 129: authserver.ErrInvalidGrant} {
		v, c := pkce(n)
		a := request(reg.Client.ID, cliRedirect).with("code_challenge", c)
		code := e.approve(e.authorize(a), alice, "").Get("code")
		_, err := e.exchange(creds(reg), code, cliRedirect, v)
		wantCode(t, fmt.Sprintf("verifier of %d characters", n), err, want)
	}
}

// TestCodeTTL: a code is redeemed until CodeTTL after it was issued, not
// at CodeTTL.
func TestCodeTTL(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	early, ea := e.code(reg, cliRedirect)
	late, la := e.code(reg, cliRedirect)
	e.advance(authserver.CodeTTL - time.Nanosecond)
	if _, err := e.exchange(creds(reg), early, cliRedirect, ea.verifier); err != nil {
		t.Errorf("code just before CodeTTL: %v", err)
	}
	e.advance(time.Nanosecond)
	_, err := e.exchange(creds(reg), late, cliRedirect, la.verifier)
	wantCode(t, "code at CodeTTL", err, authserver.ErrInvalidGrant)
}

// TestRefreshRefusalsKeepTheToken: a refresh refused for its scope,
// resource or client leaves the refresh token unspent.
func TestRefreshRefusalsKeepTheToken(t *testing.T) {
	e := newEnv(t)
	reg, other := e.public(), e.public()
	tr := e.tokens(reg, cliRedirect)
	for _, c := range []struct {
		name string
		r    authserver.TokenRequest
		code authserver.ErrorCode
	}{
		{"scope not granted", authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantRefreshToken,
			RefreshToken: tr.RefreshToken, Scope: "project:read memory:read"}, authserver.ErrInvalidScope},
		{"admin", authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantRefreshToken,
			RefreshToken: tr.RefreshToken, Scope: "admin"}, authserver.ErrInvalidScope},
		{"another resource", authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantRefreshToken,
			RefreshToken: tr.RefreshToken, Resource: "https://other.example/mcp"}, authserver.ErrInvalidTarget},
		{"another client", authserver.TokenRequest{Client: creds(other), GrantType: authserver.GrantRefreshToken,
			RefreshToken: tr.RefreshToken}, authserver.ErrInvalidGrant},
		{"access token as refresh token", authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantRefreshToken,
			RefreshToken: tr.AccessToken}, authserver.ErrInvalidGrant},
	} {
		got, err := e.svc.Token(e.ctx, c.r)
		wantCode(t, c.name, err, c.code)
		if got != (authserver.TokenResponse{}) {
			t.Errorf("%s: a refusal issued %+v", c.name, got)
		}
	}
	e.live(tr.AccessToken)
	// A resource with a trailing slash is the same resource.
	if _, err := e.svc.Token(e.ctx, authserver.TokenRequest{Client: creds(reg), GrantType: authserver.GrantRefreshToken,
		RefreshToken: tr.RefreshToken, Resource: resource + "/"}); err != nil {
		t.Errorf("refresh after the refusals: %v, want the token unspent", err)
	}
}

// TestRefreshTokenTTL: a refresh token lives RefreshTTL and each rotation
// gives a new one that lives RefreshTTL again, but never past its grant.
func TestRefreshTokenTTL(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	for e.now.Add(authserver.RefreshTTL).Before(t0.Add(authserver.GrantTTL)) {
		e.advance(authserver.RefreshTTL - time.Nanosecond)
		next, err := e.refresh(creds(reg), tr.RefreshToken, "")
		if err != nil {
			t.Fatalf("refresh just before RefreshTTL at %v: %v", e.now, err)
		}
		tr = next
	}
	// The grant ends at t0+GrantTTL, a few nanoseconds after the last
	// rotation: so do its tokens.
	if tr.ExpiresIn != 0 {
		t.Errorf("ExpiresIn = %d at the grant's end, want 0", tr.ExpiresIn)
	}
	e.now = t0.Add(authserver.GrantTTL)
	e.dead(tr.AccessToken)
	_, err := e.refresh(creds(reg), tr.RefreshToken, "")
	wantCode(t, "refresh at the grant's end", err, authserver.ErrInvalidGrant)

	e2 := newEnv(t)
	reg2 := e2.public()
	tr2 := e2.tokens(reg2, cliRedirect)
	e2.advance(authserver.RefreshTTL)
	_, err = e2.refresh(creds(reg2), tr2.RefreshToken, "")
	wantCode(t, "refresh at RefreshTTL", err, authserver.ErrInvalidGrant)
}

// TestConfidentialClientAuth: a confidential client authenticates with
// its secret by its registered method only; a refused request leaves the
// code redeemable.
func TestConfidentialClientAuth(t *testing.T) {
	e := newEnv(t)
	basic := e.register(authserver.AuthClientSecretBasic, appRedirect)
	post := e.register(authserver.AuthClientSecretPost, appRedirect)
	pub := e.register(authserver.AuthNone, appRedirect)
	other := e.register(authserver.AuthClientSecretBasic, appRedirect)
	for _, reg := range []authserver.Registration{basic, post} {
		code, a := e.code(reg, appRedirect)
		good := creds(reg)
		wrongSecret := good
		wrongSecret.Secret = other.Secret
		wrongMethod := good
		wrongMethod.Basic = !good.Basic
		noSecret := good
		noSecret.Secret = ""
		malformed := good
		malformed.Secret = good.Secret + "x"
		for name, c := range map[string]authserver.ClientAuth{
			"wrong secret": wrongSecret, "wrong method": wrongMethod, "no secret": noSecret, "malformed secret": malformed,
			"another client's credentials": creds(other),
		} {
			if name == "another client's credentials" {
				_, err := e.exchange(c, code, appRedirect, a.verifier)
				wantCode(t, reg.Client.AuthMethod+": "+name, err, authserver.ErrInvalidGrant)
				continue
			}
			_, err := e.exchange(c, code, appRedirect, a.verifier)
			wantCode(t, reg.Client.AuthMethod+": "+name, err, authserver.ErrInvalidClient)
		}
		if _, err := e.exchange(good, code, appRedirect, a.verifier); err != nil {
			t.Errorf("%s: the right credentials after refusals: %v", reg.Client.AuthMethod, err)
		}
	}
	// A public client has no secret to check: one it sends is refused,
	// by either method; a Basic header with an empty password is its
	// client_id alone.
	code, a := e.code(pub, appRedirect)
	for _, c := range []authserver.ClientAuth{
		{ID: pub.Client.ID, Secret: other.Secret, Basic: true},
		{ID: pub.Client.ID, Secret: other.Secret},
	} {
		_, err := e.exchange(c, code, appRedirect, a.verifier)
		wantCode(t, fmt.Sprintf("public client sending a secret (Basic %t)", c.Basic), err, authserver.ErrInvalidClient)
	}
	if _, err := e.exchange(authserver.ClientAuth{ID: pub.Client.ID, Basic: true}, code, appRedirect, a.verifier); err != nil {
		t.Errorf("public client with an empty Basic password after the refusals: %v", err)
	}
}

// TestRevokedClient: a revoked client's tokens stop working, its codes
// and refresh tokens are refused at the token endpoint, and it cannot
// authorize.
func TestRevokedClient(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	code, a := e.code(reg, cliRedirect)
	c, err := e.svc.RevokeClient(e.ctx, reg.Client.ID)
	if err != nil || !c.Revoked() {
		t.Fatalf("RevokeClient = %+v, %v", c, err)
	}
	e.dead(tr.AccessToken)
	_, err = e.exchange(creds(reg), code, cliRedirect, a.verifier)
	wantCode(t, "code of a revoked client", err, authserver.ErrInvalidClient)
	_, err = e.refresh(creds(reg), tr.RefreshToken, "")
	wantCode(t, "refresh of a revoked client", err, authserver.ErrInvalidClient)
	r, err := e.svc.Authorize(e.ctx, request(reg.Client.ID, cliRedirect).q)
	wantCode(t, "Authorize by a revoked client", err, authserver.ErrInvalidClient)
	if r.RedirectURI != "" {
		t.Errorf("Authorize by a revoked client came with a Request %+v", r)
	}
	if _, err := e.svc.RevokeClient(e.ctx, "wc_client_ffffffffffffffff"); err == nil {
		t.Error("RevokeClient of an unknown client succeeded")
	}
}
