package authdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authdb"
	"github.com/webcodex/webcodex/internal/auth/storetest"
	"github.com/webcodex/webcodex/internal/failure"
)

func mustOpen(t *testing.T, path string) *authdb.Store {
	t.Helper()
	s, err := authdb.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

// openTemp returns a Store on a new file, closed when t ends.
func openTemp(t *testing.T) *authdb.Store {
	t.Helper()
	s := mustOpen(t, filepath.Join(t.TempDir(), authdb.FileName))
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) auth.Store { return openTemp(t) })
}

func TestConsoleContract(t *testing.T) {
	storetest.RunConsole(t, func(t *testing.T) auth.ConsoleStore { return openTemp(t) })
}

func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), authdb.FileName)
	s := mustOpen(t, path)
	svc, err := auth.NewService(s, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, tok, err := svc.CreateToken(ctx, "ci", "team-a", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	revokedRaw, revoked, err := svc.CreateToken(ctx, "old", "team-a", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if _, err := svc.RevokeToken(ctx, revoked.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	svc, err = auth.NewService(s, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, raw)
	if err != nil {
		t.Fatalf("Authenticate after reopen: %v", err)
	}
	want := auth.Principal{Kind: auth.KindAPIToken, ID: tok.ID, Owner: "team-a", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("principal after reopen (-want +got):\n%s", diff)
	}
	if _, err := svc.Authenticate(ctx, revokedRaw); err == nil {
		t.Errorf("revoked token authenticated after reopen")
	}
}

// TestFindByHashSeesAnotherProcessRevocation holds FindByHash's cache to
// the file: a token revoked through a second Store on the same file (as
// `webcodex token revoke` does from another process) is refused by the
// serving process's next authentication, and the revocation a cached
// read would have hidden is there.
func TestFindByHashSeesAnotherProcessRevocation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), authdb.FileName)
	serving, cli := mustOpen(t, path), mustOpen(t, path)
	defer serving.Close()
	defer cli.Close()
	svc, err := auth.NewService(serving, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, tok, err := svc.CreateToken(ctx, "agent", "alice", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second is answered from the cache
		if p, err := svc.Authenticate(ctx, raw); err != nil || p.ID != tok.ID {
			t.Fatalf("Authenticate = %+v, %v; want token %s", p, err, tok.ID)
		}
	}
	cliSvc, err := auth.NewService(cli, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cliSvc.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, raw); !failure.Is(err, failure.Unauthenticated) {
		t.Fatalf("Authenticate after another process revoked the token: %v, want %q", err, failure.Unauthenticated)
	}
	got, err := serving.FindByHash(ctx, auth.HashToken(raw))
	if err != nil || !got.Revoked() {
		t.Fatalf("FindByHash after revocation = %+v, %v; want the revoked token", got, err)
	}
}

// A token written before credential kinds existed (only the columns of
// migrations 0001-0004) reads back as an API token reaching every project
// of its owner, with no expiry.
func TestTokensBeforeKindsAreAPITokens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), authdb.FileName)
	mustOpen(t, path).Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	hash := auth.HashToken(auth.TokenPrefix + strings.Repeat("A", 43))
	if _, err := db.ExecContext(ctx, `INSERT INTO tokens (id, name, owner, scopes, token_hash, created_at, tools, runner)
		VALUES ('tok_00000000000000aa', 'old', 'local', '["project:read"]', ?, 1, '[]', '')`, hash); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := mustOpen(t, path)
	defer s.Close()
	got, err := s.FindByHash(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != auth.KindAPIToken || got.Project != "" || got.ExpiresAt != nil {
		t.Fatalf("old token read back as %+v", got)
	}
}
