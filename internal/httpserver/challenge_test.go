package httpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// challengeOf parses the one Bearer challenge of h as a client does.
func challengeOf(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 || cs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %+v %v", h.Values("WWW-Authenticate"), cs, err)
	}
	return cs[0].Params
}

func send(t *testing.T, method, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestChallenges: a 401 names the resource metadata and the scope hint
// (quoted so a client reads them back exactly), with error="invalid_token"
// when a credential was refused; a step-up names every scope needed.
func TestChallenges(t *testing.T) {
	meta := `https://h.example/.well-known/oauth-protected-resource/mcp?odd="q"\x`
	m := httpserver.NewMux(httpserver.Options{
		Auth: tokens{"tok-a": "owner-a"}, ResourceMetadata: meta,
		ChallengeScopes: []auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead},
	})
	need := []auth.Scope{auth.ScopeProjectWrite, auth.ScopeMemoryManage}
	m.Authenticated("GET /scoped", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteInsufficientScope(w, r, need, failure.New(failure.InsufficientScope, "needs more"))
	}))
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	for _, tc := range []struct{ token, wantErr string }{{"", ""}, {"Bearer nope", "invalid_token"}} {
		resp, body := send(t, "GET", srv.URL+"/scoped", map[string]string{"Authorization": tc.token})
		ch := challengeOf(t, resp.Header)
		if resp.StatusCode != 401 || ch["resource_metadata"] != meta || ch["scope"] != "project:read runtime:read" || ch["error"] != tc.wantErr || ch["realm"] != "webcodex" {
			t.Fatalf("token %q: %d %v %s", tc.token, resp.StatusCode, ch, body)
		}
	}
	resp, body := send(t, "GET", srv.URL+"/scoped", map[string]string{"Authorization": "Bearer tok-a"})
	ch := challengeOf(t, resp.Header)
	if resp.StatusCode != 403 || ch["error"] != "insufficient_scope" || ch["scope"] != "project:write memory:manage" || ch["resource_metadata"] != meta ||
		!strings.Contains(body, `"kind":"insufficient_scope"`) {
		t.Fatalf("step-up: %d %v %s", resp.StatusCode, ch, body)
	}

	// Outside the Mux's authenticated routes there is no metadata URL to
	// name.
	r := httptest.NewRequest("GET", "/x", nil)
	if got := httpserver.InsufficientScopeChallenge(r, need); got != `Bearer realm="webcodex", error="insufficient_scope", scope="project:write memory:manage"` {
		t.Fatalf("challenge without a Mux: %s", got)
	}
	// Without a configured metadata URL or scope hint, a 401 names neither.
	plain := httpserver.NewMux(httpserver.Options{Auth: tokens{}})
	plain.Authenticated("GET /a", http.NotFoundHandler())
	plainSrv := httptest.NewServer(plain.Handler())
	defer plainSrv.Close()
	resp, _ = send(t, "GET", plainSrv.URL+"/a", nil)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || got != `Bearer realm="webcodex"` {
		t.Fatalf("unconfigured 401: %d %q", resp.StatusCode, got)
	}
}

// TestDiscoveryRoutes: a discovery route answers any Origin, where an
// authenticated or public route refuses a foreign one; the Host check
// still applies to it.
func TestDiscoveryRoutes(t *testing.T) {
	m := httpserver.NewMux(httpserver.Options{Auth: tokens{"tok-a": "owner-a"}, LoopbackOnly: true})
	m.Discovery("/.well-known/x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "meta") }))
	m.Public("GET /public", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "public") }))
	m.Authenticated("GET /authed", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "authed") }))
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	foreign := map[string]string{"Origin": "https://elsewhere.example", "Authorization": "Bearer tok-a"}
	if resp, body := send(t, "GET", srv.URL+"/.well-known/x", foreign); resp.StatusCode != 200 || body != "meta" {
		t.Fatalf("discovery from a foreign origin: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/public", "/authed"} {
		if resp, body := send(t, "GET", srv.URL+path, foreign); resp.StatusCode != 403 || !strings.Contains(body, "permission_denied") {
			t.Fatalf("%s from a foreign origin: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp, body := send(t, "GET", srv.URL+"/.well-known/x", map[string]string{"Host": "attacker.example"}); resp.StatusCode != 403 || !strings.Contains(body, "permission_denied") {
		t.Fatalf("discovery for a foreign host: %d %s", resp.StatusCode, body)
	}
}
