package authserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// OfflineAccess is the scope a client may add to ask for a refresh token.
// Refresh tokens are issued to every client, so it is accepted and
// dropped; it is advertised in the server's metadata only (never in the
// resource's, MCP 2026-07-28 "Refresh Tokens").
const OfflineAccess = "offline_access"

// secretBytes is the entropy of every code, token and client secret.
const secretBytes = 32

// secretHashDomain separates the stored hashes of this server's secrets
// from every other SHA-256 use in WebCodex.
const secretHashDomain = "webcodex.oauth-secret.v1\x00"

// Documents fetches Client ID Metadata Documents (clientmeta.Fetcher).
type Documents interface {
	Fetch(ctx context.Context, id string) (clientmeta.Document, time.Time, error)
}

// Options configure a Service.
type Options struct {
	// Issuer is the server's issuer identifier: an absolute URL without a
	// query, fragment or trailing slash (the public base URL).
	Issuer string
	// Resource is the one protected resource tokens are issued for (the
	// canonical MCP URL).
	Resource string
	Store    Store
	// Documents fetches CIMD clients; nil: only DCR clients are known and
	// the metadata does not advertise CIMD.
	Documents Documents
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings about best-effort bookkeeping (sweeps);
	// nil discards them.
	Logger *slog.Logger
}

// A Service is the authorization server. It is safe for concurrent use
// when its Store is.
type Service struct {
	issuer, resource string
	store            Store
	docs             Documents
	now              func() time.Time
	log              *slog.Logger
}

// New returns the authorization server of o. Errors:
// failure.InvalidArguments when the issuer or the resource is not an
// absolute http(s) URL, or the issuer has a query, fragment or trailing
// slash.
func New(o Options) (*Service, error) {
	u, err := url.Parse(o.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o.Issuer, "/") {
		return nil, failure.New(failure.InvalidArguments, "oauth: issuer %q must be an absolute http(s) URL without a query, fragment or trailing slash", o.Issuer)
	}
	if r, err := url.Parse(o.Resource); err != nil || (r.Scheme != "https" && r.Scheme != "http") || r.Host == "" {
		return nil, failure.New(failure.InvalidArguments, "oauth: resource %q must be an absolute http(s) URL", o.Resource)
	}
	s := &Service{issuer: o.Issuer, resource: o.Resource, store: o.Store, docs: o.Documents, now: o.Now, log: o.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Issuer returns the issuer identifier.
func (s *Service) Issuer() string { return s.issuer }

// Metadata is the server's RFC 8414 metadata document.
type Metadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
}

// Endpoint paths, under the issuer.
const (
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RegisterPath  = "/oauth/register"
	RevokePath    = "/oauth/revoke"
)

// Metadata returns the server's metadata. "none" leads the token
// endpoint's methods: claude.ai uses CIMD only when it is there.
func (s *Service) Metadata() Metadata {
	scopes := make([]string, 0, len(auth.ResourceScopes)+1)
	for _, sc := range auth.ResourceScopes {
		scopes = append(scopes, string(sc))
	}
	methods := []string{AuthNone, AuthClientSecretBasic, AuthClientSecretPost}
	return Metadata{
		Issuer:                                     s.issuer,
		AuthorizationEndpoint:                      s.issuer + AuthorizePath,
		TokenEndpoint:                              s.issuer + TokenPath,
		RegistrationEndpoint:                       s.issuer + RegisterPath,
		RevocationEndpoint:                         s.issuer + RevokePath,
		ScopesSupported:                            append(scopes, OfflineAccess),
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:          methods,
		RevocationEndpointAuthMethodsSupported:     methods,
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          s.docs != nil,
		AuthorizationResponseIssParameterSupported: true,
	}
}

// HashSecret returns the lowercase hex, domain-separated SHA-256 under
// which a code, token or client secret is stored.
func HashSecret(raw string) string {
	sum := sha256.Sum256([]byte(secretHashDomain + raw))
	return hex.EncodeToString(sum[:])
}

func newSecret(prefix string) string {
	b := make([]byte, secretBytes)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func newID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// wellFormed reports whether raw has the shape of a secret with prefix.
func wellFormed(raw, prefix string) bool {
	rest, ok := strings.CutPrefix(raw, prefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(secretBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	return err == nil
}

// IsAccessToken reports whether raw is shaped as this server's access
// token (the transport routes it here by that shape).
func IsAccessToken(raw string) bool { return strings.HasPrefix(raw, AccessTokenPrefix) }

// Authenticate returns the principal of the access token raw: kind
// PrincipalKind, id the grant's, the grant's owner, scopes and project,
// and its client's id.
//
// Errors: failure.Unauthenticated when raw is not a live access token of
// this server for this resource (malformed, unknown, expired, its grant
// revoked or expired, or issued for another resource); failure.Unavailable
// when the store cannot be read.
func (s *Service) Authenticate(ctx context.Context, raw string) (auth.Principal, error) {
	if !wellFormed(raw, AccessTokenPrefix) {
		return auth.Principal{}, failure.New(failure.Unauthenticated, "not an access token of this server")
	}
	sec, g, err := s.store.Find(ctx, HashSecret(raw))
	switch {
	case failure.Is(err, failure.NotFound):
		return auth.Principal{}, failure.New(failure.Unauthenticated, "the access token is unknown")
	case err != nil:
		return auth.Principal{}, failure.Wrap(failure.Unavailable, err, "the OAuth store is unavailable")
	}
	now := s.now()
	switch {
	case sec.Kind != KindAccess:
		return auth.Principal{}, failure.New(failure.Unauthenticated, "not an access token")
	case !now.Before(sec.ExpiresAt):
		return auth.Principal{}, failure.New(failure.Unauthenticated, "the access token expired")
	case g.Revoked() || !now.Before(g.ExpiresAt):
		return auth.Principal{}, failure.New(failure.Unauthenticated, "the access token's grant is revoked or expired")
	case !oauthex.MatchesResource([]string{g.Resource}, s.resource):
		return auth.Principal{}, failure.New(failure.Unauthenticated, "the access token was issued for another resource")
	}
	return auth.Principal{
		Kind: PrincipalKind, ID: g.ID, Owner: g.Owner, Scopes: slices.Clone(g.Scopes),
		Project: g.Project, OAuthClientID: g.ClientID,
	}, nil
}

// Clients returns every enrolled client, revoked ones included.
func (s *Service) Clients(ctx context.Context) ([]Client, error) { return s.store.Clients(ctx) }

// RevokeClient revokes the client with id and every grant (and so every
// token) issued to it. Errors: failure.NotFound.
func (s *Service) RevokeClient(ctx context.Context, id string) (Client, error) {
	return s.store.RevokeClient(ctx, id, s.now())
}

// ClientNames returns the names of the clients with ids that exist (for
// usage reports); unknown ids are left out.
func (s *Service) ClientNames(ctx context.Context, ids []string) map[string]string {
	out := map[string]string{}
	for _, id := range ids {
		if c, err := s.store.Client(ctx, id); err == nil {
			out[id] = c.Name
		}
	}
	return out
}

// sweep deletes what ended before now (Store.Sweep) on the way to a new
// grant or client, so that the store stays bounded by what is live. A
// failure only delays the deletion: it is logged, not returned.
func (s *Service) sweep(ctx context.Context, now time.Time) {
	if _, err := s.store.Sweep(ctx, now); err != nil {
		s.log.Warn("oauth: sweep failed", "err", err)
	}
}
