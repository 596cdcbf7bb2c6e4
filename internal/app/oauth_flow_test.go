package app_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/webcodex/webcodex/internal/app"
)

// flowRedirect is the redirect URI of the test's OAuth client: a native
// client's loopback callback, never listened on (the browser stand-in
// stops at it and reads the code from it).
const flowRedirect = "http://127.0.0.1:38411/callback"

// browser is a person's browser on the console: it signs in with an API
// token, follows the authorization server's redirects to the consent page
// and submits its form, stopping where it would leave the server.
type browser struct {
	t      testing.TB
	base   string
	client *http.Client
}

func newBrowser(t testing.TB, s *server) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	host := strings.TrimPrefix(s.base, "http://")
	c := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host != host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	b := &browser{t: t, base: s.base, client: c}
	resp := b.post(s.base+"/console/login", url.Values{"token": {s.token}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console sign-in: HTTP %d", resp.StatusCode)
	}
	return b
}

// post submits a form from the server's own page (with its Origin).
func (b *browser) post(u string, form url.Values) *http.Response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consent opens authURL, reads the consent page's form and submits it with
// decision (and project, when set); it returns where the server sent the
// browser.
func (b *browser) consent(authURL, decision, project string) *url.URL {
	b.t.Helper()
	resp, err := b.client.Get(authURL)
	if err != nil {
		b.t.Fatal(err)
	}
	page := readAll(b.t, resp)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/console/oauth/consent" {
		b.t.Fatalf("consent page: HTTP %d at %s: %s", resp.StatusCode, resp.Request.URL, page)
	}
	form := url.Values{"decision": {decision}, "project": {project}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	out := b.post(b.base+"/console/oauth/consent", form)
	loc, err := out.Location()
	if out.StatusCode != http.StatusSeeOther || err != nil {
		b.t.Fatalf("consent decision: HTTP %d, Location %v", out.StatusCode, err)
	}
	return loc
}

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return []byte(sb.String())
}

// TestOAuthFlowWithARealClient: a hosted agent's whole journey, driven by
// the go-sdk's OAuth client (x/oauth2 with PKCE underneath) from the MCP
// endpoint's 401: protected resource metadata, authorization server
// metadata, enrolment (DCR, or a Client ID Metadata Document served over
// TLS), the consent page submitted through the console form, the code
// exchanged, a tools/call with the access token; then a refresh, a
// revocation, and the revoked token answered 401.
func TestOAuthFlowWithARealClient(t *testing.T) {
	for _, enrol := range []string{"dcr", "cimd"} {
		t.Run(enrol, func(t *testing.T) {
			dir := t.TempDir()
			var cimd string
			if enrol == "cimd" {
				cimd = serveClientMetadata(t, dir)
			}
			s := startAppWith(t, dir, func(c *app.Config) {
				c.OAuth.Enabled = true
				if cimd != "" {
					c.OAuth.ClientMetadataPrivate = true
					c.OAuth.ClientMetadataCAFile = filepath.Join(dir, "cimd-ca.pem")
				}
			}, "p="+rawProjectDir(t))
			defer s.stop(t)
			runOAuthFlow(t, s, cimd)
		})
	}
}

func runOAuthFlow(t *testing.T, s *server, cimd string) {
	ctx := context.Background()
	b := newBrowser(t, s)
	var clientID string
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: flowRedirect,
		AuthorizationCodeFetcher: func(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, _ := url.Parse(args.URL)
			clientID = u.Query().Get("client_id")
			loc := b.consent(args.URL, "approve", "")
			q := loc.Query()
			if loc.Scheme+"://"+loc.Host+loc.Path != flowRedirect || q.Get("code") == "" {
				return nil, errors.New("no code in " + loc.String())
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
		RequestRefreshToken: true,
	}
	if cimd != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cimd}
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "Flow test", RedirectURIs: []string{flowRedirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}}
	}
	handler, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "oauth-flow-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.base + "/mcp", OAuthHandler: handler, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect through OAuth: %v", err)
	}
	defer cs.Close()
	if cimd != "" && clientID != cimd || cimd == "" && !strings.HasPrefix(clientID, "wc_client_") {
		t.Fatalf("client id %q (cimd %q)", clientID, cimd)
	}
	if r, _ := callMCP(t, cs, "project_overview", map[string]any{"project": "agent:local:p"}, nil); !r.Success {
		t.Fatalf("tools/call with the access token: %+v", r.Error)
	}

	ts, err := handler.TokenSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := ts.Token()
	if err != nil || first.RefreshToken == "" {
		t.Fatalf("token: %+v %v", first, err)
	}
	// A refresh with x/oauth2: a new pair, and the old access token
	// still works until it expires (rotation spends the refresh token,
	// not the grant).
	oc := &oauth2.Config{ClientID: clientID, Endpoint: oauth2.Endpoint{TokenURL: s.base + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	second, err := oc.TokenSource(ctx, &oauth2.Token{RefreshToken: first.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
	if err != nil || second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Fatalf("refresh: %+v %v", second, err)
	}
	if code := toolStatus(t, s, second.AccessToken); code != http.StatusOK {
		t.Fatalf("the refreshed access token: HTTP %d", code)
	}

	// RFC 7009 revocation of the refreshed access token ends the grant:
	// both access tokens answer 401.
	resp, err := http.PostForm(s.base+"/oauth/revoke", url.Values{"token": {second.AccessToken}, "client_id": {clientID}})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, tok := range []string{second.AccessToken, first.AccessToken} {
		if code := toolStatus(t, s, tok); code != http.StatusUnauthorized {
			t.Fatalf("a revoked grant's access token: HTTP %d", code)
		}
	}
}

// toolStatus is the HTTP status of a read-only tool call with token.
func toolStatus(t *testing.T, s *server, token string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": "project_overview", "arguments": map[string]any{"project": "agent:local:p"}})
	code, _, _ := plainDo(t, "POST", s.base+"/api/tools/call", token, body, nil)
	return code
}

// serveClientMetadata serves a Client ID Metadata Document over TLS on
// loopback and writes the server's certificate to dir/cimd-ca.pem; it
// returns the document's URL (the client id).
func serveClientMetadata(t *testing.T, dir string) string {
	t.Helper()
	var id string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		json.NewEncoder(w).Encode(map[string]any{
			"client_id": id, "client_name": "Flow test (CIMD)", "redirect_uris": []string{"http://127.0.0.1/callback"},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		})
	}))
	t.Cleanup(srv.Close)
	id = srv.URL + "/oauth/client.json"
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "cimd-ca.pem"), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}
