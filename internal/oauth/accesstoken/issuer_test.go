package accesstoken_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIssuer is a local authorization server on 127.0.0.1:0 serving
// metadata and a JWKS of locally generated keys.
type testIssuer struct {
	srv        *httptest.Server
	mu         sync.Mutex
	keys       []jose.JSONWebKey // public keys served
	jwksBody   []byte            // when set, served instead of keys
	jwksLength bool              // declare the JWKS's Content-Length
	jwksFetch  atomic.Int32
	metaFetch  atomic.Int32
	oidcOnly   bool          // serve only /.well-known/openid-configuration
	metaIssuer string        // when set, the metadata names this issuer
	block      chan struct{} // when set, the JWKS handler waits on it
}

// newIssuer starts a test issuer publishing ks.
func newIssuer(t testing.TB, ks ...signingKey) *testIssuer {
	t.Helper()
	is := &testIssuer{}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		is.metaFetch.Add(1)
		iss := is.srv.URL
		is.mu.Lock()
		if is.metaIssuer != "" {
			iss = is.metaIssuer
		}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": is.srv.URL + "/jwks"})
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if is.oidcOnly {
			http.NotFound(w, r)
			return
		}
		meta(w, r)
	})
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetch.Add(1)
		is.mu.Lock()
		body, block := is.jwksBody, is.block
		if body == nil {
			body, _ = json.Marshal(jose.JSONWebKeySet{Keys: is.keys})
		}
		is.mu.Unlock()
		if block != nil {
			select {
			case <-block:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if is.jwksLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.Write(body)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.publish(ks...)
	return is
}

// signingKey is a private key with its kid and algorithm.
type signingKey struct {
	kid string
	alg jose.SignatureAlgorithm
	key crypto.Signer
}

func rsaKey(t testing.TB, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jose.RS256, key: k}
}

func ecKey(t testing.TB, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, alg: jose.ES256, key: k}
}

// publish adds k's public key to the served JWKS.
func (is *testIssuer) publish(ks ...signingKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	for _, k := range ks {
		is.keys = append(is.keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
}

// tokenClaims are the claims a test token carries.
type tokenClaims struct {
	jwt.Claims
	Scope    any    `json:"scope,omitempty"`
	Scp      any    `json:"scp,omitempty"`
	ClientID string `json:"client_id,omitempty"`
}

func sign(t testing.TB, k signingKey, c any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.key, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// good returns valid claims for resource at now.
func (is *testIssuer) good(resource string, now time.Time) tokenClaims {
	return tokenClaims{
		Claims: jwt.Claims{
			Issuer: is.srv.URL, Subject: "user-1", Audience: jwt.Audience{resource},
			Expiry: jwt.NewNumericDate(now.Add(10 * time.Minute)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
			IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)),
		},
		Scope:    "project:read project:write",
		ClientID: "client-a",
	}
}
