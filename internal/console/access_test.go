package console_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console"
)

// authDB opens the server's auth.db beside it (WAL: the server keeps
// writing).
func (s *server) authDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.a.Config.DataDir, app.AuthDB)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (s *server) consoleRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := s.authDB(t).QueryRow(`SELECT count(*) FROM console_sessions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLoginRefusesMissingAndWrongTokens(t *testing.T) {
	s := start(t)
	good := s.token(t, "alice")
	revoked := s.token(t, "alice")
	toks, _ := s.a.Auth.ListTokens(context.Background())
	if _, err := s.a.Auth.RevokeToken(context.Background(), toks[len(toks)-1].ID); err != nil {
		t.Fatal(err)
	}
	unknown := auth.TokenPrefix + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for name, tok := range map[string]string{
		"none": "", "spaces": "   ", "malformed": "hello", "unknown": unknown, "revoked": revoked,
		"bootstrap-shaped": strings.Repeat("x", 40),
	} {
		t.Run(name, func(t *testing.T) {
			b := s.browser(t)
			p := b.post("/console/login", url.Values{"token": {tok}})
			if p.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401:\n%s", p.status, p.body)
			}
			if len(b.c.Jar.Cookies(mustURL(t, s.base+"/console/"))) != 0 || p.header.Get("Set-Cookie") != "" {
				t.Fatalf("a refused sign-in set a cookie: %q", p.header.Get("Set-Cookie"))
			}
			if !strings.Contains(p.body, `role="alert"`) {
				t.Errorf("no error shown:\n%s", p.body)
			}
			if strings.Contains(p.body, revoked) || (tok != "" && strings.TrimSpace(tok) != "" && strings.Contains(p.body, tok)) {
				t.Error("the refused token is echoed in the page")
			}
			// Still not signed in.
			if h := b.get("/console/"); h.status != http.StatusSeeOther || !strings.HasPrefix(h.header.Get("Location"), "/console/login") {
				t.Fatalf("home without a session: %d %s", h.status, h.header.Get("Location"))
			}
		})
	}
	if n := s.consoleRows(t); n != 0 {
		t.Fatalf("%d console sessions stored after refused sign-ins", n)
	}
	// The good token signs in: one row, and the cookie's attributes.
	b := s.browser(t)
	p := b.post("/console/login", url.Values{"token": {good}, "next": {"/console/sessions"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/sessions" {
		t.Fatalf("sign-in: %d %q", p.status, p.header.Get("Location"))
	}
	sc := p.header.Get("Set-Cookie")
	for _, want := range []string{console.CookieName + "=" + auth.ConsoleCookiePrefix, "Path=/console", "HttpOnly", "SameSite=Strict", "Max-Age="} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("Secure cookie on plain http to loopback: %q", sc)
	}
	if n := s.consoleRows(t); n != 1 {
		t.Fatalf("%d console sessions after one sign-in", n)
	}
	// Only the hash is stored: the cookie value is nowhere in auth.db.
	value := strings.TrimPrefix(strings.SplitN(sc, ";", 2)[0], console.CookieName+"=")
	var hash string
	if err := s.authDB(t).QueryRow(`SELECT session_hash FROM console_sessions`).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if hash != auth.HashConsoleCookie(value) || strings.Contains(hash, value) {
		t.Fatalf("stored %q for cookie %q", hash, value)
	}
	// An open redirect target is refused.
	b2 := s.browser(t)
	if p := b2.post("/console/login", url.Values{"token": {good}, "next": {"//evil.example/x"}}); p.header.Get("Location") != "/console/" {
		t.Errorf("next=//evil.example redirected to %q", p.header.Get("Location"))
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// withCookie is a browser whose console cookie is value.
func (s *server) withCookie(t *testing.T, value string) *client {
	b := s.browser(t)
	b.c.Jar.SetCookies(mustURL(t, s.base+"/console/"), []*http.Cookie{{Name: console.CookieName, Value: value, Path: "/console"}})
	return b
}

func TestExpiredForgedAndRevokedCookiesSignOut(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "the secret plan")
	random := make([]byte, 32)
	rand.Read(random)
	forged := auth.ConsoleCookiePrefix + base64.RawURLEncoding.EncodeToString(random)

	check := func(t *testing.T, b *client) {
		t.Helper()
		for _, path := range []string{"/console/", "/console/sessions/" + id, "/console/sessions/" + id + "/export"} {
			p := b.get(path)
			if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/login?next=") {
				t.Fatalf("%s: %d %q, want a redirect to the login form", path, p.status, p.header.Get("Location"))
			}
			if strings.Contains(p.body, "secret plan") {
				t.Fatalf("%s leaked the session to a signed-out browser", path)
			}
		}
		// A POST is refused outright (no redirect), nothing posted.
		p := b.post("/console/sessions/"+id+"/messages", url.Values{"kind": {"guidance"}, "message": {"x"}, console.CSRFField: {"x"}})
		if p.status != http.StatusUnauthorized {
			t.Fatalf("POST: %d, want 401", p.status)
		}
	}
	t.Run("forged", func(t *testing.T) { check(t, s.withCookie(t, forged)) })
	t.Run("malformed", func(t *testing.T) { check(t, s.withCookie(t, "wc_con_<script>")) })
	t.Run("expired", func(t *testing.T) {
		b := s.browser(t)
		b.login(tok)
		if _, err := s.authDB(t).Exec(`UPDATE console_sessions SET expires_at = created_at`); err != nil {
			t.Fatal(err)
		}
		check(t, b)
	})
	t.Run("revoked token", func(t *testing.T) {
		tok2 := s.token(t, "alice")
		b := s.browser(t)
		b.login(tok2)
		toks, _ := s.a.Auth.ListTokens(context.Background())
		if _, err := s.a.Auth.RevokeToken(context.Background(), toks[len(toks)-1].ID); err != nil {
			t.Fatal(err)
		}
		check(t, b)
	})
	t.Run("signed out", func(t *testing.T) {
		b := s.browser(t)
		b.login(tok)
		before := s.consoleRows(t)
		// Sign-out needs the CSRF token too.
		if p := b.post("/console/logout", url.Values{}); p.status != http.StatusForbidden {
			t.Fatalf("logout without CSRF: %d", p.status)
		}
		if s.consoleRows(t) != before {
			t.Fatal("a refused logout deleted a session")
		}
		if p := b.post("/console/logout", url.Values{console.CSRFField: {b.csrf}}); p.status != http.StatusSeeOther {
			t.Fatalf("logout: %d %s", p.status, p.body)
		}
		if s.consoleRows(t) != before-1 {
			t.Fatal("logout left the session's row")
		}
		check(t, b)
	})
}

func TestSecurityHeadersAndStaticFiles(t *testing.T) {
	s := start(t)
	b := s.browser(t)
	for _, path := range []string{"/console/login", "/console/static/htmx.min.js", "/console/static/console.css", "/console/nope"} {
		p := b.get(path)
		if got := p.header.Get("Content-Security-Policy"); got != console.ContentSecurityPolicy {
			t.Errorf("%s: CSP %q", path, got)
		}
		if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: frame/nosniff headers %v", path, p.header)
		}
	}
	if !strings.Contains(console.ContentSecurityPolicy, "script-src 'self'") || strings.Contains(console.ContentSecurityPolicy, "unsafe") {
		t.Fatalf("CSP allows more than own scripts: %s", console.ContentSecurityPolicy)
	}
	js := b.get("/console/static/htmx.min.js")
	if js.status != 200 || !strings.Contains(js.header.Get("Content-Type"), "javascript") || !strings.Contains(js.body, "htmx") {
		t.Fatalf("htmx: %d %q", js.status, js.header.Get("Content-Type"))
	}
	ext := b.get("/console/static/idiomorph-ext.min.js")
	if ext.status != 200 || !strings.Contains(ext.body, `defineExtension("morph"`) {
		t.Fatalf("idiomorph extension: %d", ext.status)
	}
	// No page carries an inline script or an inline event handler.
	tok := s.token(t, "alice")
	b.login(tok)
	for _, path := range []string{"/console/login", "/console/", "/console/sessions"} {
		p := b.get(path)
		assertNoInlineScript(t, path, p.body)
	}
}

// assertNoInlineScript fails when body has a script element without src or
// an on* attribute.
func assertNoInlineScript(t *testing.T, what, body string) {
	t.Helper()
	for _, m := range scriptRE.FindAllString(body, -1) {
		if !strings.Contains(m, ` src="/console/static/`) {
			t.Errorf("%s: inline or foreign script %q", what, m)
		}
	}
	if m := handlerRE.FindString(body); m != "" {
		t.Errorf("%s: inline event handler %q", what, m)
	}
}

func TestHostAndOriginProtectionsApply(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	req, _ := http.NewRequest("GET", s.base+"/console/login", nil)
	req.Host = "evil.example"
	if p := s.browser(t).do(req); p.status != http.StatusForbidden {
		t.Fatalf("DNS-rebinding Host: %d", p.status)
	}
	req, _ = http.NewRequest("POST", s.base+"/console/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if p := s.browser(t).do(req); p.status != http.StatusForbidden || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("cross-origin sign-in: %d %q", p.status, p.header.Get("Set-Cookie"))
	}
	if n := s.consoleRows(t); n != 0 {
		t.Fatalf("cross-origin sign-in stored %d sessions", n)
	}
}
