package auth_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// consoleEnv is newEnv with the store as the console store.
func consoleEnv(t *testing.T, opts auth.Options) *env {
	t.Helper()
	e := newEnv(t, opts)
	o := opts
	o.Now, o.Consoles = e.clock.Now, e.store
	svc, err := auth.NewService(e.store, o)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	return e
}

func TestConsoleSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	e := consoleEnv(t, auth.Options{Bootstrap: strings.Repeat("b", 32)})
	raw, tok, err := e.svc.CreateToken(ctx, "console", "alice", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.svc.LoginConsole(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in.Cookie, auth.ConsoleCookiePrefix) || in.Principal.ID != tok.ID ||
		!in.ExpiresAt.Equal(e.clock.Now().Add(auth.ConsoleSessionTTL)) {
		t.Fatalf("login %+v", in)
	}
	p, err := e.svc.ConsolePrincipal(ctx, in.Cookie)
	if err != nil || p.Owner != "alice" || p.ID != tok.ID || !p.Has(auth.ScopeProjectRead) || p.Has(auth.ScopeProjectWrite) {
		t.Fatalf("principal %+v, %v", p, err)
	}
	// Neither the cookie nor the token reaches the database.
	db := e.dbBytes(t)
	if bytes.Contains(db, []byte(in.Cookie)) || bytes.Contains(db, []byte(raw)) {
		t.Fatal("a raw credential is in auth.db")
	}
	// One nanosecond before expiry it holds; at expiry it does not.
	e.clock.Advance(auth.ConsoleSessionTTL - time.Nanosecond)
	if _, err := e.svc.ConsolePrincipal(ctx, in.Cookie); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	e.clock.Advance(time.Nanosecond)
	_, err = e.svc.ConsolePrincipal(ctx, in.Cookie)
	wantKind(t, "at expiry", err, failure.Unauthenticated)

	// A new sign-in sweeps the expired row.
	in2, err := e.svc.LoginConsole(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.FindConsole(ctx, auth.HashConsoleCookie(in.Cookie)); !failure.Is(err, failure.NotFound) {
		t.Fatalf("expired row kept: %v", err)
	}
	// Revoking the token ends the console session.
	if _, err := e.svc.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ConsolePrincipal(ctx, in2.Cookie)
	wantKind(t, "revoked token", err, failure.Unauthenticated)

	// Logout deletes the row; an unknown or malformed cookie is no error.
	raw3, _, _ := e.svc.CreateToken(ctx, "console", "alice", []auth.Scope{auth.ScopeProjectRead})
	in3, err := e.svc.LoginConsole(ctx, raw3)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.LogoutConsole(ctx, in3.Cookie); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ConsolePrincipal(ctx, in3.Cookie)
	wantKind(t, "signed out", err, failure.Unauthenticated)
	for _, c := range []string{"", "x", auth.ConsoleCookiePrefix + "short", in3.Cookie + "x"} {
		if err := e.svc.LogoutConsole(ctx, c); err != nil {
			t.Errorf("logout %q: %v", c, err)
		}
		_, err := e.svc.ConsolePrincipal(ctx, c)
		wantKind(t, "cookie "+c, err, failure.Unauthenticated)
	}
}

func TestConsoleLoginRefusals(t *testing.T) {
	ctx := context.Background()
	boot := strings.Repeat("b", 32)
	e := consoleEnv(t, auth.Options{Bootstrap: boot})
	for name, raw := range map[string]string{"empty": "", "malformed": "nope", "bootstrap": boot,
		"unknown": auth.TokenPrefix + strings.Repeat("A", 43)} {
		_, err := e.svc.LoginConsole(ctx, raw)
		wantKind(t, name, err, failure.Unauthenticated)
	}
	// Without a console store sign-in is unavailable, not a success.
	plain := newEnv(t, auth.Options{})
	raw, _, _ := plain.svc.CreateToken(ctx, "console", "alice", []auth.Scope{auth.ScopeProjectRead})
	_, err := plain.svc.LoginConsole(ctx, raw)
	wantKind(t, "no console store", err, failure.Unavailable)
}

func TestConsoleCSRF(t *testing.T) {
	a, b := auth.ConsoleCookiePrefix+strings.Repeat("a", 43), auth.ConsoleCookiePrefix+strings.Repeat("b", 43)
	if auth.ConsoleCSRF(a) == auth.ConsoleCSRF(b) || auth.ConsoleCSRF(a) != auth.ConsoleCSRF(a) {
		t.Fatal("the CSRF token is not a function of the cookie")
	}
	if !auth.CheckConsoleCSRF(a, auth.ConsoleCSRF(a)) || auth.CheckConsoleCSRF(a, auth.ConsoleCSRF(b)) || auth.CheckConsoleCSRF(a, "") {
		t.Fatal("CheckConsoleCSRF")
	}
	if strings.Contains(auth.ConsoleCSRF(a), strings.Repeat("a", 8)) {
		t.Fatal("the CSRF token shows the cookie")
	}
}
