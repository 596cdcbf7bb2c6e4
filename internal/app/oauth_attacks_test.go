package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/transport/oauthhttp"
)

// oauthServer starts the server with the built-in authorization server and
// one project, p.
func oauthServer(t *testing.T, tune func(*app.Config)) *server {
	t.Helper()
	return startAppWith(t, t.TempDir(), func(c *app.Config) {
		c.OAuth.Enabled = true
		if tune != nil {
			tune(c)
		}
	}, "p="+rawProjectDir(t))
}

// register enrols a public client by DCR with the go-sdk's client.
func register(t testing.TB, s *server, redirect string) string {
	t.Helper()
	r, err := oauthex.RegisterClient(context.Background(), s.base+authserver.RegisterPath, &oauthex.ClientRegistrationMetadata{
		ClientName: "attack test", RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
	}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return r.ClientID
}

// authorizeURL is an authorization request of client with the S256
// challenge of verifier; extra parameters replace the defaults.
func authorizeURL(s *server, client, verifier string, extra url.Values) string {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {flowRedirect},
		"state": {"st-1"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"},
		"resource": {s.base + "/mcp"}, "scope": {"project:read"}}
	for k, v := range extra {
		q[k] = v
	}
	return s.base + authserver.AuthorizePath + "?" + q.Encode()
}

// exchange posts a token request and returns the status and the body.
func exchange(t testing.TB, s *server, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(s.base+authserver.TokenPath, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("token endpoint Cache-Control %q", cc)
	}
	return resp.StatusCode, body
}

// TestOAuthAuthorizationAttacks: each attack of the issue on the HTTP
// surface is refused with its OAuth error, and nothing is issued.
func TestOAuthAuthorizationAttacks(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()

	// A redirect_uri that differs in any byte is never redirected to: the
	// authorization endpoint answers with a page, not a Location.
	for _, bad := range []string{flowRedirect + "/", "http://127.0.0.1:38411/Callback", "https://evil.example/callback",
		flowRedirect + "?next=https://evil.example", "http://127.0.0.1.evil.example:38411/callback"} {
		resp, err := b.client.Get(authorizeURL(s, client, verifier, url.Values{"redirect_uri": {bad}}))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("redirect_uri %q: HTTP %d Location %q", bad, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	// plain PKCE is refused back to the client (its redirect URI is
	// trusted), with iss and state.
	resp, err := b.client.Get(authorizeURL(s, client, verifier, url.Values{"code_challenge_method": {"plain"}, "code_challenge": {verifier}}))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "invalid_request" ||
		loc.Query().Get("iss") != s.base || loc.Query().Get("state") != "st-1" {
		t.Fatalf("plain PKCE: HTTP %d %v", resp.StatusCode, loc)
	}

	// A consent POST without the CSRF token, or from another origin, is
	// refused and issues nothing.
	page := authorizeURL(s, client, verifier, nil)
	form := url.Values{"decision": {"approve"}}
	for k, v := range mustParse(t, page).Query() {
		form[k] = v
	}
	if r := b.post(s.base+"/console/oauth/consent", form); r.StatusCode != http.StatusForbidden || r.Header.Get("Location") != "" {
		t.Fatalf("consent without CSRF: HTTP %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	req, _ := http.NewRequest(http.MethodPost, s.base+"/console/oauth/consent", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	r2, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden || r2.Header.Get("Location") != "" {
		t.Fatalf("consent from another origin: HTTP %d", r2.StatusCode)
	}

	// The console's sign-in never sends the browser off the server.
	jar := b.client.Jar
	anon := &http.Client{Jar: nil, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	lreq, _ := http.NewRequest(http.MethodPost, s.base+"/console/login", strings.NewReader(url.Values{"token": {s.token}, "next": {"https://evil.example/"}}.Encode()))
	lreq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	lr, err := anon.Do(lreq)
	if err != nil {
		t.Fatal(err)
	}
	lr.Body.Close()
	if l := lr.Header.Get("Location"); lr.StatusCode != http.StatusSeeOther || l != "/console/" {
		t.Fatalf("login with an external next: HTTP %d to %q", lr.StatusCode, l)
	}
	_ = jar

	// A real code: a wrong verifier is refused and the code stays usable;
	// the right one redeems it; a second redemption is refused and
	// revokes what the first issued.
	loc = b.consent(page, "approve", "")
	code := loc.Query().Get("code")
	base := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect}, "client_id": {client}}
	wrong := cloneWith(base, "code_verifier", oauth2.GenerateVerifier())
	if st, body := exchange(t, s, wrong); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: HTTP %d %v", st, body)
	}
	if st, body := exchange(t, s, cloneWith(cloneWith(base, "code_verifier", verifier), "redirect_uri", flowRedirect+"/")); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("another redirect_uri at the token endpoint: HTTP %d %v", st, body)
	}
	st, tok := exchange(t, s, cloneWith(base, "code_verifier", verifier))
	if st != http.StatusOK || tok["access_token"] == nil {
		t.Fatalf("the right verifier after a wrong one: HTTP %d %v", st, tok)
	}
	access := tok["access_token"].(string)
	if code := toolStatus(t, s, access); code != http.StatusOK {
		t.Fatalf("access token: HTTP %d", code)
	}
	if st, body := exchange(t, s, cloneWith(base, "code_verifier", verifier)); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("a reused code: HTTP %d %v", st, body)
	}
	if code := toolStatus(t, s, access); code != http.StatusUnauthorized {
		t.Fatalf("the access token of a reused code: HTTP %d", code)
	}
}

// TestOAuthRefreshReuseRevokesTheFamily: presenting a spent refresh token
// again revokes the grant: the newest access token stops working too.
func TestOAuthRefreshReuseRevokesTheFamily(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	code := b.consent(authorizeURL(s, client, verifier, nil), "approve", "").Query().Get("code")
	_, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}, "client_id": {client}}
	st, next := exchange(t, s, refresh)
	if st != http.StatusOK {
		t.Fatalf("refresh: HTTP %d %v", st, next)
	}
	if st, body := exchange(t, s, cloneWith(refresh, "scope", "project:write")); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		// The spent token is refused before its scope is looked at.
		t.Fatalf("reused refresh token: HTTP %d %v", st, body)
	}
	if code := toolStatus(t, s, next["access_token"].(string)); code != http.StatusUnauthorized {
		t.Fatalf("the newest access token after a refresh token replay: HTTP %d", code)
	}
	if st, body := exchange(t, s, cloneWith(refresh, "refresh_token", next["refresh_token"].(string))); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("the newest refresh token of a revoked family: HTTP %d %v", st, body)
	}
}

// TestOAuthTokenForAnotherAudience: a token the server issued while its
// public URL named another resource is refused once the resource changed
// (RFC 8707: tokens are for exactly this resource).
func TestOAuthTokenForAnotherAudience(t *testing.T) {
	dir := t.TempDir()
	project := rawProjectDir(t)
	tune := func(public string) func(*app.Config) {
		return func(c *app.Config) { c.OAuth.Enabled, c.PublicURL = true, public }
	}
	s := startAppWith(t, dir, tune("http://first.test"), "p="+project)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	u := authorizeURL(s, client, verifier, url.Values{"resource": {"http://first.test/mcp"}})
	code := b.consent(u, "approve", "").Query().Get("code")
	st, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	if st != http.StatusOK || toolStatus(t, s, tok["access_token"].(string)) != http.StatusOK {
		t.Fatalf("token for the first resource: HTTP %d %v", st, tok)
	}
	s.stop(t)
	s = startAppWith(t, dir, tune("http://second.test"), "p="+project)
	defer s.stop(t)
	if code := toolStatus(t, s, tok["access_token"].(string)); code != http.StatusUnauthorized {
		t.Fatalf("a token for another resource: HTTP %d", code)
	}
}

// TestOAuthTokenEndpointIsRateLimited: guessing at the token endpoint
// from one address is cut off with 429 after the burst.
func TestOAuthTokenEndpointIsRateLimited(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	client := register(t, s, flowRedirect)
	guess := url.Values{"grant_type": {"authorization_code"}, "code": {authserver.CodePrefix + strings.Repeat("A", 43)},
		"redirect_uri": {flowRedirect}, "client_id": {client}, "code_verifier": {oauth2.GenerateVerifier()}}
	for i := range oauthhttp.LimitBurst {
		if st, body := exchange(t, s, guess); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Fatalf("guess %d: HTTP %d %v", i, st, body)
		}
	}
	if st, body := exchange(t, s, guess); st != http.StatusTooManyRequests || body["error"] != "temporarily_unavailable" {
		t.Fatalf("guess past the burst: HTTP %d %v", st, body)
	}
}

func cloneWith(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for key, vs := range v {
		out[key] = append([]string(nil), vs...)
	}
	out.Set(k, val)
	return out
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// BenchmarkMCPToolCallBuiltinOAuthVsPAT alternates the same read-only MCP
// tools/call (go-sdk client sessions) authenticated with an access token
// of the built-in authorization server and with a wc_pat_ token of the
// same scope. The goal: ratio (oauth over pat) at most 1.05 at the
// median, validation cached (oauth.db's read cache, like auth.db's).
func BenchmarkMCPToolCallBuiltinOAuthVsPAT(b *testing.B) {
	s := startAppWith(b, b.TempDir(), func(c *app.Config) { c.OAuth.Enabled = true }, "p="+rawProjectDir(b))
	defer s.stop(b)
	br := newBrowser(b, s)
	client := register(b, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	code := br.consent(authorizeURL(s, client, verifier, nil), "approve", "").Query().Get("code")
	_, tok := exchange(b, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	access, _ := tok["access_token"].(string)
	pat, _, err := s.a.Auth.CreateToken(context.Background(), "bench", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil || access == "" {
		b.Fatalf("tokens: %v %v", tok, err)
	}
	session := func(token string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: s.base + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}},
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession) func() {
		params := &mcp.CallToolParams{Name: "project_overview", Arguments: map[string]any{"project": "agent:local:p"}}
		return func() {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				b.Fatalf("tools/call: %v %+v", err, res)
			}
		}
	}
	benchpair.Run(b, "pat", call(session(pat)), "oauth", call(session(access)))
}
