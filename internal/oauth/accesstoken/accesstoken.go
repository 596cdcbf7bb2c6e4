// Package accesstoken verifies the JWT access tokens of an external OAuth
// authorization server (`[oauth] issuer`) for this resource server, and maps
// a verified token to a principal.
//
// A [Verifier] is built from the issuer URL and the resource identifier (the
// public MCP URL). On first use it discovers the issuer's metadata (RFC 8414
// `/.well-known/oauth-authorization-server`, then OpenID Connect discovery)
// and from it the JWKS, which it caches and fetches again when no cached key
// verifies a token (an unknown `kid`), at most once per
// [MinKeyFetchInterval], and when the keys are [KeySetLifetime] old. Every
// fetch is bounded in size ([MaxDocumentBytes]) and time ([FetchTimeout])
// and follows no redirect. A verified token is remembered (by its SHA-256)
// for at most [ResultLifetime] and never past its `exp`, so repeated calls
// with one token cost a hash and a map read; at most [MaxCachedTokens] are
// remembered.
//
// [Verifier.Verify] accepts a token only when all of these hold: it is at
// most [MaxTokenBytes]; it is a compact JWS (the JSON serialization is
// refused) signed with an asymmetric algorithm ([Algorithms]: `none` and
// HMAC are refused, so a public key can never serve as an HMAC secret); the
// signature verifies with a key of the issuer's JWKS; `iss` is exactly the issuer; `aud`
// contains the resource (RFC 8707; an empty path and "/" are the same);
// `exp` is present and not passed, and `nbf`, if present, is reached, each
// within [ClockSkew]; `sub` is present, valid UTF-8 without control
// characters and at most [MaxSubjectBytes]. A token for another audience is
// refused even when everything else is valid.
//
// The granted scopes are the token's `scope` claim (space-separated; a JSON
// array is accepted too, as is the `scp` claim some issuers use) mapped by
// [MapScopes]: unknown names are ignored, nothing is ever widened, `admin`
// is never granted, and the memory scopes are granted only when the token
// names them: an OAuth client's scope set does not gain memory:read or
// memory:manage from its project scopes (spec §1 Project Memory).
//
// Every refusal is a *failure.Error of kind failure.Unauthenticated (an
// `invalid_token` for the resource server's challenge) carrying a [Reason]
// ([ReasonOf]; also the error detail "reason"), except that an issuer whose
// metadata or keys cannot be fetched gives failure.Unavailable with
// [ReasonIssuerUnavailable]: the token may be good, the server cannot tell.
// A refusal never returns a partial [Access]. The package imports no
// transport.
package accesstoken

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of verification. Each has a test.
const (
	// MaxTokenBytes bounds a bearer JWT; a longer one is refused before
	// it is parsed.
	MaxTokenBytes = 16 << 10
	// MaxDocumentBytes bounds the issuer's metadata document and its JWKS.
	MaxDocumentBytes = 256 << 10
	// FetchTimeout bounds one fetch of the metadata or the JWKS
	// (Config.FetchTimeout may shorten it, never lengthen it).
	FetchTimeout = 5 * time.Second
	// KeySetLifetime is how long fetched keys are used before the JWKS is
	// fetched again; an unknown `kid` fetches it sooner.
	KeySetLifetime = time.Hour
	// ClockSkew is the tolerance on `exp` and `nbf`.
	ClockSkew = time.Minute
	// MaxSubjectBytes bounds the `sub` claim.
	MaxSubjectBytes = 255
	// DiscoveryRetryAfter is how long a failed discovery is remembered:
	// tokens verified meanwhile fail at once instead of each fetching the
	// issuer's metadata again.
	DiscoveryRetryAfter = 10 * time.Second
)

// PrincipalKind is the auth.Kind of a principal authenticated by an external
// issuer's access token ("oauth2", the reference server's principal_kind).
const PrincipalKind auth.Kind = "oauth2"

// Algorithms are the JWS algorithms a token may be signed with: asymmetric
// only.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// Config configures a Verifier.
type Config struct {
	// Issuer is the authorization server's issuer identifier, compared
	// character for character with the metadata's and the token's `iss`.
	// It must be an https URL, or http on a loopback address (tests).
	Issuer string
	// Resource is this server's resource identifier (the public MCP URL,
	// e.g. https://host/mcp); a token's `aud` must contain it.
	Resource string
	// FetchTimeout shortens FetchTimeout for fetches (0: FetchTimeout).
	FetchTimeout time.Duration
	// Transport carries the fetches (nil: http.DefaultTransport).
	Transport http.RoundTripper
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Access is what a verified token grants.
type Access struct {
	// Principal has Kind PrincipalKind, ID the token's subject, an Owner
	// derived from the issuer and the subject ([Owner]) and the scopes
	// [MapScopes] grants.
	Principal auth.Principal
	// Subject is the token's `sub`.
	Subject string
	// ClientID is the token's `client_id` (RFC 9068), else its `azp`, else
	// empty.
	ClientID string
	// Expiry is the token's `exp`.
	Expiry time.Time
}

// A Verifier verifies access tokens of one issuer for one resource. It is
// safe for concurrent use.
type Verifier struct {
	issuer, resource string
	client           *http.Client
	now              func() time.Time

	mu sync.Mutex // serialises discovery
	// failed and failedAt remember the last failed discovery, under mu.
	failed   error
	failedAt time.Time
	keys     atomic.Pointer[remoteKeys] // set once the issuer is discovered
	results  results
}

// New returns a Verifier for cfg. It fetches nothing: the issuer is
// discovered on the first Verify. Errors: failure.InvalidArguments when the
// issuer or the resource is not a usable URL.
func New(cfg Config) (*Verifier, error) {
	if err := ValidIssuer(cfg.Issuer); err != nil {
		return nil, err
	}
	if !validResource(cfg.Resource) {
		return nil, failure.New(failure.InvalidArguments, "the resource %q is not an http(s) URL", cfg.Resource)
	}
	timeout := FetchTimeout
	if cfg.FetchTimeout > 0 && cfg.FetchTimeout < timeout {
		timeout = cfg.FetchTimeout
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Verifier{
		issuer:   cfg.Issuer,
		resource: cfg.Resource,
		client: &http.Client{
			Timeout:   timeout,
			Transport: boundedTransport{base: base},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("the issuer redirected")
			},
		},
		now: now,
	}, nil
}

// Issuer returns the issuer the Verifier trusts.
func (v *Verifier) Issuer() string { return v.issuer }

// Resource returns the resource identifier tokens must be issued for.
func (v *Verifier) Resource() string { return v.resource }

// claims are the parts of an access token's payload the Verifier reads.
type claims struct {
	jwt.Claims
	Scope    json.RawMessage `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
}

// Verify verifies raw (the bearer credential, without "Bearer ") and
// returns what it grants. Errors: failure.Unauthenticated with a Reason for
// every refused token; failure.Unavailable with ReasonIssuerUnavailable when
// the issuer's metadata or keys cannot be fetched.
func (v *Verifier) Verify(ctx context.Context, raw string) (Access, error) {
	if raw == "" {
		return Access{}, reject(ReasonMalformed, nil, "the access token is empty")
	}
	if len(raw) > MaxTokenBytes {
		return Access{}, reject(ReasonTooLarge, nil, "the access token is longer than %d bytes", MaxTokenBytes)
	}
	key := sha256.Sum256([]byte(raw))
	if a, ok := v.results.get(key, v.now()); ok {
		return a, nil
	}
	jws, err := jose.ParseSignedCompact(raw, Algorithms)
	if err != nil {
		if alg := headerAlgorithm(raw); alg != "" && !slices.Contains(Algorithms, jose.SignatureAlgorithm(alg)) {
			return Access{}, reject(ReasonAlgorithm, err, "the access token's algorithm %q is not allowed", clip(alg))
		}
		return Access{}, reject(ReasonMalformed, err, "the access token is not a signed JWT")
	}
	if len(jws.Signatures) != 1 {
		return Access{}, reject(ReasonMalformed, nil, "the access token must carry exactly one signature")
	}
	ks, err := v.keySet(ctx)
	if err != nil {
		return Access{}, err
	}
	payload, err := ks.verify(ctx, jws)
	if errors.Is(err, errNoKey) {
		return Access{}, reject(ReasonSignature, err, "the access token's signature does not verify with the issuer's keys")
	}
	if err != nil {
		return Access{}, unavailable(err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Access{}, reject(ReasonMalformed, err, "the access token's claims are not valid")
	}
	if err := v.checkClaims(&c); err != nil {
		return Access{}, err
	}
	names, err := scopeNames(c.Scope, c.Scp)
	if err != nil {
		return Access{}, err
	}
	client := c.ClientID
	if client == "" {
		client = c.Azp
	}
	a := Access{
		Principal: auth.Principal{
			Kind:   PrincipalKind,
			ID:     c.Subject,
			Owner:  Owner(v.issuer, c.Subject),
			Scopes: MapScopes(names),
		},
		Subject:  c.Subject,
		ClientID: client,
		Expiry:   c.Expiry.Time(),
	}
	v.results.put(key, a, v.now())
	return a, nil
}

// checkClaims applies the issuer, audience, time and subject rules.
func (v *Verifier) checkClaims(c *claims) error {
	now := v.now()
	switch {
	case c.Issuer != v.issuer:
		return reject(ReasonIssuer, nil, "the access token was issued by another issuer")
	case !oauthex.MatchesResource(c.Audience, v.resource):
		return reject(ReasonAudience, nil, "the access token was issued for another resource")
	case c.Expiry == nil:
		return reject(ReasonNoExpiry, nil, "the access token has no expiry")
	case now.After(c.Expiry.Time().Add(ClockSkew)):
		return reject(ReasonExpired, nil, "the access token has expired")
	case c.NotBefore != nil && now.Add(ClockSkew).Before(c.NotBefore.Time()):
		return reject(ReasonNotYetValid, nil, "the access token is not valid yet")
	case c.Subject == "":
		return reject(ReasonSubject, nil, "the access token has no subject")
	case len(c.Subject) > MaxSubjectBytes || !utf8.ValidString(c.Subject) || strings.IndexFunc(c.Subject, unicode.IsControl) >= 0:
		return reject(ReasonSubject, nil, "the access token's subject is longer than %d bytes or not printable text", MaxSubjectBytes)
	}
	return nil
}

// headerAlgorithm returns the "alg" of a compact JWS's protected header, or
// "" when it cannot be read.
func headerAlgorithm(raw string) string {
	head, _, ok := strings.Cut(raw, ".")
	if !ok {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Alg
}

// clip bounds a caller-supplied string quoted in a message.
func clip(s string) string {
	const n = 32
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ToValidUTF8(s, "")
}
