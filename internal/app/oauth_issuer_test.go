package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
)

// testIssuer is an external OAuth authorization server on loopback: its
// RFC 8414 metadata and a JWKS of one RSA key, and a signer of access
// tokens with that key.
type testIssuer struct {
	url    string
	signer jose.Signer
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss.url, "jwks_uri": iss.url + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.url = srv.URL
	iss.signer, err = jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

// token signs an access token for audience with scope.
func (i *testIssuer) token(t testing.TB, audience, scope string) string {
	t.Helper()
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"iss": i.url, "sub": "alice", "aud": audience, "scope": scope,
		"client_id": "chatgpt", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := i.signer.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAnExternalIssuersAccessTokenAuthenticates: with [oauth] issuer set,
// the protected resource metadata names the issuer, an access token it
// signed for this resource calls tools within its scopes, and a token for
// another resource, or lacking a tool's scope, is refused with the
// challenge a client follows (invalid_token; insufficient_scope).
func TestAnExternalIssuersAccessTokenAuthenticates(t *testing.T) {
	iss := newTestIssuer(t)
	const public = "https://webcodex.test"
	s := startAppWith(t, t.TempDir(), func(c *app.Config) {
		c.PublicURL = public
		c.OAuth.Issuer = iss.url
	}, "p="+rawProjectDir(t))
	defer s.stop(t)
	resource := public + "/mcp"

	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), s.base+resourcemeta.WellKnownMCP, resource, http.DefaultClient)
	if err != nil || !slices.Equal(prm.AuthorizationServers, []string{iss.url}) {
		t.Fatalf("metadata: %+v %v", prm, err)
	}

	call := func(token, tool string, args any) (int, http.Header, []byte) {
		body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
		return plainDo(t, "POST", s.base+"/api/tools/call", token, body, nil)
	}
	read := iss.token(t, resource, "project:read")
	code, _, body := call(read, "project_overview", map[string]any{"project": "agent:local:p"})
	var r result
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || !r.Success {
		t.Fatalf("a tool call with the issuer's token: HTTP %d %s", code, body)
	}

	code, hdr, body := call(iss.token(t, "https://elsewhere.test/mcp", "project:read"), "project_overview", map[string]any{"project": "agent:local:p"})
	if ch := bearerChallenge(t, hdr); code != http.StatusUnauthorized || ch["error"] != "invalid_token" || errorKind(t, body) != "unauthenticated" {
		t.Fatalf("a token for another resource: HTTP %d %v %s", code, ch, body)
	}

	code, hdr, body = call(read, "write_project_file", map[string]any{"project": "agent:local:p", "path": "x.txt", "content": "x"})
	if ch := bearerChallenge(t, hdr); code != http.StatusForbidden || ch["error"] != "insufficient_scope" || errorKind(t, body) != "insufficient_scope" {
		t.Fatalf("a token lacking the tool's scope: HTTP %d %v %s", code, ch, body)
	}

	// The server's own tokens still authenticate beside the issuer's.
	code, _, body = call(s.token, "project_overview", map[string]any{"project": "agent:local:p"})
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || !r.Success {
		t.Fatalf("a wc_ token with an issuer configured: HTTP %d %s", code, body)
	}
}

// BenchmarkToolCallOAuthVsPAT alternates the same read-only tool call over
// HTTP (REST /api/tools/call: the authentication middleware /mcp uses
// too) authenticated with an external issuer's access token and with a
// wc_pat_ token. The goal: ratio (oauth over pat) at most 1.05 at
// the median, the verification cached.
func BenchmarkToolCallOAuthVsPAT(b *testing.B) {
	iss := newTestIssuer(b)
	const public = "https://webcodex.test"
	s := startAppWith(b, b.TempDir(), func(c *app.Config) {
		c.PublicURL = public
		c.OAuth.Issuer = iss.url
	}, "p="+rawProjectDir(b))
	defer s.stop(b)
	pat, _, err := s.a.Auth.CreateToken(context.Background(), "bench", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"tool": "project_overview", "arguments": map[string]any{"project": "agent:local:p"}})
	call := func(token string) func() {
		return func() {
			req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("HTTP %d", resp.StatusCode)
			}
		}
	}
	benchpair.Run(b, "pat", call(pat), "oauth", call(iss.token(b, public+"/mcp", "project:read")))
}
