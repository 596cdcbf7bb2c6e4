package console_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
)

// server is a real WebCodex server on 127.0.0.1:0 over a fresh data
// directory, with one registered project.
type server struct {
	a       *app.App
	base    string
	project string
	cancel  context.CancelFunc
	done    chan error
}

func start(t testing.TB) *server {
	t.Helper()
	dir := t.TempDir()
	cfg, err := app.LoadConfig(dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	cfg.ShutdownTimeout = app.Duration(5 * time.Second)
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	ps, err := a.RegisterProjects(ctx, []string{proj})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := a.Listen()
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &server{a: a, base: "http://" + addr.String(), project: ps[0].ID, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Serve(sctx) }()
	t.Cleanup(func() {
		s.cancel()
		if err := <-s.done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := s.a.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// token creates an API token of owner with scopes.
func (s *server) token(t testing.TB, owner string, scopes ...auth.Scope) string {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite, auth.ScopeJobRun}
	}
	raw, _, err := s.a.Auth.CreateToken(context.Background(), "console-test", owner, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// call is one REST tool call with token; it fails the test unless the tool
// succeeds, and returns the output.
func (s *server) call(t testing.TB, token, tool string, args any) map[string]json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Success bool                       `json:"success"`
		Output  map[string]json.RawMessage `json:"output"`
		Error   *struct{ Kind, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if !r.Success {
		t.Fatalf("%s: %+v", tool, r.Error)
	}
	return r.Output
}

// callFailing is one REST tool call with token that must fail; it returns
// the error kind.
func (s *server) callFailing(t testing.TB, token, tool string, args any) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	req, _ := http.NewRequest("POST", s.base+"/api/tools/call", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Success bool
		Error   *struct{ Kind, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Success || r.Error == nil {
		t.Fatalf("%s succeeded; it should fail", tool)
	}
	return r.Error.Kind
}

// failingPytest writes a pytest file with one passing and one failing test
// in session and runs it with run_tests: a failed validation run.
func (s *server) failingPytest(t testing.TB, token, session string) {
	t.Helper()
	s.call(t, token, "write_project_file", map[string]any{"project": s.project, "session_id": session, "path": "test_calc.py",
		"content": "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"})
	if kind := s.callFailing(t, token, "run_tests", map[string]any{"project": s.project, "session_id": session, "runner": "pytest", "purpose": "unit tests"}); kind != "validation_failed" {
		t.Fatalf("run_tests: %s, want validation_failed", kind)
	}
}

// startSession starts a Workflow Session for token with instruction
// (its title is derived from it).
func (s *server) startSession(t testing.TB, token, instruction string) string {
	t.Helper()
	out := s.call(t, token, "work_on_project", map[string]any{"project": s.project, "instruction": instruction})
	var id string
	if err := json.Unmarshal(out["session_id"], &id); err != nil {
		t.Fatalf("session_id: %s", out["session_id"])
	}
	return id
}

// client is an HTTP client with a cookie jar that does not follow
// redirects (so each answer can be checked).
type client struct {
	t    testing.TB
	s    *server
	c    *http.Client
	csrf string
}

func (s *server) browser(t testing.TB) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &client{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// sessionPage logs a new browser in with tok and gets the page of
// session id, which must answer 200; it returns the browser and the page.
func (s *server) sessionPage(t testing.TB, tok, id string) (*client, page) {
	t.Helper()
	b := s.browser(t)
	b.login(tok)
	p := b.get("/console/sessions/" + id)
	if p.status != http.StatusOK {
		t.Fatalf("session page: %d", p.status)
	}
	return b, p
}

// page is one answer: status, headers and body.
type page struct {
	status int
	header http.Header
	body   string
}

func (b *client) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	p := page{status: resp.StatusCode, header: resp.Header, body: string(body)}
	if m := csrfRE.FindStringSubmatch(p.body); m != nil {
		b.csrf = m[1]
	}
	return p
}

var csrfRE = regexp.MustCompile(`name="` + console.CSRFField + `" value="([^"]+)"`)

// withoutCSRF is the body with every CSRF token's value replaced by
// "CSRF": the token is random base64url, so it spells any short word now
// and then ("two", "bob"), and a check that a page leaks no such word
// must not read it.
func (p page) withoutCSRF() string {
	return csrfRE.ReplaceAllString(p.body, `name="`+console.CSRFField+`" value="CSRF"`)
}

func (b *client) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.s.base+path, nil)
	return b.do(req)
}

func (b *client) post(path string, form url.Values) page {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.s.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// login signs in with token and fails the test unless it works.
func (b *client) login(token string) {
	b.t.Helper()
	p := b.post("/console/login", url.Values{"token": {token}})
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("login: %d %s", p.status, p.body)
	}
	home := b.get("/console/")
	if home.status == http.StatusSeeOther {
		b.t.Fatalf("home after login sent back to %s", home.header.Get("Location"))
	}
	if b.csrf == "" {
		b.t.Fatal("no CSRF token on the home page")
	}
}

var (
	scriptRE  = regexp.MustCompile(`(?i)<script\b[^>]*>`)
	handlerRE = regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=`)
)
