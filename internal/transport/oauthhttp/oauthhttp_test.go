package oauthhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
)

// newServer serves the endpoints of an authorization server over a real
// oauth.db on a loopback server.
func newServer(t *testing.T) (*httptest.Server, *oauthdb.Store) {
	t.Helper()
	st, err := oauthdb.Open(context.Background(), filepath.Join(t.TempDir(), oauthdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := httpserver.NewMux(httpserver.Options{})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	as, err := authserver.New(authserver.Options{Issuer: srv.URL, Resource: srv.URL + "/mcp", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(m, Options{Server: as, ConsentURL: "/console/oauth/consent"}); err != nil {
		t.Fatal(err)
	}
	return srv, st
}

func post(t *testing.T, u, contentType, body string, basic *[2]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if basic != nil {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestMalformedRequests: each malformed token, revocation or registration
// request gets its OAuth error, and no client is stored.
func TestMalformedRequests(t *testing.T) {
	srv, st := newServer(t)
	form := "application/x-www-form-urlencoded"
	for name, tc := range map[string]struct {
		path, ctype, body string
		basic             *[2]string
		status            int
		code              string
	}{
		"token as JSON":       {authserver.TokenPath, "application/json", `{"grant_type":"authorization_code"}`, nil, 400, "invalid_request"},
		"repeated parameter":  {authserver.TokenPath, form, "grant_type=refresh_token&grant_type=authorization_code&client_id=x", nil, 400, "invalid_request"},
		"form over the bound": {authserver.TokenPath, form, "client_id=x&code=" + strings.Repeat("a", MaxFormBytes), nil, 400, "invalid_request"},
		"secret two ways":     {authserver.TokenPath, form, "grant_type=authorization_code&client_secret=s", &[2]string{"x", "s"}, 400, "invalid_request"},
		"unknown client":      {authserver.TokenPath, form, "grant_type=authorization_code&client_id=wc_client_0000000000000000", nil, 401, "invalid_client"},
		"revoke unknown":      {authserver.RevokePath, form, "token=x&client_id=wc_client_0000000000000000", nil, 401, "invalid_client"},
		"register as form":    {authserver.RegisterPath, form, "redirect_uris=https://a.example/cb", nil, 400, "invalid_client_metadata"},
		"register not JSON":   {authserver.RegisterPath, "application/json", `{"redirect_uris":`, nil, 400, "invalid_client_metadata"},
		"register http":       {authserver.RegisterPath, "application/json", `{"redirect_uris":["http://a.example/cb"]}`, nil, 400, "invalid_redirect_uri"},
	} {
		t.Run(name, func(t *testing.T) {
			status, body := post(t, srv.URL+tc.path, tc.ctype, tc.body, tc.basic)
			if status != tc.status || body["error"] != tc.code {
				t.Fatalf("HTTP %d %v, want %d %s", status, body, tc.status, tc.code)
			}
		})
	}
	if cs, err := st.Clients(context.Background()); err != nil || len(cs) != 0 {
		t.Fatalf("clients after malformed requests: %v %v", cs, err)
	}
}

// TestRegisterAnswersRFC7591: a registration's answer has the client id,
// a confidential client's secret (never expiring), and no secret for a
// public client.
func TestRegisterAnswersRFC7591(t *testing.T) {
	srv, _ := newServer(t)
	status, body := post(t, srv.URL+authserver.RegisterPath, "application/json", `{"redirect_uris":["https://a.example/cb"],"client_name":"A"}`, nil)
	if status != http.StatusCreated || !strings.HasPrefix(body["client_id"].(string), authserver.ClientIDPrefix) ||
		!strings.HasPrefix(body["client_secret"].(string), authserver.ClientSecretPrefix) || body["client_secret_expires_at"] != 0.0 ||
		body["token_endpoint_auth_method"] != "client_secret_basic" {
		t.Fatalf("confidential: HTTP %d %v", status, body)
	}
	status, body = post(t, srv.URL+authserver.RegisterPath, "application/json", `{"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"none"}`, nil)
	if _, has := body["client_secret"]; status != http.StatusCreated || has || body["client_name"] != "unnamed client" {
		t.Fatalf("public: HTTP %d %v", status, body)
	}
}

// TestAuthorizeNeverRedirectsAnUntrustedRequest: an unknown client gets a
// plain page, not a redirect to the redirect_uri it named.
func TestAuthorizeNeverRedirectsAnUntrustedRequest(t *testing.T) {
	srv, _ := newServer(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {"wc_client_0000000000000000"}, "redirect_uri": {"https://evil.example/cb"}, "response_type": {"code"}}
	resp, err := c.Get(srv.URL + authserver.AuthorizePath + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("HTTP %d %v", resp.StatusCode, resp.Header)
	}
}

// TestLimits: a key gets LimitBurst requests at once, then one more per
// limitWindow/LimitPerWindow; MaxLimitKeys bounds the table (a full one
// starts over).
func TestLimits(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLimits(func() time.Time { return now })
	for i := range LimitBurst {
		if !l.allow("token", "a") {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	if l.allow("token", "a") {
		t.Fatal("a request past the burst allowed")
	}
	if !l.allow("token", "b") || !l.allow("register", "a") {
		t.Fatal("another key or endpoint shares a's bucket")
	}
	now = now.Add(limitWindow / LimitPerWindow)
	if !l.allow("token", "a") || l.allow("token", "a") {
		t.Fatal("one request per interval after the burst")
	}
	for i := range MaxLimitKeys {
		l.allow("token", "k"+string(rune(i)))
	}
	if len(l.m) > MaxLimitKeys {
		t.Fatalf("%d keys, bound %d", len(l.m), MaxLimitKeys)
	}
}
