package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
)

// TestOAuthClientsCommands: list and revoke the built-in authorization
// server's clients offline; a data directory it never ran on says so and
// gains no oauth.db.
func TestOAuthClientsCommands(t *testing.T) {
	data := t.TempDir()
	if _, err := run(t, "--data-dir", data, "oauth", "clients", "list"); err == nil || !strings.Contains(err.Error(), "serve --oauth") {
		t.Fatalf("list without oauth.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, oauthdb.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an oauth command created oauth.db: %v", err)
	}
	ctx := context.Background()
	st, err := oauthdb.Open(ctx, filepath.Join(data, oauthdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	c := authserver.Client{ID: "wc_client_0123456789abcdef", Name: "Codex", Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"http://127.0.0.1/callback/x", "http://127.0.0.1/callback/y"}, AuthMethod: authserver.AuthNone, CreatedAt: time.Now()}
	if err := st.PutClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out := mustRun(t, "--data-dir", data, "oauth", "clients", "list")
	if !strings.Contains(out, c.ID) || !strings.Contains(out, "Codex") || !strings.Contains(out, "active") || strings.Count(out, "127.0.0.1") != 1 {
		t.Fatalf("list:\n%s", out)
	}
	if _, err := run(t, "--data-dir", data, "oauth", "clients", "revoke", "wc_client_ffffffffffffffff"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("revoke an unknown client: %v", err)
	}
	mustRun(t, "--data-dir", data, "oauth", "clients", "revoke", c.ID)
	if out := mustRun(t, "--data-dir", data, "oauth", "clients", "list", "--json"); !strings.Contains(out, `"revoked_at"`) {
		t.Fatalf("list --json after revoke:\n%s", out)
	}
}
