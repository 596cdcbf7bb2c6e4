package authserver_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestAuthorizeNotRedirectable: a refusal whose client or redirect URI
// cannot be trusted comes with a zero Request, so it is never redirected.
func TestAuthorizeNotRedirectable(t *testing.T) {
	e := newEnv(t)
	app := e.register(authserver.AuthNone, "https://app.example/cb")
	id := app.Client.ID
	ok := request(id, "https://app.example/cb")
	revoked := e.public()
	if _, err := e.svc.RevokeClient(e.ctx, revoked.Client.ID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		a    ask
		code authserver.ErrorCode
	}{
		{"trailing slash", ok.with("redirect_uri", "https://app.example/cb/"), authserver.ErrInvalidRequest},
		{"path case", ok.with("redirect_uri", "https://app.example/CB"), authserver.ErrInvalidRequest},
		{"host case", ok.with("redirect_uri", "https://APP.example/cb"), authserver.ErrInvalidRequest},
		{"extra query", ok.with("redirect_uri", "https://app.example/cb?x=1"), authserver.ErrInvalidRequest},
		{"empty query", ok.with("redirect_uri", "https://app.example/cb?"), authserver.ErrInvalidRequest},
		{"fragment", ok.with("redirect_uri", "https://app.example/cb#f"), authserver.ErrInvalidRequest},
		{"http", ok.with("redirect_uri", "http://app.example/cb"), authserver.ErrInvalidRequest},
		{"port", ok.with("redirect_uri", "https://app.example:8443/cb"), authserver.ErrInvalidRequest},
		{"userinfo", ok.with("redirect_uri", "https://evil.example@app.example/cb"), authserver.ErrInvalidRequest},
		{"open redirect", ok.with("redirect_uri", "https://evil.example/cb"), authserver.ErrInvalidRequest},
		{"percent-encoded path", ok.with("redirect_uri", "https://app.example/c%62"), authserver.ErrInvalidRequest},
		{"missing redirect_uri", ok.with("redirect_uri"), authserver.ErrInvalidRequest},
		{"too long redirect_uri", ok.with("redirect_uri", "https://app.example/cb?"+strings.Repeat("a", authserver.MaxURI)), authserver.ErrInvalidRequest},
		{"repeated redirect_uri", ok.with("redirect_uri", "https://app.example/cb", "https://evil.example/cb"), authserver.ErrInvalidRequest},
		{"repeated client_id", ok.with("client_id", id, id), authserver.ErrInvalidRequest},
		{"missing client_id", ok.with("client_id"), authserver.ErrInvalidClient},
		{"unknown client", ok.with("client_id", "wc_client_ffffffffffffffff"), authserver.ErrInvalidClient},
		{"too long client_id", ok.with("client_id", "https://a.example/"+strings.Repeat("a", authserver.MaxURI)), authserver.ErrInvalidClient},
		{"revoked client", request(revoked.Client.ID, cliRedirect), authserver.ErrInvalidClient},
	}
	for _, c := range cases {
		r, err := e.svc.Authorize(e.ctx, c.a.q)
		wantCode(t, c.name, err, c.code)
		if r.RedirectURI != "" || r.Client.ID != "" {
			t.Errorf("%s: refusal came with a Request %+v; want none (not redirectable)", c.name, r)
		}
	}
	if n := e.rows(); n != 0 {
		t.Errorf("refused requests stored %d rows", n)
	}
}

// TestAuthorizeRedirectable: a refusal of a trusted client and redirect
// URI comes with the Request, for ErrorRedirect.
func TestAuthorizeRedirectable(t *testing.T) {
	e := newEnv(t)
	reg := e.register(authserver.AuthNone, appRedirect)
	ok := request(reg.Client.ID, appRedirect)
	_, plain := pkce(43)
	cases := []struct {
		name string
		a    ask
		code authserver.ErrorCode
	}{
		{"plain", ok.with("code_challenge_method", "plain").with("code_challenge", strings.Repeat("v", 43)), authserver.ErrInvalidRequest},
		{"missing method", ok.with("code_challenge_method"), authserver.ErrInvalidRequest},
		{"lower-case method", ok.with("code_challenge_method", "s256"), authserver.ErrInvalidRequest},
		{"missing challenge", ok.with("code_challenge"), authserver.ErrInvalidRequest},
		{"short challenge", ok.with("code_challenge", plain[:42]), authserver.ErrInvalidRequest},
		{"challenge not base64url", ok.with("code_challenge", strings.Repeat("+", 43)), authserver.ErrInvalidRequest},
		{"response_type token", ok.with("response_type", "token"), authserver.ErrUnsupportedResponseType},
		{"missing response_type", ok.with("response_type"), authserver.ErrUnsupportedResponseType},
		{"repeated state", ok.with("state", "a", "b"), authserver.ErrInvalidRequest},
		{"repeated scope", ok.with("scope", "project:read", "admin"), authserver.ErrInvalidRequest},
		{"repeated challenge", ok.with("code_challenge", plain, plain), authserver.ErrInvalidRequest},
		{"unknown scope", ok.with("scope", "project:read project:*"), authserver.ErrInvalidScope},
		{"admin", ok.with("scope", "project:read admin"), authserver.ErrInvalidScope},
		{"account:manage", ok.with("scope", "account:manage"), authserver.ErrInvalidScope},
		{"scope case", ok.with("scope", "PROJECT:READ"), authserver.ErrInvalidScope},
		{"another resource", ok.with("resource", "https://other.example/mcp"), authserver.ErrInvalidTarget},
		{"a resource path below", ok.with("resource", resource+"/x"), authserver.ErrInvalidTarget},
		{"another origin", ok.with("resource", "https://other.example/"), authserver.ErrInvalidTarget},
	}
	for _, c := range cases {
		r, err := e.svc.Authorize(e.ctx, c.a.q)
		wantCode(t, c.name, err, c.code)
		if r.RedirectURI != appRedirect || r.Client.ID != reg.Client.ID {
			t.Errorf("%s: Request = %+v; want it redirectable to %s", c.name, r, appRedirect)
			continue
		}
		q := redirectQuery(t, e.svc.ErrorRedirect(r, err), appRedirect)
		if q.Get("error") != string(c.code) || q.Get("error_description") == "" || q.Has("code") {
			t.Errorf("%s: ErrorRedirect query %v", c.name, q)
		}
		if want := c.a.q["state"]; len(want) == 1 && q.Get("state") != want[0] {
			t.Errorf("%s: ErrorRedirect state = %q, want %q", c.name, q.Get("state"), want[0])
		}
	}
	if n := e.rows(); n != 0 {
		t.Errorf("refused requests stored %d rows", n)
	}
}

// TestAuthorizeResourceAndScopes: the resource may carry a trailing
// slash, be the server's origin (as Claude Code sends it) or be left out,
// and is always bound as the canonical MCP URL; no scope (or offline_access alone) asks for the
// default scopes; scopes are deduplicated in their fixed order.
func TestAuthorizeResourceAndScopes(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	ok := request(reg.Client.ID, cliRedirect)
	for _, res := range []string{resource + "/", "", issuer, issuer + "/"} {
		a := ok.with("resource")
		if res != "" {
			a = ok.with("resource", res)
		}
		if r := e.authorize(a); r.Resource != resource {
			t.Errorf("resource %q: Request.Resource = %q, want %q", res, r.Resource, resource)
		}
	}
	for scope, want := range map[string][]auth.Scope{
		"":                             auth.DefaultScopes,
		"offline_access":               auth.DefaultScopes,
		"job:run project:read job:run": {auth.ScopeProjectRead, auth.ScopeJobRun},
		"memory:manage memory:read":    {auth.ScopeMemoryRead, auth.ScopeMemoryManage},
	} {
		if r := e.authorize(ok.with("scope", scope)); !slices.Equal(r.Scopes, want) {
			t.Errorf("scope %q: Request.Scopes = %q, want %q", scope, r.Scopes, want)
		}
	}
}

// TestLoopbackRedirect: a loopback redirect URI matches with any port
// (RFC 8252 §7.3), registered with a port or without, but only with the
// same scheme, host, path and query.
func TestLoopbackRedirect(t *testing.T) {
	e := newEnv(t)
	reg := e.register(authserver.AuthNone, "http://127.0.0.1:8765/cb", "http://localhost/callback", "http://[::1]/cb?x=1")
	match := []string{
		"http://127.0.0.1:8765/cb", "http://127.0.0.1:4444/cb", "http://127.0.0.1/cb",
		"http://localhost/callback", "http://localhost:5555/callback",
		"http://[::1]:9/cb?x=1",
	}
	for _, uri := range match {
		r, err := e.svc.Authorize(e.ctx, request(reg.Client.ID, uri).q)
		if err != nil || r.RedirectURI != uri {
			t.Errorf("redirect_uri %s: %+v, %v; want it to match", uri, r, err)
		}
	}
	for _, uri := range []string{
		"http://127.0.0.1:4444/cb/", "http://127.0.0.1:4444/CB", "http://127.0.0.1:4444/cb?x=1", "http://127.0.0.1:4444/cb?",
		"http://localhost:5555/callbackx", "http://localhost:5555/", "http://127.0.0.1:5555/callback",
		"http://localhost.:5555/callback", "http://LOCALHOST:5555/callback", "https://localhost:5555/callback",
		"http://user@localhost:5555/callback", "http://localhost:5555/callback#f", "http://localhost:5555/callback#",
		"http://127.0.0.2:8765/cb", "http://[::1]:9/cb", "http://[::1]:9/cb?x=2", "http://localhost:8765/cb",
	} {
		r, err := e.svc.Authorize(e.ctx, request(reg.Client.ID, uri).q)
		wantCode(t, "redirect_uri "+uri, err, authserver.ErrInvalidRequest)
		if r.RedirectURI != "" {
			t.Errorf("redirect_uri %s: refusal came with a Request %+v", uri, r)
		}
	}
	// The code is bound to the port the request used.
	a := request(reg.Client.ID, "http://127.0.0.1:4444/cb")
	code := e.approve(e.authorize(a), alice, "").Get("code")
	_, err := e.exchange(creds(reg), code, "http://127.0.0.1:5555/cb", a.verifier)
	wantCode(t, "token with another loopback port", err, authserver.ErrInvalidGrant)
	if _, err := e.exchange(creds(reg), code, "http://127.0.0.1:4444/cb", a.verifier); err != nil {
		t.Errorf("token with the request's port: %v", err)
	}
}

// TestState: a state of MaxState bytes is echoed; a longer one is refused
// and not echoed.
func TestState(t *testing.T) {
	e := newEnv(t)
	reg := e.register(authserver.AuthNone, appRedirect)
	ok := request(reg.Client.ID, appRedirect)
	long := strings.Repeat("s", authserver.MaxState)
	r := e.authorize(ok.with("state", long))
	if q := redirectQuery(t, e.approveURL(r), appRedirect); q.Get("state") != long {
		t.Errorf("state of MaxState bytes echoed as %d bytes", len(q.Get("state")))
	}
	r, err := e.svc.Authorize(e.ctx, ok.with("state", long+"s").q)
	wantCode(t, "state of MaxState+1 bytes", err, authserver.ErrInvalidRequest)
	if r.RedirectURI != appRedirect || r.State != "" {
		t.Fatalf("Request = %+v; want it redirectable without the state", r)
	}
	if q := redirectQuery(t, e.svc.ErrorRedirect(r, err), appRedirect); q.Has("state") {
		t.Errorf("an overlong state was echoed")
	}
	// No state: none echoed.
	r = e.authorize(ok.with("state"))
	if q := redirectQuery(t, e.approveURL(r), appRedirect); q.Has("state") {
		t.Errorf("Approve echoed a state the request did not send")
	}
}

func (e *env) approveURL(r authserver.Request) string {
	e.t.Helper()
	to, err := e.svc.Approve(e.ctx, r, authserver.Approval{Approver: alice})
	if err != nil {
		e.t.Fatalf("Approve: %v", err)
	}
	return to
}

// TestRedirectsCarryIssAndState: Approve, ErrorRedirect and Deny send the
// browser to the redirect URI, with its own query kept (and not
// overridden by it), the state (encoded, whatever its bytes) and iss
// (RFC 9207).
func TestRedirectsCarryIssAndState(t *testing.T) {
	e := newEnv(t)
	redirect := "https://app.example/cb?tenant=7&iss=evil&state=forged"
	reg := e.register(authserver.AuthNone, redirect)
	state := "s&iss=evil#frag ment?é"
	r := e.authorize(request(reg.Client.ID, redirect).with("state", state))
	for name, to := range map[string]string{
		"Approve":       e.approveURL(r),
		"ErrorRedirect": e.svc.ErrorRedirect(r, authserver.Deny),
	} {
		u, err := url.Parse(to)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		q := u.Query()
		if u.Host != "app.example" || u.Path != "/cb" || q.Get("tenant") != "7" ||
			!slices.Equal(q["iss"], []string{issuer}) || !slices.Equal(q["state"], []string{state}) || u.Fragment != "" {
			t.Errorf("%s redirect %q: want app.example/cb with tenant=7, one iss=%s and one state=%q, no fragment", name, to, issuer, state)
		}
		if name == "ErrorRedirect" && (q.Get("error") != "access_denied" || q.Has("code")) {
			t.Errorf("Deny redirect %q: want error=access_denied and no code", to)
		}
	}
}

// TestApproveScopes: the grant holds the requested scopes the approver
// holds; an approver holding none is refused and nothing is stored.
func TestApproveScopes(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	a := request(reg.Client.ID, cliRedirect).with("scope", "project:read project:write job:run")
	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_bob", Owner: "bob", Scopes: []auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead}}
	q := e.approve(e.authorize(a), reader, "prj_9")
	tr, err := e.exchange(creds(reg), q.Get("code"), cliRedirect, a.verifier)
	if err != nil {
		t.Fatal(err)
	}
	if p := e.live(tr.AccessToken); !slices.Equal(p.Scopes, []auth.Scope{auth.ScopeProjectRead}) || tr.Scope != "project:read" ||
		p.Owner != "bob" || p.Project != "prj_9" {
		t.Errorf("narrowed grant: principal %+v, token scope %q; want project:read of bob on prj_9", p, tr.Scope)
	}
	// A refresh cannot widen the narrowed grant.
	_, err = e.refresh(creds(reg), tr.RefreshToken, "project:write")
	wantCode(t, "refresh asking for a scope the approver lacked", err, authserver.ErrInvalidScope)

	admin := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_root", Owner: "root", Scopes: []auth.Scope{auth.ScopeAdmin}}
	q = e.approve(e.authorize(a), admin, "")
	if tr, err := e.exchange(creds(reg), q.Get("code"), cliRedirect, a.verifier); err != nil || tr.Scope != "project:read project:write job:run" {
		t.Errorf("admin's grant: %+v, %v; want every requested scope", tr, err)
	}

	none := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_eve", Owner: "eve", Scopes: []auth.Scope{auth.ScopeMemoryRead}}
	to, err := e.svc.Approve(e.ctx, e.authorize(a), authserver.Approval{Approver: none})
	wantCode(t, "Approve by an approver holding none of the scopes", err, authserver.ErrAccessDenied)
	if to != "" {
		t.Errorf("refused Approve returned %q", to)
	}
	if n := e.rows(); n != 2*4 {
		t.Errorf("store holds %d rows, want 8 (two redeemed grants); the refused approval stored something", n)
	}
}

// TestApproveRevokedMeanwhile: a client revoked between the request and
// the consent gets no code, and nothing is stored.
func TestApproveRevokedMeanwhile(t *testing.T) {
	e := newEnv(t)
	reg := e.public()
	r := e.authorize(request(reg.Client.ID, cliRedirect))
	if _, err := e.svc.RevokeClient(e.ctx, reg.Client.ID); err != nil {
		t.Fatal(err)
	}
	to, err := e.svc.Approve(e.ctx, r, authserver.Approval{Approver: alice})
	wantCode(t, "Approve for a revoked client", err, authserver.ErrInvalidClient)
	if to != "" {
		t.Errorf("refused Approve returned %q", to)
	}
	if n := e.rows(); n != 0 {
		t.Errorf("store holds %d rows, want 0", n)
	}
}
