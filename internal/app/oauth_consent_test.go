package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
)

// TestOAuthDiscovery: the protected resource metadata names the built-in
// server; its metadata is at both well-known paths with the profile's
// fields; the metadata and the token endpoint answer a CORS preflight
// that carries MCP-Protocol-Version.
func TestOAuthDiscovery(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	ctx := context.Background()
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, s.base+resourcemeta.WellKnownMCP, s.base+"/mcp", http.DefaultClient)
	if err != nil || !slices.Equal(prm.AuthorizationServers, []string{s.base}) || slices.Contains(prm.ScopesSupported, authserver.OfflineAccess) {
		t.Fatalf("resource metadata: %+v %v", prm, err)
	}
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		asm, err := oauthex.GetAuthServerMeta(ctx, s.base+p, s.base, http.DefaultClient)
		if err != nil || asm.Issuer != s.base || !slices.Equal(asm.CodeChallengeMethodsSupported, []string{"S256"}) ||
			!asm.ClientIDMetadataDocumentSupported || !asm.AuthorizationResponseIssParameterSupported ||
			asm.TokenEndpointAuthMethodsSupported[0] != "none" || asm.RegistrationEndpoint != s.base+authserver.RegisterPath ||
			!slices.Contains(asm.ScopesSupported, authserver.OfflineAccess) {
			t.Fatalf("%s: %+v %v", p, asm, err)
		}
	}
	for _, p := range []string{"/.well-known/oauth-authorization-server", authserver.TokenPath, authserver.RegisterPath} {
		req, _ := http.NewRequest(http.MethodOptions, s.base+p, nil)
		req.Header.Set("Origin", "https://inspector.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "mcp-protocol-version, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "MCP-Protocol-Version") {
			t.Fatalf("preflight %s: HTTP %d %v", p, resp.StatusCode, resp.Header)
		}
	}
}

// TestOAuthConsentPage: the page names the client, where the browser
// returns and the scopes; a denial returns access_denied with state and
// iss and issues nothing; an approval bound to a project that is not the
// person's is refused and issues nothing.
func TestOAuthConsentPage(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	u := authorizeURL(s, client, verifier, url.Values{"scope": {"project:read job:run"}})
	resp, err := b.client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page := string(readAll(t, resp))
	for _, want := range []string{"attack test", "127.0.0.1:38411", "a program on this computer", "project:read", "job:run", "agent:local:p"} {
		if !strings.Contains(page, want) {
			t.Errorf("the consent page does not show %q", want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1:38411") {
		t.Errorf("the consent page's policy does not let the form return to the client: %q", csp)
	}

	loc := b.consent(u, "deny", "")
	if q := loc.Query(); q.Get("error") != "access_denied" || q.Get("state") != "st-1" || q.Get("iss") != s.base || q.Get("code") != "" {
		t.Fatalf("deny: %v", loc)
	}
	resp, err = b.client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	page = string(readAll(t, resp))
	form := url.Values{"decision": {"approve"}, "project": {"agent:local:elsewhere"}}
	for _, m := range hiddenInput.FindAllStringSubmatch(page, -1) {
		form.Set(m[1], strings.ReplaceAll(m[2], "&amp;", "&"))
	}
	if r := b.post(s.base+"/console/oauth/consent", form); r.StatusCode != http.StatusBadRequest || r.Header.Get("Location") != "" {
		t.Fatalf("approve for a project that is not the person's: HTTP %d %q", r.StatusCode, r.Header.Get("Location"))
	}

	// An approval grants what was asked; a tool beyond it is a 403
	// step-up naming every scope that tool needs.
	code := b.consent(u, "approve", "").Query().Get("code")
	st, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	if st != http.StatusOK || tok["scope"] != "project:read job:run" {
		t.Fatalf("token: HTTP %d %v", st, tok)
	}
	body, _ := json.Marshal(map[string]any{"tool": "write_project_file", "arguments": map[string]any{"project": "agent:local:p", "path": "x.txt", "content": "x"}})
	code2, hdr, out := plainDo(t, "POST", s.base+"/api/tools/call", tok["access_token"].(string), body, nil)
	if ch := bearerChallenge(t, hdr); code2 != http.StatusForbidden || ch["error"] != "insufficient_scope" || !strings.Contains(ch["scope"], "project:write") ||
		errorKind(t, out) != "insufficient_scope" {
		t.Fatalf("a tool beyond the grant: HTTP %d %v %s", code2, ch, out)
	}
}

// TestOAuthGrantBoundToOneProject: a person who approves for one project
// gives the client that project only: another is refused
// (permission_denied) and recorded nowhere.
func TestOAuthGrantBoundToOneProject(t *testing.T) {
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.OAuth.Enabled = true }, "p="+rawProjectDir(t), "q="+rawProjectDir(t))
	defer s.stop(t)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	code := b.consent(authorizeURL(s, client, verifier, nil), "approve", "agent:local:p").Query().Get("code")
	st, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	if st != http.StatusOK {
		t.Fatalf("token: HTTP %d %v", st, tok)
	}
	access := tok["access_token"].(string)
	if c := toolStatus(t, s, access); c != http.StatusOK {
		t.Fatalf("the bound project: HTTP %d", c)
	}
	body, _ := json.Marshal(map[string]any{"tool": "project_overview", "arguments": map[string]any{"project": "agent:local:q"}})
	_, _, out := plainDo(t, "POST", s.base+"/api/tools/call", access, body, nil)
	if k := errorKind(t, out); k != "permission_denied" {
		t.Fatalf("another project with a grant bound to one: %s", out)
	}
}

// TestOAuthClientsOnTheConsole: the console lists the enrolled clients and
// revokes one with its CSRF-protected form, which ends its tokens; a
// person without account:manage sees neither.
func TestOAuthClientsOnTheConsole(t *testing.T) {
	s := oauthServer(t, nil)
	defer s.stop(t)
	b := newBrowser(t, s)
	client := register(t, s, flowRedirect)
	verifier := oauth2.GenerateVerifier()
	code := b.consent(authorizeURL(s, client, verifier, nil), "approve", "").Query().Get("code")
	_, tok := exchange(t, s, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {flowRedirect},
		"client_id": {client}, "code_verifier": {verifier}})
	access := tok["access_token"].(string)

	resp, err := b.client.Get(s.base + "/console/oauth/clients")
	if err != nil {
		t.Fatal(err)
	}
	page := string(readAll(t, resp))
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, client) || !strings.Contains(page, "attack test") || !strings.Contains(page, "127.0.0.1:38411") {
		t.Fatalf("clients page: HTTP %d\n%s", resp.StatusCode, page)
	}
	csrf := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	if r := b.post(s.base+"/console/oauth/clients/revoke", url.Values{"client_id": {client}}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("revoke without CSRF: HTTP %d", r.StatusCode)
	}
	if toolStatus(t, s, access) != http.StatusOK {
		t.Fatal("a refused revocation ended the client's token")
	}
	// The browser follows the answer back to the list.
	if r := b.post(s.base+"/console/oauth/clients/revoke", url.Values{"client_id": {client}, "csrf_token": {csrf[1]}}); r.StatusCode != http.StatusOK ||
		r.Request.URL.Path != "/console/oauth/clients" || r.Request.URL.Query().Get("revoked") != client {
		t.Fatalf("revoke: HTTP %d at %s", r.StatusCode, r.Request.URL)
	}
	if toolStatus(t, s, access) != http.StatusUnauthorized {
		t.Fatal("a revoked client's access token still works")
	}

	reader, _, err := s.a.Auth.CreateToken(context.Background(), "reader", "local", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	rb := newBrowser(t, &server{base: s.base, token: reader})
	resp, err = rb.client.Get(s.base + "/console/oauth/clients")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), client) {
		t.Fatalf("clients page without account:manage: HTTP %d", resp.StatusCode)
	}
}
