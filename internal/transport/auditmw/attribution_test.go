package auditmw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// principals is the test's credential table: the true edge between the
// HTTP stack and whatever authenticates (wc_pat_ tokens, the built-in
// authorization server's access tokens).
type principals map[string]auth.Principal

func (p principals) Authenticate(_ context.Context, raw string) (auth.Principal, error) {
	if pr, ok := p[raw]; ok {
		return pr, nil
	}
	return auth.Principal{}, failure.New(failure.Unauthenticated, "unknown credential")
}

// TestAttributionByKindAndClient records calls of an OAuth client's
// token, a project credential and an API token through the middleware on
// a real HTTP server and a real audit.db: /api/audit/stats reports them
// by credential kind and by OAuth client (named by the service's lookup),
// while the session event views carry no attribution at all.
func TestAttributionByKindAndClient(t *testing.T) {
	ctx := context.Background()
	st, err := auditdb.Open(ctx, filepath.Join(t.TempDir(), auditdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	svc := audit.NewService(st, nil)
	svc.Start(nil)
	t.Cleanup(func() {
		svc.Stop(ctx)
		st.Close()
	})
	var asked []string
	svc.NameClients(func(_ context.Context, ids []string) map[string]string {
		asked = append(asked, ids...)
		return map[string]string{"client-claude": "Claude"}
	})

	creds := principals{
		"claude":   {Kind: "oauth2", ID: "at1", Owner: "alice", Scopes: []auth.Scope{auth.ScopeProjectRead}, OAuthClientID: "client-claude"},
		"codex":    {Kind: "oauth2", ID: "at2", Owner: "alice", Scopes: []auth.Scope{auth.ScopeProjectRead}, OAuthClientID: "client-codex"},
		"share":    {Kind: auth.KindProjectCredential, ID: "tok_1", Owner: "local", Scopes: auth.ProjectScopes, Project: "agent:local:p"},
		"operator": {Kind: auth.KindAPIToken, ID: "tok_2", Owner: "local", Scopes: []auth.Scope{auth.ScopeAccountManage}},
	}
	mux := httpserver.NewMux(httpserver.Options{Auth: creds, LoopbackOnly: true})
	mw := &auditmw.Middleware{Audit: svc}
	mux.Authenticated("POST /api/tools/call", mw.Wrap(auditmw.OpToolsCall, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"success": true})
	})))
	mw.RegisterOperator(mux)
	srv := httptest.NewServer(mux.Handler())
	defer srv.Close()

	post := func(token, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", path, resp.StatusCode, data)
		}
		return data
	}
	for _, who := range []string{"claude", "claude", "codex", "share", "operator"} {
		post(who, "/api/tools/call", `{"tool":"read_files","arguments":{}}`)
	}

	var stats audit.Stats
	if err := json.Unmarshal(post("operator", "/api/audit/stats", `{}`), &stats); err != nil {
		t.Fatal(err)
	}
	want := audit.AttributionStats{
		ByPrincipalKind: map[string]int64{"oauth2": 3, "project-credential": 1, "api_token": 1},
		AttributedCount: 5,
		ByOAuthClient:   []audit.OAuthClientUsage{{ClientID: "client-claude", Name: "Claude", Count: 2}, {ClientID: "client-codex", Count: 1}},
	}
	if diff := cmp.Diff(want, stats.Attribution); diff != "" {
		t.Fatalf("attribution (-want +got):\n%s", diff)
	}
	if !cmp.Equal(asked, []string{"client-claude", "client-codex"}) {
		t.Errorf("the name lookup was asked for %v", asked)
	}

	// The ordinary event views: no principal, user or client field, and
	// none of the attributed values.
	var list struct{ Sessions []audit.Session }
	json.Unmarshal(post("operator", "/api/audit/sessions", `{}`), &list)
	if len(list.Sessions) != 2 { // alice's and local's
		t.Fatalf("%d audit sessions, want 2", len(list.Sessions))
	}
	for _, s := range list.Sessions {
		body := post("operator", "/api/audit/session", `{"session_id":"`+s.SessionID+`"}`)
		for _, leak := range []string{"principal", "oauth", "client", "project-credential", "oauth2", "alice"} {
			if bytes.Contains(body, []byte(leak)) {
				t.Errorf("session view of %s shows %q:\n%s", s.SessionID, leak, body)
			}
		}
	}

	// Without a lookup the names stay empty.
	svc.NameClients(nil)
	json.Unmarshal(post("operator", "/api/audit/stats", `{}`), &stats)
	if len(stats.Attribution.ByOAuthClient) != 2 || stats.Attribution.ByOAuthClient[0].Name != "" {
		t.Fatalf("by_oauth_client without a lookup: %+v", stats.Attribution.ByOAuthClient)
	}
}
