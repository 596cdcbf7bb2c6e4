package clientmeta_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// TestFetchValid: a valid document is returned as written, with the
// defaults the package comment states, and fresh for its max-age.
func TestFetchValid(t *testing.T) {
	var doc shared[map[string]any]
	s := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != docPath {
			t.Errorf("request %s %s", r.Method, r.URL)
		}
		w.Header().Set("Cache-Control", "public, max-age=600")
		serveJSON(t, w, doc.get())
	})
	id := s.id()
	name128 := strings.Repeat("n", clientmeta.MaxClientName)
	uri2048 := "https://a.example/" + strings.Repeat("p", clientmeta.MaxURI-len("https://a.example/"))
	sixteen := make([]any, clientmeta.MaxRedirectURIs)
	sixteenWant := make([]string, clientmeta.MaxRedirectURIs)
	for i := range sixteen {
		sixteenWant[i] = fmt.Sprintf("http://127.0.0.1:%d/callback/%d", 1000+i, i)
		sixteen[i] = sixteenWant[i]
	}
	cases := []struct {
		name   string
		change func(map[string]any)
		want   clientmeta.Document
	}{
		{"minimal", func(map[string]any) {}, clientmeta.Document{
			ClientID: id, ClientName: "Claude", TokenEndpointAuthMethod: "none",
			RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost/callback"},
		}},
		{"every member", func(d map[string]any) {
			d["token_endpoint_auth_method"] = "none"
			d["grant_types"] = []any{"authorization_code", "refresh_token"}
			d["response_types"] = []any{"code"}
			d["client_uri"] = "https://claude.ai"
			d["logo_uri"] = "https://claude.ai/logo.png"
			d["redirect_uris"] = []any{"http://[::1]:8080/cb", "http://LOCALHOST/cb", "https://chatgpt.com/connector/oauth/x?a=b"}
			d["application_type"] = "native" // unknown members are ignored
			d["jwks_uri"] = "https://claude.ai/jwks"
		}, clientmeta.Document{
			ClientID: id, ClientName: "Claude", TokenEndpointAuthMethod: "none",
			RedirectURIs: []string{"http://[::1]:8080/cb", "http://LOCALHOST/cb", "https://chatgpt.com/connector/oauth/x?a=b"},
			GrantTypes:   []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			ClientURI: "https://claude.ai", LogoURI: "https://claude.ai/logo.png",
		}},
		{"private_key_jwt kept", func(d map[string]any) { d["token_endpoint_auth_method"] = "private_key_jwt" }, clientmeta.Document{
			ClientID: id, ClientName: "Claude", TokenEndpointAuthMethod: "private_key_jwt",
			RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost/callback"},
		}},
		{"display URIs that are not https are dropped", func(d map[string]any) {
			d["client_uri"] = "javascript:alert(1)"
			d["logo_uri"] = 7
		}, clientmeta.Document{
			ClientID: id, ClientName: "Claude", TokenEndpointAuthMethod: "none",
			RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback", "http://localhost/callback"},
		}},
		{"bounds reached", func(d map[string]any) {
			d["client_name"] = name128
			d["redirect_uris"] = append(sixteen[:clientmeta.MaxRedirectURIs-1:clientmeta.MaxRedirectURIs-1], uri2048)
		}, clientmeta.Document{
			ClientID: id, ClientName: name128, TokenEndpointAuthMethod: "none",
			RedirectURIs: append(sixteenWant[:clientmeta.MaxRedirectURIs-1:clientmeta.MaxRedirectURIs-1], uri2048),
		}},
	}
	f := s.fetcher()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := validDoc(id)
			c.change(d)
			doc.set(d)
			got, fresh, err := fetch(t, f, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Fatalf("document (-want +got):\n%s", d)
			}
			if want := testNow.Add(600 * time.Second); !fresh.Equal(want) {
				t.Fatalf("fresh until %v, want %v", fresh, want)
			}
		})
	}
}

// TestFetchRefusesDocument: each broken rule of the document is refused as
// invalid arguments, with a message saying which.
func TestFetchRefusesDocument(t *testing.T) {
	var body shared[[]byte]
	s := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body.get())
	})
	id := s.id()
	q := strconv.Quote(id)
	long := "https://a.example/" + strings.Repeat("p", clientmeta.MaxURI-len("https://a.example/")+1)
	seventeen := make([]any, clientmeta.MaxRedirectURIs+1)
	for i := range seventeen {
		seventeen[i] = "https://a.example/cb"
	}
	set := func(k string, v any) func(map[string]any) { return func(d map[string]any) { d[k] = v } }
	del := func(k string) func(map[string]any) { return func(d map[string]any) { delete(d, k) } }
	cases := []struct {
		name   string
		change func(map[string]any) // applied to validDoc(id)
		raw    string               // or the body as written, when set
		want   string
	}{
		{"client_id with a trailing slash", set("client_id", id+"/"), "",
			"client_id " + strconv.Quote(id+"/") + " does not equal the URL it was fetched from, " + q},
		{"client_id in another case", set("client_id", strings.ToUpper(id)), "",
			"client_id " + strconv.Quote(strings.ToUpper(id)) + " does not equal the URL it was fetched from, " + q},
		{"client_id very long", set("client_id", id+strings.Repeat("x", clientmeta.MaxDocumentBytes/2)), "",
			"client_id " + strconv.Quote((id + strings.Repeat("x", clientmeta.MaxURL))[:clientmeta.MaxURL]) +
				"… does not equal the URL it was fetched from, " + q},
		{"client_id missing", del("client_id"), "", "client_id is missing"},
		{"client_id not a string", set("client_id", 1), "", "client_id is not a string"},
		{"client_id null", set("client_id", nil), "", "client_id is not a string"},
		{"client_name missing", del("client_name"), "", "client_name is missing"},
		{"client_name empty", set("client_name", ""), "", "client_name is empty"},
		{"client_name blank", set("client_name", " \t"), "", "client_name is empty"},
		{"client_name too long", set("client_name", strings.Repeat("n", clientmeta.MaxClientName+1)), "",
			"client_name is longer than 128 bytes"},
		{"client_name with a control character", set("client_name", "Cl\u0007aude"), "", "client_name has a control character"},
		{"redirect_uris missing", del("redirect_uris"), "", "redirect_uris is missing"},
		{"redirect_uris empty", set("redirect_uris", []any{}), "", "redirect_uris is empty"},
		{"redirect_uris null", set("redirect_uris", nil), "", "redirect_uris is not an array of strings"},
		{"redirect_uris a string", set("redirect_uris", "https://a.example/cb"), "", "redirect_uris is not an array of strings"},
		{"too many redirect_uris", set("redirect_uris", seventeen), "", "redirect_uris has 17 entries; at most 16 are allowed"},
		{"redirect URI too long", set("redirect_uris", []any{"https://a.example/cb", long}), "",
			"redirect_uris[1] is longer than 2048 bytes"},
		{"http redirect URI on a public host", set("redirect_uris", []any{"http://claude.ai/cb"}), "",
			"redirect_uris[0] is http on a host that is not loopback (localhost, 127.0.0.1, [::1]); use https"},
		{"http redirect URI on a host named like loopback", set("redirect_uris", []any{"http://localhost.evil.example/cb"}), "",
			"redirect_uris[0] is http on a host that is not loopback (localhost, 127.0.0.1, [::1]); use https"},
		{"custom scheme redirect URI", set("redirect_uris", []any{"com.example.app:/callback"}), "",
			`redirect_uris[0] is not an absolute URI with a host`},
		{"custom scheme redirect URI with a host", set("redirect_uris", []any{"myapp://callback/x"}), "",
			`redirect_uris[0] has scheme "myapp"; only https, or http on a loopback host, is allowed`},
		{"javascript redirect URI", set("redirect_uris", []any{"javascript://a.example/%0aalert(1)"}), "",
			`redirect_uris[0] has scheme "javascript"; only https, or http on a loopback host, is allowed`},
		{"relative redirect URI", set("redirect_uris", []any{"/callback"}), "", "redirect_uris[0] is not an absolute URI with a host"},
		{"redirect URI with a fragment", set("redirect_uris", []any{"https://a.example/cb#x"}), "", "redirect_uris[0] has a fragment"},
		{"redirect URI with an empty fragment", set("redirect_uris", []any{"https://a.example/cb#"}), "", "redirect_uris[0] has a fragment"},
		{"redirect URI with userinfo", set("redirect_uris", []any{"https://u:p@a.example/cb"}), "", "redirect_uris[0] has userinfo"},
		{"redirect URI not a string", set("redirect_uris", []any{7}), "", "redirect_uris is not an array of strings"},
		{"client_secret", set("client_secret", "s3cret"), "",
			"it has a client_secret member; a client metadata document must not carry a secret"},
		{"client_secret null", set("client_secret", nil), "",
			"it has a client_secret member; a client metadata document must not carry a secret"},
		{"client_secret_expires_at", set("client_secret_expires_at", 0), "",
			"it has a client_secret_expires_at member; a client metadata document must not carry a secret"},
		{"auth method built on a secret", set("token_endpoint_auth_method", "client_secret_basic"), "",
			`token_endpoint_auth_method is "client_secret_basic"; want "none" or "private_key_jwt"`},
		{"auth method not a string", set("token_endpoint_auth_method", []any{"none"}), "", "token_endpoint_auth_method is not a string"},
		{"grant_types not a list", set("grant_types", "authorization_code"), "", "grant_types is not an array of strings"},
		{"response_types not strings", set("response_types", []any{1}), "", "response_types is not an array of strings"},
		{"a member twice", nil, `{"client_id":` + q + `,"client_name":"A","client_name":"B","redirect_uris":["https://a.example/cb"]}`,
			`member "client_name" appears more than once`},
		{"an array", nil, `[` + q + `]`, "the body is not a JSON object"},
		{"malformed JSON", nil, `{"client_id":` + q + `,`, "the body is not a JSON object"},
		{"empty body", nil, ``, "the body is not a JSON object"},
		{"a second value", nil, `{"client_id":` + q + `,"client_name":"A","redirect_uris":["https://a.example/cb"]} {}`,
			"the body has more after its JSON object"},
		{"not UTF-8", nil, `{"client_id":` + q + `,"client_name":"A` + "\xff" + `","redirect_uris":["https://a.example/cb"]}`,
			"the body is not UTF-8"},
	}
	f := s.fetcher()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.change != nil {
				d := validDoc(id)
				c.change(d)
				body.set(mustJSON(t, d))
			} else {
				body.set([]byte(c.raw))
			}
			doc, fresh, err := fetch(t, f, id)
			wantRefused(t, doc, fresh, err, failure.InvalidArguments, "client metadata document: "+c.want)
		})
	}
}

// TestFetchRefusesResponse: a status other than 200, a Content-Type other
// than application/json, an oversized body or oversized headers are
// refused.
func TestFetchRefusesResponse(t *testing.T) {
	var answer shared[func(w http.ResponseWriter)]
	s := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) { answer.get()(w) })
	id := s.id()
	okBody := mustJSON(t, validDoc(id))
	padded := func(n int) []byte { // a valid document of exactly n bytes
		return append(okBody[:len(okBody):len(okBody)], []byte(strings.Repeat(" ", n-len(okBody)))...)
	}
	withType := func(ct string, body []byte) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			_, _ = w.Write(body)
		}
	}
	status := func(code int) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(okBody)
		}
	}
	tooLarge := "the client metadata document is larger than 65536 bytes"
	cases := []struct {
		name   string
		answer func(http.ResponseWriter)
		kind   failure.Kind
		want   string
	}{
		{"404", status(http.StatusNotFound), failure.Unavailable, "the client metadata document answered HTTP 404; want 200"},
		{"500", status(http.StatusInternalServerError), failure.Unavailable, "the client metadata document answered HTTP 500; want 200"},
		{"201", status(http.StatusCreated), failure.Unavailable, "the client metadata document answered HTTP 201; want 200"},
		{"304", status(http.StatusNotModified), failure.Unavailable,
			"the client metadata document answered a redirect (HTTP 304); redirects are not followed"},
		{"text/html", withType("text/html", okBody), failure.InvalidArguments,
			`the client metadata document's Content-Type is "text/html"; want application/json`},
		{"no Content-Type", func(w http.ResponseWriter) {
			w.Header()["Content-Type"] = nil // keep the server from sniffing one
			_, _ = w.Write(okBody)
		}, failure.InvalidArguments, `the client metadata document's Content-Type is ""; want application/json`},
		{"a json suffix type", withType("application/jwk-set+json", okBody), failure.InvalidArguments,
			`the client metadata document's Content-Type is "application/jwk-set+json"; want application/json`},
		{"oversized with a length", withType("application/json", padded(clientmeta.MaxDocumentBytes+1)), failure.InvalidArguments, tooLarge},
		{"oversized chunked", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			body := padded(clientmeta.MaxDocumentBytes + 1)
			_, _ = w.Write(body[:1000])
			w.(http.Flusher).Flush() // no Content-Length: the size is found by reading
			_, _ = w.Write(body[1000:])
		}, failure.InvalidArguments, tooLarge},
		{"oversized headers", func(w http.ResponseWriter) {
			w.Header().Set("X-Padding", strings.Repeat("h", clientmeta.MaxHeaderBytes))
			withType("application/json", okBody)(w)
		}, failure.Unavailable, "the client metadata document could not be fetched"},
	}
	f := s.fetcher()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answer.set(c.answer)
			doc, fresh, err := fetch(t, f, id)
			wantRefused(t, doc, fresh, err, c.kind, c.want)
		})
	}
	t.Run("exactly MaxDocumentBytes, with a charset", func(t *testing.T) {
		answer.set(withType("application/json; charset=UTF-8", padded(clientmeta.MaxDocumentBytes)))
		if doc, _, err := fetch(t, f, id); err != nil || doc.ClientID != id {
			t.Fatalf("fetch = %+v, %v", doc, err)
		}
	})
}

// TestFetchRefusesRedirect: a redirect, to the same host or another, is
// refused and its target never requested.
func TestFetchRefusesRedirect(t *testing.T) {
	target := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) { serveJSON(t, w, validDoc("unused")) })
	type redirect struct {
		location string
		code     int
	}
	var answer shared[redirect]
	var sameHostTargetHits atomic.Int64
	s := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != docPath {
			sameHostTargetHits.Add(1)
			serveJSON(t, w, validDoc("unused"))
			return
		}
		a := answer.get()
		http.Redirect(w, r, a.location, a.code)
	})
	f := s.fetcher()
	for _, c := range []struct {
		name, location string
		code           int
	}{
		{"302 to the same host", s.URL + "/other.json", http.StatusFound},
		{"302 to another host", target.URL + docPath, http.StatusFound},
		{"301 to another host", target.URL + docPath, http.StatusMovedPermanently},
		{"307 to the same host", s.URL + "/other.json", http.StatusTemporaryRedirect},
		{"308 to another host", target.URL + docPath, http.StatusPermanentRedirect},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer.set(redirect{c.location, c.code})
			doc, fresh, err := fetch(t, f, s.id())
			wantRefused(t, doc, fresh, err, failure.Unavailable,
				fmt.Sprintf("the client metadata document answered a redirect (HTTP %d); redirects are not followed", c.code))
		})
	}
	if n := target.conns.Load() + target.hits.Load(); n != 0 || sameHostTargetHits.Load() != 0 {
		t.Fatalf("the redirect targets were reached: %d connections and requests to the other host, %d requests on the same host", n, sameHostTargetHits.Load())
	}
}

// TestFetchTimesOut: a server that never answers, or stops in the middle
// of its body, makes the fetch fail as unavailable after the timeout.
func TestFetchTimesOut(t *testing.T) {
	release := make(chan struct{})
	var midBody atomic.Bool
	s := newDocServer(t, func(w http.ResponseWriter, r *http.Request) {
		if midBody.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(`{"client_id":`))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	f := s.fetcher()
	const timeout = 200 * time.Millisecond
	clientmeta.SetTimeout(f, timeout)
	for _, mid := range []bool{false, true} {
		t.Run(fmt.Sprintf("mid-body %v", mid), func(t *testing.T) {
			midBody.Store(mid)
			doc, fresh, err := fetch(t, f, s.id())
			wantRefused(t, doc, fresh, err, failure.Unavailable, "fetching the client metadata document took longer than 200ms")
		})
	}
}

// TestFetchRefusesPrivateAddress: without AllowPrivate, a loopback server
// is never connected to, whether named by its address or by a host name
// that resolves to it.
func TestFetchRefusesPrivateAddress(t *testing.T) {
	s := newDocServer(t, func(w http.ResponseWriter, r *http.Request) { serveJSON(t, w, validDoc("https://"+r.Host+docPath)) })
	f := clientmeta.New(clientmeta.Options{RootCAs: s.roots()})
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{
		s.id(),
		"https://localhost:" + port + docPath,
		"https://[::ffff:127.0.0.1]:" + port + docPath,
	} {
		t.Run(id, func(t *testing.T) {
			doc, fresh, err := fetch(t, f, id)
			wantRefused(t, doc, fresh, err, failure.PermissionDenied,
				"the client metadata URL's host resolves to a non-public address; it is not fetched")
		})
	}
	if c, h := s.conns.Load(), s.hits.Load(); c != 0 || h != 0 {
		t.Fatalf("the server saw %d connections and %d requests", c, h)
	}
}

// TestFetchRefusesUntrustedCertificate: TLS is verified.
func TestFetchRefusesUntrustedCertificate(t *testing.T) {
	s := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) { serveJSON(t, w, validDoc("x")) })
	f := clientmeta.New(clientmeta.Options{AllowPrivate: true})
	doc, fresh, err := fetch(t, f, s.id())
	wantRefused(t, doc, fresh, err, failure.Unavailable, "the client metadata URL's TLS certificate did not verify")
	if h := s.hits.Load(); h != 0 {
		t.Fatalf("the server saw %d requests", h)
	}
}

// TestFetchRefusesBadURL: a client id that is not a client id URL is
// refused before anything is sent.
func TestFetchRefusesBadURL(t *testing.T) {
	s := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) { serveJSON(t, w, validDoc("x")) })
	f := s.fetcher()
	for _, c := range []struct{ id, why string }{
		{strings.Replace(s.id(), "https:", "http:", 1), "it is not an https URL"},
		{s.URL, "it has no path"},
		{s.URL + "/", "it has no path"},
		{s.id() + "#frag", "it has a fragment"},
		{strings.Replace(s.id(), "https://", "https://u@", 1), "it has userinfo"},
		{s.URL + "/a/../client.json", `it has a "." or ".." path segment`},
	} {
		t.Run(c.id, func(t *testing.T) {
			doc, fresh, err := fetch(t, f, c.id)
			wantRefused(t, doc, fresh, err, failure.InvalidArguments,
				"client_id "+strconv.Quote(c.id)+" is not a client metadata URL: "+c.why)
		})
	}
	if c := s.conns.Load(); c != 0 {
		t.Fatalf("the server saw %d connections", c)
	}
}

// TestBoundsMatchAuthServer: a document this package accepts fits the
// authorization server's bounds of a client, and no tighter.
func TestBoundsMatchAuthServer(t *testing.T) {
	if clientmeta.MaxClientName != authserver.MaxClientName || clientmeta.MaxRedirectURIs != authserver.MaxRedirectURIs ||
		clientmeta.MaxURI != authserver.MaxURI || clientmeta.MaxURL != authserver.MaxURI {
		t.Fatal("clientmeta's bounds differ from authserver's")
	}
	if clientmeta.AuthNone != authserver.AuthNone {
		t.Fatal("the name of the public auth method differs")
	}
}

// TestFetchTimeoutDefault: a new Fetcher bounds a fetch by FetchTimeout,
// 5 s (the tests of slow servers shorten it).
func TestFetchTimeoutDefault(t *testing.T) {
	if got := clientmeta.Timeout(clientmeta.New(clientmeta.Options{})); got != clientmeta.FetchTimeout || clientmeta.FetchTimeout != 5*time.Second {
		t.Fatalf("timeout = %v, want FetchTimeout = 5s", got)
	}
}

// TestFetchCancelled: a caller that gave up gets unavailable, and nothing
// was requested.
func TestFetchCancelled(t *testing.T) {
	s := newDocServer(t, func(w http.ResponseWriter, _ *http.Request) { serveJSON(t, w, validDoc("x")) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	doc, fresh, err := s.fetcher().Fetch(ctx, s.id())
	wantRefused(t, doc, fresh, err, failure.Unavailable, "fetching the client metadata document was cancelled")
	if h := s.hits.Load(); h != 0 {
		t.Fatalf("the server saw %d requests", h)
	}
}
