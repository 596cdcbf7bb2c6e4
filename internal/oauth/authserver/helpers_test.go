package authserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
)

const (
	issuer   = "https://wc.example"
	resource = "https://wc.example/mcp"
	// appRedirect is a confidential web client's redirect URI; it has a
	// query of its own, which every redirect keeps.
	appRedirect = "https://app.example/cb?tenant=7"
	// cliRedirect is a native client's portless loopback redirect URI.
	cliRedirect = "http://127.0.0.1/callback"
)

// t0 is the tests' starting time.
var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// env is an authorization server over an oauth.db in a temporary
// directory, with a clock the test moves.
type env struct {
	t     *testing.T
	ctx   context.Context
	now   time.Time
	path  string
	store *oauthdb.Store
	svc   *authserver.Service
	docs  *fakeDocs
	// closed: the test closed store itself.
	closed bool
}

func newEnv(t *testing.T) *env {
	return newEnvDocs(t, nil)
}

// newEnvDocs returns an env whose server fetches CIMD clients from docs
// (none when docs is nil).
func newEnvDocs(t *testing.T, docs *fakeDocs) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), now: t0, path: filepath.Join(t.TempDir(), oauthdb.FileName), docs: docs}
	s, err := oauthdb.Open(e.ctx, e.path)
	if err != nil {
		t.Fatalf("oauthdb.Open: %v", err)
	}
	t.Cleanup(func() {
		if e.closed {
			return
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e.store = s
	e.svc = e.service(resource)
	return e
}

// service returns a server of e's issuer over e's store for res.
func (e *env) service(res string) *authserver.Service {
	e.t.Helper()
	o := authserver.Options{Issuer: issuer, Resource: res, Store: e.store, Now: func() time.Time { return e.now }}
	if e.docs != nil {
		o.Documents = e.docs
	}
	svc, err := authserver.New(o)
	if err != nil {
		e.t.Fatalf("authserver.New: %v", err)
	}
	return svc
}

func (e *env) advance(d time.Duration) { e.now = e.now.Add(d) }

// register enrols a client by DCR.
func (e *env) register(method string, redirects ...string) authserver.Registration {
	e.t.Helper()
	reg, err := e.svc.Register(e.ctx, oauthex.ClientRegistrationMetadata{
		RedirectURIs: redirects, TokenEndpointAuthMethod: method, ClientName: "test client",
		GrantTypes: []string{authserver.GrantAuthorizationCode, authserver.GrantRefreshToken}, ResponseTypes: []string{"code"},
	})
	if err != nil {
		e.t.Fatalf("Register(%s, %q): %v", method, redirects, err)
	}
	return reg
}

// public registers a public client redirecting to cliRedirect.
func (e *env) public() authserver.Registration { return e.register(authserver.AuthNone, cliRedirect) }

// creds returns how reg's client authenticates at the token endpoint.
func creds(reg authserver.Registration) authserver.ClientAuth {
	a := authserver.ClientAuth{ID: reg.Client.ID, Secret: reg.Secret}
	a.Basic = reg.Client.AuthMethod == authserver.AuthClientSecretBasic
	return a
}

// pkce returns a PKCE verifier of n characters and its S256 challenge.
func pkce(n int) (verifier, challenge string) {
	verifier = strings.Repeat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~", 2)[:n]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// ask is one authorization request and the verifier of its challenge.
type ask struct {
	q        url.Values
	verifier string
}

// request returns a valid authorization request of client to redirect.
func request(clientID, redirect string) ask {
	v, c := pkce(43)
	return ask{verifier: v, q: url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
		"state": {"st-1"}, "scope": {"project:read project:write offline_access"},
		"code_challenge": {c}, "code_challenge_method": {"S256"}, "resource": {resource},
	}}
}

// with returns a copy of a with param k set to vs (removed when vs is
// empty).
func (a ask) with(k string, vs ...string) ask {
	q := url.Values{}
	for key, v := range a.q {
		q[key] = append([]string(nil), v...)
	}
	if len(vs) == 0 {
		delete(q, k)
	} else {
		q[k] = vs
	}
	return ask{q: q, verifier: a.verifier}
}

// alice approves: she holds every scope a client may ask for.
var alice = auth.Principal{Kind: auth.KindAPIToken, ID: "tok_alice", Owner: "alice", Scopes: auth.ResourceScopes}

func (e *env) authorize(a ask) authserver.Request {
	e.t.Helper()
	r, err := e.svc.Authorize(e.ctx, a.q)
	if err != nil {
		e.t.Fatalf("Authorize: %v", err)
	}
	return r
}

// approve approves r as approver and returns the query of the redirect.
func (e *env) approve(r authserver.Request, approver auth.Principal, project string) url.Values {
	e.t.Helper()
	to, err := e.svc.Approve(e.ctx, r, authserver.Approval{Approver: approver, Project: project})
	if err != nil {
		e.t.Fatalf("Approve: %v", err)
	}
	u, err := url.Parse(to)
	if err != nil {
		e.t.Fatalf("Approve redirect %q: %v", to, err)
	}
	return u.Query()
}

// code runs an authorization request of reg's client approved by alice
// and returns the code and the request.
func (e *env) code(reg authserver.Registration, redirect string) (string, ask) {
	e.t.Helper()
	a := request(reg.Client.ID, redirect)
	return e.approve(e.authorize(a), alice, "").Get("code"), a
}

func (e *env) exchange(c authserver.ClientAuth, code, redirect, verifier string) (authserver.TokenResponse, error) {
	return e.svc.Token(e.ctx, authserver.TokenRequest{Client: c, GrantType: authserver.GrantAuthorizationCode,
		Code: code, RedirectURI: redirect, CodeVerifier: verifier, Resource: resource})
}

func (e *env) refresh(c authserver.ClientAuth, token, scope string) (authserver.TokenResponse, error) {
	return e.svc.Token(e.ctx, authserver.TokenRequest{Client: c, GrantType: authserver.GrantRefreshToken,
		RefreshToken: token, Resource: resource, Scope: scope})
}

// tokens returns the tokens of a grant of reg's client approved by alice.
func (e *env) tokens(reg authserver.Registration, redirect string) authserver.TokenResponse {
	e.t.Helper()
	code, a := e.code(reg, redirect)
	tr, err := e.exchange(creds(reg), code, redirect, a.verifier)
	if err != nil {
		e.t.Fatalf("Token: %v", err)
	}
	return tr
}

// live fails the test unless access authenticates.
func (e *env) live(access string) auth.Principal {
	e.t.Helper()
	p, err := e.svc.Authenticate(e.ctx, access)
	if err != nil {
		e.t.Fatalf("Authenticate: %v, want the token live", err)
	}
	return p
}

// dead fails the test unless access is refused as unauthenticated.
func (e *env) dead(access string) {
	e.t.Helper()
	if p, err := e.svc.Authenticate(e.ctx, access); !failure.Is(err, failure.Unauthenticated) {
		e.t.Errorf("Authenticate = %+v, %v; want %q", p, err, failure.Unauthenticated)
	}
}

// rows returns how many grants and secrets the store holds, by sweeping
// past every lifetime: it empties the store, so a test calls it last.
// Clients the sweep deletes too are not counted.
func (e *env) rows() int64 {
	e.t.Helper()
	before, err := e.store.Clients(e.ctx)
	if err != nil {
		e.t.Fatalf("Clients: %v", err)
	}
	n, err := e.store.Sweep(e.ctx, e.now.Add(10*authserver.GrantTTL))
	if err != nil {
		e.t.Fatalf("Sweep: %v", err)
	}
	after, err := e.store.Clients(e.ctx)
	if err != nil {
		e.t.Fatalf("Clients: %v", err)
	}
	return n - int64(len(before)-len(after))
}

// wantCode fails the test unless err is an *authserver.Error with code.
func wantCode(t *testing.T, what string, err error, code authserver.ErrorCode) {
	t.Helper()
	if got := authserver.CodeOf(err); got != code {
		t.Errorf("%s: %v (code %q), want %q", what, err, got, code)
	}
}

// redirectQuery parses a redirect and checks that it goes to base (a
// registered redirect URI, whose own query it keeps) with iss; it returns
// the query.
func redirectQuery(t *testing.T, to, base string) url.Values {
	t.Helper()
	u, err := url.Parse(to)
	if err != nil {
		t.Fatalf("redirect %q: %v", to, err)
	}
	b, _ := url.Parse(base)
	if u.Scheme != b.Scheme || u.Host != b.Host || u.Path != b.Path || u.Fragment != "" {
		t.Errorf("redirect %q does not go to %q", to, base)
	}
	q := u.Query()
	for k, v := range b.Query() {
		if q.Get(k) != v[0] {
			t.Errorf("redirect %q lost the redirect URI's %s=%s", to, k, v[0])
		}
	}
	if q.Get("iss") != issuer {
		t.Errorf("redirect %q: iss = %q, want %q", to, q.Get("iss"), issuer)
	}
	return q
}
