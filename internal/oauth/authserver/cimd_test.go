package authserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// fakeDocs stands in for the Client ID Metadata Document fetcher (a true
// edge: it reaches the network; clientmeta tests the real one). It serves
// doc for every id, fresh for ttl after the env's clock, and counts its
// fetches.
type fakeDocs struct {
	now     func() time.Time
	doc     clientmeta.Document
	ttl     time.Duration
	err     error
	fetches []string
}

func (f *fakeDocs) Fetch(_ context.Context, id string) (clientmeta.Document, time.Time, error) {
	f.fetches = append(f.fetches, id)
	if f.err != nil {
		return clientmeta.Document{}, time.Time{}, f.err
	}
	return f.doc, f.now().Add(f.ttl), nil
}

const cimdID = "https://claude.example/oauth/client.json"

func newCIMDEnv(t *testing.T) (*env, *fakeDocs) {
	docs := &fakeDocs{ttl: time.Hour, doc: clientmeta.Document{
		ClientName: "Claude", RedirectURIs: []string{"https://claude.example/cb", "https://claude.example/cb2"}}}
	e := newEnvDocs(t, docs)
	docs.now = func() time.Time { return e.now }
	return e, docs
}

// TestCIMDCache: the first request fetches the document and enrols the
// client; one within FreshUntil does not fetch; one at or after
// FreshUntil fetches again and takes the new document.
func TestCIMDCache(t *testing.T) {
	e, docs := newCIMDEnv(t)
	if !e.svc.Metadata().ClientIDMetadataDocumentSupported {
		t.Error("metadata does not advertise CIMD although the server fetches documents")
	}
	r := e.authorize(request(cimdID, "https://claude.example/cb"))
	if len(docs.fetches) != 1 || docs.fetches[0] != cimdID {
		t.Fatalf("fetches = %q, want one of %s", docs.fetches, cimdID)
	}
	if r.Client.ID != cimdID || r.Client.Name != "Claude" || r.Client.Enrolment != authserver.EnrolCIMD || r.Client.AuthMethod != authserver.AuthNone {
		t.Errorf("Authorize's client = %+v", r.Client)
	}
	c, err := e.store.Client(e.ctx, cimdID)
	if err != nil {
		t.Fatalf("the CIMD client was not stored: %v", err)
	}
	created := c.CreatedAt
	if !c.FetchedAt.Equal(t0) || !c.FreshUntil.Equal(t0.Add(time.Hour)) {
		t.Errorf("stored cache times %v, %v; want %v, %v", c.FetchedAt, c.FreshUntil, t0, t0.Add(time.Hour))
	}

	e.advance(time.Hour - time.Nanosecond)
	e.authorize(request(cimdID, "https://claude.example/cb2"))
	if len(docs.fetches) != 1 {
		t.Errorf("a request within FreshUntil fetched again: %d fetches", len(docs.fetches))
	}
	// The client's tokens work without a fetch.
	reg := authserver.Registration{Client: r.Client}
	tr := e.tokens(reg, "https://claude.example/cb")
	e.live(tr.AccessToken)
	if len(docs.fetches) != 1 {
		t.Errorf("the code flow fetched the document again: %d fetches", len(docs.fetches))
	}

	e.advance(time.Nanosecond)
	docs.doc.ClientName, docs.doc.RedirectURIs = "Claude 2", []string{"https://claude.example/new"}
	r = e.authorize(request(cimdID, "https://claude.example/new"))
	if len(docs.fetches) != 2 || r.Client.Name != "Claude 2" {
		t.Errorf("at FreshUntil: %d fetches, client %+v; want a second fetch and the new document", len(docs.fetches), r.Client)
	}
	if c, err := e.store.Client(e.ctx, cimdID); err != nil || !c.CreatedAt.Equal(created) || c.Name != "Claude 2" {
		t.Errorf("stored client after the refetch = %+v, %v; want the new name and the first creation time", c, err)
	}
	r, err = e.svc.Authorize(e.ctx, request(cimdID, "https://claude.example/cb").q)
	wantCode(t, "a redirect URI the new document dropped", err, authserver.ErrInvalidRequest)
	if r.RedirectURI != "" {
		t.Errorf("refusal of an unregistered redirect URI came with a redirect: %+v", r)
	}
	if clients, err := e.svc.Clients(e.ctx); err != nil || len(clients) != 1 {
		t.Errorf("Clients = %+v, %v; want the one CIMD client", clients, err)
	}
}

// TestCIMDRevokedStaysRevoked: a revoked CIMD client is refused without
// a fetch, and after its document went stale too.
func TestCIMDRevokedStaysRevoked(t *testing.T) {
	e, docs := newCIMDEnv(t)
	r := e.authorize(request(cimdID, "https://claude.example/cb"))
	tr := e.tokens(authserver.Registration{Client: r.Client}, "https://claude.example/cb")
	if _, err := e.svc.RevokeClient(e.ctx, cimdID); err != nil {
		t.Fatalf("RevokeClient: %v", err)
	}
	e.dead(tr.AccessToken)
	for _, d := range []time.Duration{0, 2 * time.Hour} {
		e.advance(d)
		r, err := e.svc.Authorize(e.ctx, request(cimdID, "https://claude.example/cb").q)
		wantCode(t, "Authorize by a revoked CIMD client", err, authserver.ErrInvalidClient)
		if r.RedirectURI != "" {
			t.Errorf("refusal of a revoked client came with a redirect: %+v", r)
		}
	}
	if c, err := e.store.Client(e.ctx, cimdID); err != nil || !c.Revoked() {
		t.Errorf("client after requests = %+v, %v; want it revoked", c, err)
	}
	// The first Authorize fetched; e.tokens authorized again within
	// FreshUntil; the revoked client's requests fetch nothing.
	if len(docs.fetches) != 1 {
		t.Errorf("fetches = %d, want 1 before the revocation and none after", len(docs.fetches))
	}
}

// TestCIMDRefused: a refused document, a client id that is not an https
// URL with a path, and a server without a fetcher: invalid_client, no
// redirect, nothing stored.
func TestCIMDRefused(t *testing.T) {
	e, docs := newCIMDEnv(t)
	docs.err = failure.New(failure.InvalidArguments, "the document's client_id differs from its URL")
	for _, id := range []string{cimdID, "http://claude.example/oauth/client.json", "https://claude.example"} {
		r, err := e.svc.Authorize(e.ctx, request(id, "https://claude.example/cb").q)
		wantCode(t, "Authorize by "+id, err, authserver.ErrInvalidClient)
		if r.RedirectURI != "" {
			t.Errorf("refusal of client %s came with a redirect: %+v", id, r)
		}
	}
	if len(docs.fetches) != 1 {
		t.Errorf("fetches = %q, want only the https URL with a path", docs.fetches)
	}
	none := newEnv(t)
	if none.svc.Metadata().ClientIDMetadataDocumentSupported {
		t.Error("metadata advertises CIMD without a fetcher")
	}
	_, err := none.svc.Authorize(none.ctx, request(cimdID, "https://claude.example/cb").q)
	wantCode(t, "Authorize by a URL client without a fetcher", err, authserver.ErrInvalidClient)
	for _, x := range []*env{e, none} {
		if clients, err := x.svc.Clients(x.ctx); err != nil || len(clients) != 0 {
			t.Errorf("Clients = %+v, %v; want none", clients, err)
		}
	}
}

// TestCIMDClientIDBound: a client id URL of MaxURI bytes is fetched; one
// byte more is refused without a fetch, and not redirected.
func TestCIMDClientIDBound(t *testing.T) {
	e, docs := newCIMDEnv(t)
	prefix := "https://claude.example/"
	id := prefix + strings.Repeat("c", authserver.MaxURI-len(prefix))
	if r := e.authorize(request(id, "https://claude.example/cb")); r.Client.ID != id {
		t.Errorf("client id of MaxURI bytes: Request %+v", r)
	}
	r, err := e.svc.Authorize(e.ctx, request(id+"c", "https://claude.example/cb").q)
	wantCode(t, "client id of MaxURI+1 bytes", err, authserver.ErrInvalidClient)
	if r.RedirectURI != "" {
		t.Errorf("an overlong client id came with a Request %+v", r)
	}
	if len(docs.fetches) != 1 || docs.fetches[0] != id {
		t.Errorf("fetched %d documents, want only the one of MaxURI bytes", len(docs.fetches))
	}
}
