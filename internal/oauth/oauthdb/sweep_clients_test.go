package oauthdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/oauthdb"
)

// TestSweepDeletesClientsNobodyApproved: an unrevoked client without a
// grant is deleted once it is UnusedClientTTL old; a client with a grant,
// a revoked client and a younger client stay.
func TestSweepDeletesClientsNobodyApproved(t *testing.T) {
	ctx := context.Background()
	st, err := oauthdb.Open(ctx, filepath.Join(t.TempDir(), oauthdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	old := now.Add(-authserver.UnusedClientTTL - time.Minute)
	client := func(id string, created time.Time) authserver.Client {
		return authserver.Client{ID: id, Name: id, Enrolment: authserver.EnrolDCR, RedirectURIs: []string{"http://127.0.0.1/cb"},
			AuthMethod: authserver.AuthNone, CreatedAt: created}
	}
	for _, c := range []authserver.Client{client("unused", old), client("young", now.Add(-time.Hour)), client("granted", old), client("revoked", old)} {
		if err := st.PutClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	g := authserver.Grant{ID: "grt_0000000000000001", ClientID: "granted", Owner: "local", Subject: "tok_1", Resource: "http://h/mcp",
		CreatedAt: now, ExpiresAt: now.Add(authserver.GrantTTL)}
	code := authserver.Secret{Hash: "h1", Kind: authserver.KindCode, GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(authserver.CodeTTL)}
	if err := st.CreateGrant(ctx, g, code); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeClient(ctx, "revoked", now); err != nil {
		t.Fatal(err)
	}
	n, err := st.Sweep(ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d rows, %v", n, err)
	}
	if _, err := st.Client(ctx, "unused"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("the unused client after the sweep: %v", err)
	}
	for _, id := range []string{"young", "granted", "revoked"} {
		if _, err := st.Client(ctx, id); err != nil {
			t.Fatalf("client %s after the sweep: %v", id, err)
		}
	}
}
