package oauthdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/authserver/storetest"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
)

func mustOpen(t *testing.T, path string) *oauthdb.Store {
	t.Helper()
	s, err := oauthdb.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) authserver.Store {
		s := mustOpen(t, filepath.Join(t.TempDir(), oauthdb.FileName))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	})
}

var at = time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)

// fixture stores a client with a redeemed code (an access and a refresh
// token issued) and a second, revoked client, and returns what it stored.
func fixture(t *testing.T, s authserver.Store) (authserver.Client, authserver.Grant, []authserver.Secret) {
	t.Helper()
	ctx := context.Background()
	c := authserver.Client{ID: "wc_client_0000000000000001", Name: "codex", Enrolment: authserver.EnrolDCR,
		RedirectURIs: []string{"http://127.0.0.1/cb"}, AuthMethod: authserver.AuthNone, CreatedAt: at}
	gone := authserver.Client{ID: "https://gone.example/client.json", Name: "gone", Enrolment: authserver.EnrolCIMD,
		RedirectURIs: []string{"https://gone.example/cb"}, AuthMethod: authserver.AuthNone, CreatedAt: at.Add(time.Second),
		FetchedAt: at, FreshUntil: at.Add(time.Hour)}
	g := authserver.Grant{ID: "grt_0000000000000001", ClientID: c.ID, Owner: "alice", Subject: "console_1",
		Scopes: []auth.Scope{auth.ScopeProjectRead}, Resource: "https://wc.example/mcp", CreatedAt: at, ExpiresAt: at.Add(authserver.GrantTTL)}
	code := authserver.Secret{Hash: authserver.HashSecret("code"), Kind: authserver.KindCode, GrantID: g.ID, CreatedAt: at,
		ExpiresAt: at.Add(authserver.CodeTTL), Challenge: "challenge", RedirectURI: "http://127.0.0.1:5555/cb"}
	issued := []authserver.Secret{
		{Hash: authserver.HashSecret("access"), Kind: authserver.KindAccess, GrantID: g.ID, CreatedAt: at, ExpiresAt: at.Add(authserver.AccessTTL)},
		{Hash: authserver.HashSecret("refresh"), Kind: authserver.KindRefresh, GrantID: g.ID, CreatedAt: at, ExpiresAt: at.Add(authserver.RefreshTTL)},
	}
	for _, cl := range []authserver.Client{c, gone} {
		if err := s.PutClient(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateGrant(ctx, g, code); err != nil {
		t.Fatal(err)
	}
	used := at.Add(time.Second)
	if err := s.Redeem(ctx, code.Hash, used, issued); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeClient(ctx, gone.ID, used); err != nil {
		t.Fatal(err)
	}
	code.UsedAt = &used
	gone.RevokedAt = &used
	return c, g, append([]authserver.Secret{code}, issued...)
}

// TestPersistsAcrossReopen: what was committed is there, unchanged, when
// the file is opened again.
func TestPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), oauthdb.FileName)
	s := mustOpen(t, path)
	c, g, secs := fixture(t, s)
	before, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, path)
	defer s.Close()
	after, err := s.Clients(ctx)
	if err != nil {
		t.Fatalf("Clients after reopen: %v", err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("Clients after reopen (-before +after):\n%s", diff)
	}
	if len(after) != 2 || after[0].ID != c.ID || !after[1].Revoked() {
		t.Errorf("Clients after reopen = %+v; want %s, then the revoked one", after, c.ID)
	}
	for _, want := range secs {
		sec, gg, err := s.Find(ctx, want.Hash)
		if err != nil {
			t.Fatalf("Find %s after reopen: %v", want.Kind, err)
		}
		if diff := cmp.Diff(want, sec); diff != "" {
			t.Errorf("%s after reopen (-want +got):\n%s", want.Kind, diff)
		}
		if diff := cmp.Diff(g, gg); diff != "" {
			t.Errorf("grant after reopen (-want +got):\n%s", diff)
		}
	}
}

// TestFindSeesAnotherStoreRevocation holds Find's read cache to the file:
// a grant revoked through a second Store on the same file (as `webcodex
// oauth clients revoke` does from another process) is seen revoked by the
// serving Store's next Find.
func TestFindSeesAnotherStoreRevocation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), oauthdb.FileName)
	serving, cli := mustOpen(t, path), mustOpen(t, path)
	defer serving.Close()
	defer cli.Close()
	c, _, secs := fixture(t, serving)
	access := secs[1].Hash
	for range 2 { // the second is answered from the cache
		if _, g, err := serving.Find(ctx, access); err != nil || g.Revoked() {
			t.Fatalf("Find = %+v, %v; want the live grant", g, err)
		}
	}
	revoked := at.Add(time.Hour)
	if _, err := cli.RevokeClient(ctx, c.ID, revoked); err != nil {
		t.Fatal(err)
	}
	_, g, err := serving.Find(ctx, access)
	if err != nil || g.RevokedAt == nil || !g.RevokedAt.Equal(revoked) {
		t.Fatalf("Find after another Store revoked the client = %+v, %v; want revoked at %v", g, err, revoked)
	}
}
