package authserver_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// TestStoreUnavailable: when the store cannot be read or written (here:
// closed), every operation says so in its own terms (temporarily
// unavailable, or failure.Unavailable for Authenticate), issues nothing
// and never redirects a client it could not look up; a failed sweep is
// logged.
func TestStoreUnavailable(t *testing.T) {
	docs := &fakeDocs{ttl: time.Hour}
	e := newEnvDocs(t, docs)
	docs.now = func() time.Time { return e.now }
	var logs bytes.Buffer
	svc, err := authserver.New(authserver.Options{Issuer: issuer, Resource: resource, Store: e.store, Documents: docs,
		Now: func() time.Time { return e.now }, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	reg := e.public()
	tr := e.tokens(reg, cliRedirect)
	r := e.authorize(request(reg.Client.ID, cliRedirect))
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	e.closed = true

	if p, err := svc.Authenticate(e.ctx, tr.AccessToken); !failure.Is(err, failure.Unavailable) {
		t.Errorf("Authenticate = %+v, %v; want %q", p, err, failure.Unavailable)
	}
	for _, id := range []string{reg.Client.ID, cimdID} {
		r, err := svc.Authorize(e.ctx, request(id, cliRedirect).q)
		wantCode(t, "Authorize of "+id, err, authserver.ErrTemporarilyUnavailable)
		if r.RedirectURI != "" {
			t.Errorf("Authorize of %s: a client not looked up came with a Request %+v", id, r)
		}
	}
	to, err := svc.Approve(e.ctx, r, authserver.Approval{Approver: auth.Principal{Owner: "alice", Scopes: auth.ResourceScopes}})
	wantCode(t, "Approve", err, authserver.ErrTemporarilyUnavailable)
	if to != "" {
		t.Errorf("Approve returned %q", to)
	}
	got, err := e.refresh(creds(reg), tr.RefreshToken, "")
	wantCode(t, "refresh", err, authserver.ErrTemporarilyUnavailable)
	if got != (authserver.TokenResponse{}) {
		t.Errorf("refresh issued %+v", got)
	}
	wantCode(t, "Revoke", svc.Revoke(e.ctx, creds(reg), tr.AccessToken), authserver.ErrTemporarilyUnavailable)
	reg2, err := svc.Register(e.ctx, oauthex.ClientRegistrationMetadata{RedirectURIs: []string{cliRedirect}})
	wantCode(t, "Register", err, authserver.ErrTemporarilyUnavailable)
	if reg2.Client.ID != "" || reg2.Secret != "" {
		t.Errorf("Register returned %+v", reg2)
	}
	if !strings.Contains(logs.String(), "oauth: sweep failed") {
		t.Errorf("Register's failed sweep was not logged: %q", logs.String())
	}
	if len(docs.fetches) != 0 {
		t.Errorf("a client the store could not look up was fetched: %q", docs.fetches)
	}
}
