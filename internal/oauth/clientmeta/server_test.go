package clientmeta_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// docPath is where the test servers publish a document.
const docPath = "/oauth/client.json"

// testNow is the clock of every fetcher in these tests.
var testNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// docServer is a real TLS server on 127.0.0.1 that counts the connections
// it accepted and the requests that reached its handler.
type docServer struct {
	*httptest.Server
	conns atomic.Int64
	hits  atomic.Int64
}

// newDocServer starts a server answering with h; it is closed when the test
// ends.
func newDocServer(t *testing.T, h http.HandlerFunc) *docServer {
	t.Helper()
	s := &docServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// id is the client id URL of the server's document.
func (s *docServer) id() string { return s.URL + docPath }

// roots is a pool holding the server's certificate.
func (s *docServer) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return pool
}

// fetcher returns a Fetcher that trusts s and may reach loopback.
func (s *docServer) fetcher() *clientmeta.Fetcher {
	return clientmeta.New(clientmeta.Options{AllowPrivate: true, RootCAs: s.roots(), Now: func() time.Time { return testNow }})
}

// validDoc is a valid document for id, as a JSON object to change.
func validDoc(id string) map[string]any {
	return map[string]any{
		"client_id":     id,
		"client_name":   "Claude",
		"redirect_uris": []any{"https://claude.ai/api/mcp/auth_callback", "http://localhost/callback"},
	}
}

// serveJSON writes v as an application/json 200.
func serveJSON(t *testing.T, w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// wantRefused checks that a fetch failed with kind k and message msg and
// returned nothing.
func wantRefused(t *testing.T, doc clientmeta.Document, fresh time.Time, err error, k failure.Kind, msg string) {
	t.Helper()
	if !failure.Is(err, k) || failure.MessageOf(err) != msg {
		t.Fatalf("error = %v (kind %s)\nwant kind %s, message %q", err, failure.KindOf(err), k, msg)
	}
	if doc.ClientID != "" || doc.RedirectURIs != nil || !fresh.IsZero() {
		t.Fatalf("a refused fetch returned %+v, fresh until %v", doc, fresh)
	}
}

// fetch fetches id with f under the test's context.
func fetch(t *testing.T, f *clientmeta.Fetcher, id string) (clientmeta.Document, time.Time, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return f.Fetch(ctx, id)
}

// shared is a value a test sets and the server's handler reads.
type shared[T any] struct {
	mu sync.Mutex
	v  T
}

func (s *shared[T]) set(v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v = v
}

func (s *shared[T]) get() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
