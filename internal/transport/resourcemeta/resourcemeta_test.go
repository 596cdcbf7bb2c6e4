package resourcemeta

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct{ base, resource, metadata string }{
		{"https://WebCodex.Example/", "https://webcodex.example/mcp", "https://webcodex.example/.well-known/oauth-protected-resource/mcp"},
		{"HTTP://127.0.0.1:8080", "http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
		{"https://h.example/base//", "https://h.example/base/mcp", "https://h.example/base/.well-known/oauth-protected-resource/mcp"},
		{"https://h.example/A%20b", "https://h.example/A%20b/mcp", "https://h.example/A%20b/.well-known/oauth-protected-resource/mcp"},
	} {
		r, err := For(tc.base)
		if err != nil || r.URL != tc.resource || r.MetadataURL != tc.metadata {
			t.Errorf("For(%q) = %+v, %v", tc.base, r, err)
		}
	}
	for _, bad := range []string{"", "webcodex.example", "ftp://h.example", "https://", "https://u:p@h.example", "https://h.example/?a=1", "https://h.example/#f", "://x"} {
		if r, err := For(bad); !failure.Is(err, failure.InvalidArguments) || r != (Resource{}) {
			t.Errorf("For(%q) = %+v, %v", bad, r, err)
		}
	}
}

// TestServe: the metadata round-trips through the go-sdk's client check
// with the issuers configured, HEAD has no body, a preflight may be
// cached CORSMaxAgeSeconds, and a Resource without URL is not mounted.
func TestServe(t *testing.T) {
	m := httpserver.NewMux(httpserver.Options{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := For(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	issuers := []string{"https://issuer.example"}
	if err := Register(m, Options{Resource: res, AuthorizationServers: issuers, Scopes: auth.ResourceScopes}); err != nil {
		t.Fatal(err)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), res.MetadataURL, res.URL, srv.Client())
	if err != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != issuers[0] || len(prm.ScopesSupported) != len(auth.ResourceScopes) {
		t.Fatalf("metadata: %+v %v", prm, err)
	}
	resp, err := srv.Client().Head(res.MetadataURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("HEAD: %d %q", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+WellKnown, nil)
	req.Header.Set("Origin", "https://elsewhere.example")
	req.Header.Set("Access-Control-Request-Method", "GET")
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Max-Age") != strconv.Itoa(CORSMaxAgeSeconds) || CORSMaxAgeSeconds != 600 {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if err := Register(httpserver.NewMux(httpserver.Options{}), Options{}); err == nil {
		t.Fatal("a metadata document without resource was mounted")
	}
}
