package authserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestRegisterRefusals: every refused registration names the error RFC
// 7591 gives it and stores nothing.
func TestRegisterRefusals(t *testing.T) {
	e := newEnv(t)
	ok := oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"https://app.example/cb"}, ClientName: "app"}
	with := func(f func(m *oauthex.ClientRegistrationMetadata)) oauthex.ClientRegistrationMetadata {
		m := ok
		f(&m)
		return m
	}
	uris := func(u ...string) oauthex.ClientRegistrationMetadata {
		return with(func(m *oauthex.ClientRegistrationMetadata) { m.RedirectURIs = u })
	}
	many := make([]string, authserver.MaxRedirectURIs+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://app.example/cb%d", i)
	}
	cases := []struct {
		name string
		m    oauthex.ClientRegistrationMetadata
		code authserver.ErrorCode
	}{
		{"http, not loopback", uris("http://example.com/cb"), authserver.ErrInvalidRedirectURI},
		{"one bad among good", uris("https://app.example/cb", "http://example.com/cb"), authserver.ErrInvalidRedirectURI},
		{"custom scheme", uris("com.example.app:/cb"), authserver.ErrInvalidRedirectURI},
		{"custom scheme with host", uris("myapp://cb"), authserver.ErrInvalidRedirectURI},
		{"fragment", uris("https://app.example/cb#x"), authserver.ErrInvalidRedirectURI},
		{"empty fragment", uris("https://app.example/cb#"), authserver.ErrInvalidRedirectURI},
		{"loopback fragment", uris("http://127.0.0.1/cb#x"), authserver.ErrInvalidRedirectURI},
		{"userinfo", uris("https://user@app.example/cb"), authserver.ErrInvalidRedirectURI},
		{"relative", uris("/cb"), authserver.ErrInvalidRedirectURI},
		{"no host", uris("https:///cb"), authserver.ErrInvalidRedirectURI},
		{"javascript", uris("javascript:alert(1)"), authserver.ErrInvalidRedirectURI},
		{"http on a look-alike host", uris("http://localhost.evil.example/cb"), authserver.ErrInvalidRedirectURI},
		{"http on another loopback address", uris("http://127.0.0.2/cb"), authserver.ErrInvalidRedirectURI},
		{"empty", uris(""), authserver.ErrInvalidRedirectURI},
		{"none", uris(), authserver.ErrInvalidRedirectURI},
		{"MaxRedirectURIs+1", uris(many...), authserver.ErrInvalidRedirectURI},
		{"MaxURI+1", uris("https://app.example/" + strings.Repeat("a", authserver.MaxURI-len("https://app.example/")+1)), authserver.ErrInvalidRedirectURI},
		{"client_credentials", with(func(m *oauthex.ClientRegistrationMetadata) { m.GrantTypes = []string{"client_credentials"} }), authserver.ErrInvalidClientMetadata},
		{"implicit", with(func(m *oauthex.ClientRegistrationMetadata) { m.GrantTypes = []string{"authorization_code", "implicit"} }), authserver.ErrInvalidClientMetadata},
		{"response type token", with(func(m *oauthex.ClientRegistrationMetadata) { m.ResponseTypes = []string{"token"} }), authserver.ErrInvalidClientMetadata},
		{"private_key_jwt", with(func(m *oauthex.ClientRegistrationMetadata) { m.TokenEndpointAuthMethod = "private_key_jwt" }), authserver.ErrInvalidClientMetadata},
		{"tls_client_auth", with(func(m *oauthex.ClientRegistrationMetadata) { m.TokenEndpointAuthMethod = "tls_client_auth" }), authserver.ErrInvalidClientMetadata},
		{"MaxClientName+1", with(func(m *oauthex.ClientRegistrationMetadata) {
			m.ClientName = strings.Repeat("n", authserver.MaxClientName+1)
		}), authserver.ErrInvalidClientMetadata},
	}
	for _, c := range cases {
		reg, err := e.svc.Register(e.ctx, c.m)
		wantCode(t, c.name, err, c.code)
		if reg.Client.ID != "" || reg.Secret != "" {
			t.Errorf("%s: a refusal returned %+v", c.name, reg)
		}
	}
	if clients, err := e.svc.Clients(e.ctx); err != nil || len(clients) != 0 {
		t.Errorf("Clients after refused registrations = %+v, %v; want none", clients, err)
	}
}

// TestRegisterBounds: a registration at every bound is accepted, and its
// longest redirect URI is usable.
func TestRegisterBounds(t *testing.T) {
	e := newEnv(t)
	longest := "https://app.example/" + strings.Repeat("a", authserver.MaxURI-len("https://app.example/"))
	uris := make([]string, authserver.MaxRedirectURIs)
	for i := range uris {
		uris[i] = fmt.Sprintf("https://app.example/cb%d", i)
	}
	uris[0] = longest
	name := strings.Repeat("n", authserver.MaxClientName)
	reg, err := e.svc.Register(e.ctx, oauthex.ClientRegistrationMetadata{RedirectURIs: uris, ClientName: name,
		TokenEndpointAuthMethod: authserver.AuthNone})
	if err != nil {
		t.Fatalf("Register at the bounds: %v", err)
	}
	if reg.Client.Name != name || len(reg.Client.RedirectURIs) != authserver.MaxRedirectURIs {
		t.Errorf("registration = %+v", reg.Client)
	}
	if len(longest) != authserver.MaxURI {
		t.Fatalf("test bug: longest is %d bytes", len(longest))
	}
	tr := e.tokens(reg, longest)
	e.live(tr.AccessToken)
	r, err := e.svc.Authorize(e.ctx, request(reg.Client.ID, longest+"a").q)
	wantCode(t, "redirect_uri of MaxURI+1 bytes", err, authserver.ErrInvalidRequest)
	if r.RedirectURI != "" {
		t.Errorf("an overlong redirect_uri came back as a Request: %+v", r)
	}
	// Loopback and https redirect URIs; no name: a placeholder.
	reg, err = e.svc.Register(e.ctx, oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{"http://localhost/cb", "http://127.0.0.1:3000/cb", "http://[::1]/cb", "https://app.example/cb?x=1"}})
	if err != nil {
		t.Fatalf("Register loopback URIs: %v", err)
	}
	if reg.Client.Name == "" || reg.Client.AuthMethod != authserver.AuthClientSecretBasic || reg.Secret == "" {
		t.Errorf("registration without a name or method = %+v", reg)
	}
}

// TestNew: the issuer and the resource must be absolute http(s) URLs; the
// issuer also without a query, fragment or trailing slash.
func TestNew(t *testing.T) {
	for _, c := range []struct{ issuer, resource string }{
		{"https://wc.example/", resource},
		{"https://wc.example?x=1", resource},
		{"https://wc.example#f", resource},
		{"wc.example", resource},
		{"ftp://wc.example", resource},
		{"https://", resource},
		{issuer, "/mcp"},
		{issuer, ""},
		{issuer, "ftp://wc.example/mcp"},
	} {
		if _, err := authserver.New(authserver.Options{Issuer: c.issuer, Resource: c.resource}); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("New(%q, %q): %v, want %q", c.issuer, c.resource, err, failure.InvalidArguments)
		}
	}
	s, err := authserver.New(authserver.Options{Issuer: "http://127.0.0.1:8080", Resource: "http://127.0.0.1:8080/mcp"})
	if err != nil || s.Issuer() != "http://127.0.0.1:8080" {
		t.Errorf("New with a loopback issuer = %v, %v", s, err)
	}
}

// TestMetadata: the RFC 8414 document under the issuer: S256 only, iss in
// responses, "none" first among the token endpoint's methods,
// offline_access offered, the operator's scopes not.
func TestMetadata(t *testing.T) {
	m := newEnv(t).svc.Metadata()
	if m.Issuer != issuer || m.AuthorizationEndpoint != issuer+authserver.AuthorizePath || m.TokenEndpoint != issuer+authserver.TokenPath ||
		m.RegistrationEndpoint != issuer+authserver.RegisterPath || m.RevocationEndpoint != issuer+authserver.RevokePath {
		t.Errorf("endpoints = %+v", m)
	}
	if fmt.Sprint(m.CodeChallengeMethodsSupported) != "[S256]" || !m.AuthorizationResponseIssParameterSupported ||
		len(m.TokenEndpointAuthMethodsSupported) == 0 || m.TokenEndpointAuthMethodsSupported[0] != authserver.AuthNone ||
		fmt.Sprint(m.ResponseTypesSupported) != "[code]" || fmt.Sprint(m.GrantTypesSupported) != "[authorization_code refresh_token]" {
		t.Errorf("metadata = %+v", m)
	}
	scopes := strings.Join(m.ScopesSupported, " ")
	if !strings.Contains(scopes, authserver.OfflineAccess) || strings.Contains(scopes, "admin") || strings.Contains(scopes, "account:manage") ||
		!strings.Contains(scopes, "project:read") {
		t.Errorf("scopes_supported = %q", scopes)
	}
}

// TestAuthenticateRefusesOtherShapes: what is not a live access token of
// this server is unauthenticated.
func TestAuthenticateRefusesOtherShapes(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	code, _ := e.code(reg, cliRedirect)
	for _, raw := range []string{"", "wc_pat_x", tr.RefreshToken, code, tr.AccessToken + "A", tr.AccessToken[:len(tr.AccessToken)-1],
		authserver.AccessTokenPrefix + strings.Repeat("A", 43)} {
		e.dead(raw)
	}
	// A refresh token's hash under the access prefix is still not an
	// access token.
	e.dead(authserver.AccessTokenPrefix + strings.TrimPrefix(tr.RefreshToken, authserver.RefreshTokenPrefix))
	e.live(tr.AccessToken)
}

// TestUnusedClientTTL: a client nobody approved is deleted by the first
// registration after it is UnusedClientTTL old, not at UnusedClientTTL; a
// client with a grant stays.
func TestUnusedClientTTL(t *testing.T) {
	e := newEnv(t)
	unused, used := e.public(), e.public()
	tr := e.tokens(used, cliRedirect)
	e.advance(authserver.UnusedClientTTL)
	e.public() // sweeps at exactly UnusedClientTTL
	if _, err := e.store.Client(e.ctx, unused.Client.ID); err != nil {
		t.Fatalf("client at UnusedClientTTL: %v, want it kept", err)
	}
	e.advance(time.Nanosecond)
	e.public()
	if _, err := e.store.Client(e.ctx, unused.Client.ID); !failure.Is(err, failure.NotFound) {
		t.Errorf("client nobody approved after UnusedClientTTL: %v, want %q", err, failure.NotFound)
	}
	r, err := e.svc.Authorize(e.ctx, request(unused.Client.ID, cliRedirect).q)
	wantCode(t, "Authorize by a swept client", err, authserver.ErrInvalidClient)
	if r.RedirectURI != "" {
		t.Errorf("Authorize by a swept client came with a Request %+v", r)
	}
	if _, err := e.store.Client(e.ctx, used.Client.ID); err != nil {
		t.Errorf("client with a grant after the sweep: %v, want it kept", err)
	}
	if _, err := e.refresh(creds(used), tr.RefreshToken, ""); err != nil {
		t.Errorf("refresh of the kept client: %v", err)
	}
}

// TestApproveOldUnusedClient: a client registered more than
// UnusedClientTTL ago and never approved is approved when it finally asks
// (the sweep on the way to its grant must not delete it first).
func TestApproveOldUnusedClient(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	e.advance(authserver.UnusedClientTTL + time.Hour)
	a := request(reg.Client.ID, cliRedirect)
	r := e.authorize(a)
	to, err := e.svc.Approve(e.ctx, r, authserver.Approval{Approver: alice})
	if err != nil {
		t.Fatalf("Approve of a client first approved after UnusedClientTTL: %v", err)
	}
	q := redirectQuery(t, to, cliRedirect)
	if _, err := e.exchange(creds(reg), q.Get("code"), cliRedirect, a.verifier); err != nil {
		t.Errorf("Token: %v", err)
	}
	e.advance(time.Hour)
	e.public() // a later sweep keeps the client: it holds a grant now
	if _, err := e.store.Client(e.ctx, reg.Client.ID); err != nil {
		t.Errorf("the approved client after a later sweep: %v", err)
	}
}
