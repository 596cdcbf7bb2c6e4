package accesstoken_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/accesstoken"
)

const resource = "https://webcodex.example/mcp"

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func newVerifier(t testing.TB, is *testIssuer, now *time.Time) *accesstoken.Verifier {
	t.Helper()
	v, err := accesstoken.New(accesstoken.Config{
		Issuer: is.srv.URL, Resource: resource, FetchTimeout: time.Second,
		Now: func() time.Time { return *now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refused checks that err is the refusal of kind k with reason r and that
// nothing was granted.
func refused(t *testing.T, a accesstoken.Access, err error, k failure.Kind, r accesstoken.Reason) {
	t.Helper()
	if !failure.Is(err, k) || accesstoken.ReasonOf(err) != r {
		t.Fatalf("error = %v (kind %s, reason %q), want %s / %s", err, failure.KindOf(err), accesstoken.ReasonOf(err), k, r)
	}
	if got := failure.DetailOf(err)["reason"]; got != string(r) {
		t.Fatalf("detail reason = %v, want %s", got, r)
	}
	if a.Principal.ID != "" || a.Principal.Scopes != nil || a.Subject != "" || a.ClientID != "" {
		t.Fatalf("a refusal returned a partial access: %+v", a)
	}
}

func TestValidTokensRSAandEC(t *testing.T) {
	rk, ek := rsaKey(t, "rsa-1"), ecKey(t, "ec-1")
	is := newIssuer(t, rk, ek)
	now := t0
	v := newVerifier(t, is, &now)
	for _, k := range []signingKey{rk, ek} {
		a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
		if err != nil {
			t.Fatalf("%s: %v", k.kid, err)
		}
		want := auth.Principal{Kind: accesstoken.PrincipalKind, ID: "user-1", Owner: accesstoken.Owner(is.srv.URL, "user-1"),
			Scopes: []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite}}
		if a.Principal.Kind != want.Kind || a.Principal.ID != want.ID || a.Principal.Owner != want.Owner || !slices.Equal(a.Principal.Scopes, want.Scopes) {
			t.Fatalf("%s: principal = %+v, want %+v", k.kid, a.Principal, want)
		}
		if a.Subject != "user-1" || a.ClientID != "client-a" || !a.Expiry.Equal(now.Add(10*time.Minute)) {
			t.Fatalf("%s: access = %+v", k.kid, a)
		}
	}
	if n := is.jwksFetch.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
}

func TestRefusedClaims(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	cases := []struct {
		name   string
		edit   func(*tokenClaims)
		reason accesstoken.Reason
	}{
		{"wrong issuer", func(c *tokenClaims) { c.Issuer = "https://other.example" }, accesstoken.ReasonIssuer},
		{"issuer with a trailing slash", func(c *tokenClaims) { c.Issuer += "/" }, accesstoken.ReasonIssuer},
		{"another audience", func(c *tokenClaims) { c.Audience = jwt.Audience{"https://other.example/mcp"} }, accesstoken.ReasonAudience},
		{"audience is the origin only", func(c *tokenClaims) { c.Audience = jwt.Audience{"https://webcodex.example"} }, accesstoken.ReasonAudience},
		{"no audience", func(c *tokenClaims) { c.Audience = nil }, accesstoken.ReasonAudience},
		{"expired beyond the skew", func(c *tokenClaims) {
			c.Expiry = jwt.NewNumericDate(now.Add(-accesstoken.ClockSkew - time.Second))
		}, accesstoken.ReasonExpired},
		{"no expiry", func(c *tokenClaims) { c.Expiry = nil }, accesstoken.ReasonNoExpiry},
		{"not yet valid beyond the skew", func(c *tokenClaims) {
			c.NotBefore = jwt.NewNumericDate(now.Add(accesstoken.ClockSkew + time.Second))
		}, accesstoken.ReasonNotYetValid},
		{"missing sub", func(c *tokenClaims) { c.Subject = "" }, accesstoken.ReasonSubject},
		{"oversized sub", func(c *tokenClaims) { c.Subject = strings.Repeat("s", accesstoken.MaxSubjectBytes+1) }, accesstoken.ReasonSubject},
		{"sub with a control character", func(c *tokenClaims) { c.Subject = "a\nb" }, accesstoken.ReasonSubject},
		{"scope is a number", func(c *tokenClaims) { c.Scope = 7 }, accesstoken.ReasonScope},
		{"too many scopes", func(c *tokenClaims) {
			c.Scope = strings.Repeat("project:read ", accesstoken.MaxScopeNames+1)
		}, accesstoken.ReasonScope},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := is.good(resource, now)
			tc.edit(&c)
			a, err := v.Verify(context.Background(), sign(t, k, c))
			refused(t, a, err, failure.Unauthenticated, tc.reason)
		})
	}
}

func TestClockSkewBound(t *testing.T) {
	if accesstoken.ClockSkew != time.Minute {
		t.Fatalf("ClockSkew = %v, want 1m", accesstoken.ClockSkew)
	}
	k := ecKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	c := is.good(resource, now)
	c.Expiry = jwt.NewNumericDate(now.Add(-accesstoken.ClockSkew))
	c.NotBefore = jwt.NewNumericDate(now.Add(accesstoken.ClockSkew))
	if _, err := v.Verify(context.Background(), sign(t, k, c)); err != nil {
		t.Fatalf("a token exactly at the skew bound was refused: %v", err)
	}
	// The audience check treats an empty path and "/" alike, nothing more.
	c = is.good(resource, now)
	c.Audience = jwt.Audience{"https://other.example/mcp", resource}
	if _, err := v.Verify(context.Background(), sign(t, k, c)); err != nil {
		t.Fatalf("an audience list containing the resource was refused: %v", err)
	}
}

func TestRefusedAlgorithmsAndShapes(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	payload, _ := json.Marshal(is.good(resource, now))
	b64 := base64.RawURLEncoding.EncodeToString

	none := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + b64(payload) + "."
	a, err := v.Verify(context.Background(), none)
	refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonAlgorithm)

	// Algorithm confusion: HS256 with the issuer's public key as secret.
	der, _ := x509.MarshalPKIXPublicKey(k.key.Public())
	for _, secret := range [][]byte{der, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})} {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: secret, KeyID: k.kid}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := jwt.Signed(s).Claims(is.good(resource, now)).Serialize()
		a, err = v.Verify(context.Background(), raw)
		refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonAlgorithm)
	}

	// The JWS JSON serialization of a good token.
	parts := strings.Split(sign(t, k, is.good(resource, now)), ".")
	jsonJWS := `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`
	for name, raw := range map[string]string{
		"json serialization": jsonJWS,
		"empty":              "",
		"garbage":            "not-a-jwt",
		"two parts":          b64([]byte(`{"alg":"RS256"}`)) + "." + b64(payload),
	} {
		a, err := v.Verify(context.Background(), raw)
		t.Log(name)
		refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonMalformed)
	}

	// A signature by a key the issuer does not publish, under its kid.
	forged := sign(t, rsaKey(t, "k1"), is.good(resource, now))
	a, err = v.Verify(context.Background(), forged)
	refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonSignature)

	// A tampered payload.
	good := sign(t, k, is.good(resource, now))
	parts = strings.Split(good, ".")
	c := is.good(resource, now)
	c.Scope = "admin memory:manage"
	p2, _ := json.Marshal(c)
	a, err = v.Verify(context.Background(), parts[0]+"."+b64(p2)+"."+parts[2])
	refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonSignature)
}

func TestTokenSizeBound(t *testing.T) {
	if accesstoken.MaxTokenBytes != 16<<10 {
		t.Fatalf("MaxTokenBytes = %d", accesstoken.MaxTokenBytes)
	}
	k := ecKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	c := is.good(resource, now)
	c.Scp = []string{strings.Repeat("x", accesstoken.MaxTokenBytes)}
	a, err := v.Verify(context.Background(), sign(t, k, c))
	refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonTooLarge)
	if n := is.metaFetch.Load() + is.jwksFetch.Load(); n != 0 {
		t.Fatalf("an oversized token caused %d fetches", n)
	}
}

func TestKeyRotation(t *testing.T) {
	k1, k2 := rsaKey(t, "k1"), ecKey(t, "k2")
	is := newIssuer(t, k1)
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k1, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	// An unknown kid before the issuer publishes it: one fetch, refused.
	now = now.Add(accesstoken.MinKeyFetchInterval)
	a, err := v.Verify(context.Background(), sign(t, k2, is.good(resource, now)))
	refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonSignature)
	if n := is.jwksFetch.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2: %v", n, err)
	}
	// Rotation: the new kid is fetched once, then served from the cache.
	is.publish(k2)
	now = now.Add(accesstoken.MinKeyFetchInterval)
	for range 3 {
		if _, err := v.Verify(context.Background(), sign(t, k2, is.good(resource, now))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Verify(context.Background(), sign(t, k1, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	if n := is.jwksFetch.Load(); n != 3 {
		t.Fatalf("JWKS fetched %d times, want 3", n)
	}
	if n := is.metaFetch.Load(); n != 1 {
		t.Fatalf("metadata fetched %d times, want 1", n)
	}
}

func TestKeySetLifetime(t *testing.T) {
	if accesstoken.KeySetLifetime != time.Hour {
		t.Fatalf("KeySetLifetime = %v", accesstoken.KeySetLifetime)
	}
	k := ecKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	verify := func() {
		t.Helper()
		if _, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now))); err != nil {
			t.Fatal(err)
		}
	}
	verify()
	now = now.Add(accesstoken.KeySetLifetime - time.Second)
	verify()
	if n := is.jwksFetch.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times within its lifetime, want 1", n)
	}
	now = now.Add(time.Second)
	verify()
	if n := is.jwksFetch.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times after its lifetime, want 2", n)
	}
}

func TestDiscoveryFallsBackToOpenIDConfiguration(t *testing.T) {
	is := newIssuer(t)
	is.oidcOnly = true
	k := rsaKey(t, "k1")
	is.publish(k)
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	if n := is.metaFetch.Load(); n != 1 {
		t.Fatalf("metadata documents served = %d, want 1", n)
	}
}

func TestIssuerUnavailable(t *testing.T) {
	t.Run("metadata names another issuer", func(t *testing.T) {
		is := newIssuer(t)
		is.metaIssuer = "https://evil.example"
		k := rsaKey(t, "k1")
		is.publish(k)
		now := t0
		v := newVerifier(t, is, &now)
		a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
		refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
		if n := is.jwksFetch.Load(); n != 0 {
			t.Fatalf("JWKS of a mismatched issuer fetched %d times", n)
		}
	})
	t.Run("oversized JWKS", func(t *testing.T) {
		if accesstoken.MaxDocumentBytes != 256<<10 {
			t.Fatalf("MaxDocumentBytes = %d", accesstoken.MaxDocumentBytes)
		}
		for _, declared := range []bool{false, true} {
			k := rsaKey(t, "k1")
			is := newIssuer(t, k)
			is.jwksLength = declared
			ks, _ := json.Marshal(jose.JSONWebKeySet{Keys: is.keys})
			// A valid JWKS padded with white space past the bound.
			is.mu.Lock()
			is.jwksBody = append(ks[:len(ks)-1:len(ks)-1], append([]byte(strings.Repeat(" ", accesstoken.MaxDocumentBytes)), '}')...)
			is.mu.Unlock()
			now := t0
			v := newVerifier(t, is, &now)
			a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
			refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
			// The same document within the bound is accepted.
			is.mu.Lock()
			is.jwksBody = append(ks[:len(ks)-1:len(ks)-1], append([]byte(strings.Repeat(" ", accesstoken.MaxDocumentBytes-len(ks))), '}')...)
			is.mu.Unlock()
			now = now.Add(accesstoken.MinKeyFetchInterval)
			if _, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now))); err != nil {
				t.Fatalf("Content-Length declared %v: a JWKS of exactly MaxDocumentBytes was refused: %v", declared, err)
			}
		}
	})
	t.Run("slow JWKS", func(t *testing.T) {
		if accesstoken.FetchTimeout != 5*time.Second {
			t.Fatalf("FetchTimeout = %v", accesstoken.FetchTimeout)
		}
		k := rsaKey(t, "k1")
		is := newIssuer(t, k)
		is.block = make(chan struct{})
		defer close(is.block)
		now := t0
		v, err := accesstoken.New(accesstoken.Config{Issuer: is.srv.URL, Resource: resource,
			FetchTimeout: 50 * time.Millisecond, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
		refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	})
	t.Run("issuer down", func(t *testing.T) {
		is := newIssuer(t)
		k := rsaKey(t, "k1")
		now := t0
		v := newVerifier(t, is, &now)
		is.srv.Close()
		a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
		refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []accesstoken.Config{
		{Issuer: "http://issuer.example", Resource: resource},
		{Issuer: "https://issuer.example/", Resource: resource},
		{Issuer: "https://issuer.example?x=1", Resource: resource},
		{Issuer: "https://user@issuer.example", Resource: resource},
		{Issuer: "issuer.example", Resource: resource},
		{Issuer: "", Resource: resource},
		{Issuer: "https://issuer.example", Resource: ""},
		{Issuer: "https://issuer.example", Resource: "ftp://webcodex.example/mcp"},
	} {
		if v, err := accesstoken.New(c); !failure.Is(err, failure.InvalidArguments) || v != nil {
			t.Errorf("New(%+v) = %v, %v; want invalid_arguments", c, v, err)
		}
	}
	for _, iss := range []string{"https://issuer.example", "https://issuer.example/tenant", "http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9"} {
		if _, err := accesstoken.New(accesstoken.Config{Issuer: iss, Resource: resource}); err != nil {
			t.Errorf("New(%q): %v", iss, err)
		}
	}
}

func TestCachedVerificationNeverOutlivesTheToken(t *testing.T) {
	k := ecKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	c := is.good(resource, now)
	c.Expiry = jwt.NewNumericDate(now.Add(30 * time.Second))
	raw := sign(t, k, c)
	a1, err := v.Verify(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	a1.Principal.Scopes[0] = auth.ScopeAdmin // the caller's copy only
	a2, err := v.Verify(context.Background(), raw)
	if err != nil || !slices.Equal(a2.Principal.Scopes, []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite}) {
		t.Fatalf("cached verification = %+v, %v", a2, err)
	}
	now = now.Add(30*time.Second + accesstoken.ClockSkew + time.Second)
	a3, err := v.Verify(context.Background(), raw)
	refused(t, a3, err, failure.Unauthenticated, accesstoken.ReasonExpired)
}

func TestFailedDiscoveryIsRememberedBriefly(t *testing.T) {
	if accesstoken.DiscoveryRetryAfter != 10*time.Second {
		t.Fatalf("DiscoveryRetryAfter = %v", accesstoken.DiscoveryRetryAfter)
	}
	is := newIssuer(t)
	is.metaIssuer = "https://evil.example"
	k := rsaKey(t, "k1")
	is.publish(k)
	now := t0
	v := newVerifier(t, is, &now)
	raw := sign(t, k, is.good(resource, now))
	for range 2 {
		a, err := v.Verify(context.Background(), raw)
		refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	}
	if n := is.metaFetch.Load(); n != 1 {
		t.Fatalf("metadata fetched %d times within DiscoveryRetryAfter, want 1", n)
	}
	is.mu.Lock()
	is.metaIssuer = ""
	is.mu.Unlock()
	now = now.Add(accesstoken.DiscoveryRetryAfter)
	if _, err := v.Verify(context.Background(), raw); err != nil {
		t.Fatalf("after DiscoveryRetryAfter: %v", err)
	}
}

func TestClientIDFallsBackToAzp(t *testing.T) {
	k := ecKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	c := is.good(resource, now)
	c.ClientID = ""
	payload := map[string]any{"iss": c.Issuer, "sub": c.Subject, "aud": resource, "exp": c.Expiry, "azp": "client-b"}
	a, err := v.Verify(context.Background(), sign(t, k, payload))
	if err != nil || a.ClientID != "client-b" || len(a.Principal.Scopes) != 0 || a.Principal.Scopes == nil {
		t.Fatalf("access = %+v, %v", a, err)
	}
}

func TestIssuerRedirectIsRefused(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	// A server whose metadata redirects to the real issuer's.
	redirect := httptest.NewServer(http.RedirectHandler(is.srv.URL+"/.well-known/oauth-authorization-server", http.StatusFound))
	defer redirect.Close()
	now := t0
	v, err := accesstoken.New(accesstoken.Config{Issuer: redirect.URL, Resource: resource, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c := is.good(resource, now)
	c.Issuer = redirect.URL
	a, err := v.Verify(context.Background(), sign(t, k, c))
	refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	if n := is.metaFetch.Load(); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
}

func TestCancelledCallerDoesNotPoisonDiscovery(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	now := t0
	v := newVerifier(t, is, &now)
	raw := sign(t, k, is.good(resource, now))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a, err := v.Verify(ctx, raw)
	refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	if _, err := v.Verify(context.Background(), raw); err != nil {
		t.Fatalf("after a cancelled caller: %v", err)
	}
}

func TestEdDSAToken(t *testing.T) {
	is := newIssuer(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := signingKey{kid: "ed-1", alg: jose.EdDSA, key: priv}
	is.publish(k)
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
}

func TestKeyFetchFloor(t *testing.T) {
	if accesstoken.MinKeyFetchInterval != 10*time.Second {
		t.Fatalf("MinKeyFetchInterval = %v", accesstoken.MinKeyFetchInterval)
	}
	k1 := rsaKey(t, "k1")
	is := newIssuer(t, k1)
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k1, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	// Made-up kids and a forged signature under a known kid, all within
	// the interval: refused without fetching the JWKS again.
	for _, k := range []signingKey{ecKey(t, "made-up-1"), ecKey(t, "made-up-2"), rsaKey(t, "k1")} {
		a, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now)))
		refused(t, a, err, failure.Unauthenticated, accesstoken.ReasonSignature)
	}
	if n := is.jwksFetch.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times within MinKeyFetchInterval, want 1", n)
	}
	// The cached key still verifies meanwhile.
	if _, err := v.Verify(context.Background(), sign(t, k1, is.good(resource, now.Add(time.Second)))); err != nil {
		t.Fatal(err)
	}
	// Once the interval has passed a new kid is fetched.
	k2 := ecKey(t, "k2")
	is.publish(k2)
	now = now.Add(accesstoken.MinKeyFetchInterval)
	if _, err := v.Verify(context.Background(), sign(t, k2, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	if n := is.jwksFetch.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", n)
	}
}

func TestCancelledCallerDoesNotHoldTheKeyFetchFloor(t *testing.T) {
	k1, k2 := rsaKey(t, "k1"), ecKey(t, "k2")
	is := newIssuer(t, k1)
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k1, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	is.publish(k2)
	now = now.Add(accesstoken.MinKeyFetchInterval)
	raw := sign(t, k2, is.good(resource, now))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a, err := v.Verify(ctx, raw)
	refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
	if _, err := v.Verify(context.Background(), raw); err != nil {
		t.Fatalf("after a cancelled caller: %v", err)
	}
}

func TestJWKSKeysThatCannotSignAreSkipped(t *testing.T) {
	k := rsaKey(t, "k1")
	is := newIssuer(t, k)
	good, _ := json.Marshal(is.keys[0])
	is.mu.Lock()
	is.jwksBody = []byte(`{"keys":[` +
		`{"kty":"oct","kid":"k1","k":"c2VjcmV0"},` + // a symmetric key under the same kid
		`{"kty":"EC","crv":"secp256k1","kid":"x","x":"AA","y":"AA"},` + // a curve go-jose does not know
		`{"kty":"RSA","kid":"enc","use":"enc","n":"AQAB","e":"AQAB"},` + // garbage, marked for encryption
		string(good) + `]}`)
	is.mu.Unlock()
	now := t0
	v := newVerifier(t, is, &now)
	if _, err := v.Verify(context.Background(), sign(t, k, is.good(resource, now))); err != nil {
		t.Fatal(err)
	}
	// A JWKS that is not JSON leaves the issuer unavailable.
	is2 := newIssuer(t)
	is2.jwksBody = []byte("<html>")
	v2 := newVerifier(t, is2, &now)
	c := is.good(resource, now)
	c.Issuer = is2.srv.URL
	a, err := v2.Verify(context.Background(), sign(t, k, c))
	refused(t, a, err, failure.Unavailable, accesstoken.ReasonIssuerUnavailable)
}
