package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// Grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
)

// ClientAuth is how a request to the token or revocation endpoint
// authenticated its client.
type ClientAuth struct {
	ID     string
	Secret string
	// Basic: the credentials came in an Authorization: Basic header
	// (client_secret_basic), else in the form (client_secret_post, or a
	// public client's client_id alone).
	Basic bool
}

// A TokenRequest is a token endpoint request (RFC 6749 §4.1.3, §6).
type TokenRequest struct {
	Client       ClientAuth
	GrantType    string
	Code         string
	RedirectURI  string
	CodeVerifier string
	RefreshToken string
	Resource     string
	Scope        string
}

// A TokenResponse is a successful token endpoint answer (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// Token redeems an authorization code (with its PKCE verifier) or a
// refresh token for a new access token and a new refresh token; the
// redeemed code or refresh token is spent.
//
// Errors are *Error values: invalid_client when the client is unknown,
// revoked or fails to authenticate (the transport answers 401);
// invalid_grant when the code or refresh token is unknown, expired, spent,
// another client's, its grant revoked or expired, the redirect URI differs
// from the authorization request's, or the verifier does not match — a
// spent code or refresh token presented again also revokes its grant and
// every token of it; invalid_target or invalid_scope when resource or scope
// asks for more than the grant; unsupported_grant_type. Nothing is issued
// on any error.
func (s *Service) Token(ctx context.Context, r TokenRequest) (TokenResponse, error) {
	c, err := s.authenticateClient(ctx, r.Client)
	if err != nil {
		return TokenResponse{}, err
	}
	var raw, prefix string
	var kind SecretKind
	switch r.GrantType {
	case GrantAuthorizationCode:
		raw, prefix, kind = r.Code, CodePrefix, KindCode
	case GrantRefreshToken:
		raw, prefix, kind = r.RefreshToken, RefreshTokenPrefix, KindRefresh
	case "":
		return TokenResponse{}, refuse(ErrInvalidRequest, "grant_type is missing")
	default:
		return TokenResponse{}, refuse(ErrUnsupportedGrantType, "grant_type %q is not supported", clip(r.GrantType))
	}
	if !wellFormed(raw, prefix) {
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s is malformed", kind)
	}
	hash := HashSecret(raw)
	sec, g, err := s.store.Find(ctx, hash)
	switch {
	case failure.Is(err, failure.NotFound):
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s is unknown", kind)
	case err != nil:
		return TokenResponse{}, refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
	case sec.Kind != kind || g.ClientID != c.ID:
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s was not issued to this client", kind)
	case sec.UsedAt != nil:
		// A replay: end the family (Redeem revokes the grant of a spent
		// secret) and refuse.
		if err := s.store.Redeem(ctx, hash, s.now(), nil); err != nil && !failure.Is(err, failure.Conflict) {
			return TokenResponse{}, refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
		}
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s was already used; every token of its grant is revoked", kind)
	}
	now := s.now()
	switch {
	case !now.Before(sec.ExpiresAt):
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s expired", kind)
	case g.Revoked() || !now.Before(g.ExpiresAt):
		return TokenResponse{}, refuse(ErrInvalidGrant, "the grant is revoked or expired")
	}
	if kind == KindCode {
		if r.RedirectURI != sec.RedirectURI {
			return TokenResponse{}, refuse(ErrInvalidGrant, "redirect_uri differs from the authorization request's")
		}
		if !verifierMatches(r.CodeVerifier, sec.Challenge) {
			return TokenResponse{}, refuse(ErrInvalidGrant, "code_verifier does not match the code_challenge")
		}
	}
	if res, err := s.target(r.Resource); r.Resource != "" && (err != nil || res != g.Resource) {
		return TokenResponse{}, refuse(ErrInvalidTarget, "the grant is for %s", g.Resource)
	}
	if err := withinGrant(r.Scope, g.Scopes); err != nil {
		return TokenResponse{}, err
	}
	access, refresh := newSecret(AccessTokenPrefix), newSecret(RefreshTokenPrefix)
	refreshUntil := earlier(now.Add(RefreshTTL), g.ExpiresAt)
	issue := []Secret{
		{Hash: HashSecret(access), Kind: KindAccess, GrantID: g.ID, CreatedAt: now, ExpiresAt: earlier(now.Add(AccessTTL), g.ExpiresAt)},
		{Hash: HashSecret(refresh), Kind: KindRefresh, GrantID: g.ID, CreatedAt: now, ExpiresAt: refreshUntil},
	}
	switch err := s.store.Redeem(ctx, hash, now, issue); {
	case failure.Is(err, failure.Conflict):
		return TokenResponse{}, refuse(ErrInvalidGrant, "the %s was already used; every token of its grant is revoked", kind)
	case err != nil:
		return TokenResponse{}, refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
	}
	return TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(issue[0].ExpiresAt.Sub(now).Seconds()),
		RefreshToken: refresh, Scope: scopeString(g.Scopes)}, nil
}

// withinGrant checks a token request's scope parameter: every scope it
// names must be the grant's (offline_access aside). The tokens carry the
// grant's scopes, which the response's scope says.
func withinGrant(param string, granted []auth.Scope) error {
	for _, f := range strings.Fields(param) {
		if f != OfflineAccess && !slices.Contains(granted, auth.Scope(f)) {
			return refuse(ErrInvalidScope, "scope %q was not granted", clip(f))
		}
	}
	return nil
}

func scopeString(scopes []auth.Scope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, " ")
}

// verifierMatches reports whether verifier is a well-formed PKCE verifier
// (RFC 7636 §4.1: 43-128 unreserved characters) whose S256 challenge is
// challenge.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, r := range verifier {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// authenticateClient returns the client a request authenticates as.
// Errors: *Error invalid_client when it is unknown or revoked, a
// confidential client's secret is missing or wrong or came by the other
// method, or a public client sent a secret (it has none registered to
// check it against). A public client's Basic header with an empty
// password is its client_id alone: the go-sdk's CIMD client sends one
// (x/oauth2's auto-detected style tries the header first).
func (s *Service) authenticateClient(ctx context.Context, a ClientAuth) (Client, error) {
	if a.ID == "" || len(a.ID) > MaxURI {
		return Client{}, refuse(ErrInvalidClient, "client_id is missing")
	}
	c, err := s.store.Client(ctx, a.ID)
	switch {
	case failure.Is(err, failure.NotFound):
		return Client{}, refuse(ErrInvalidClient, "the client is not registered")
	case err != nil:
		return Client{}, refuse(ErrTemporarilyUnavailable, "the client store is unavailable")
	case c.Revoked():
		return Client{}, refuse(ErrInvalidClient, "the client is revoked")
	}
	switch c.AuthMethod {
	case AuthNone:
		if a.Secret != "" {
			return Client{}, refuse(ErrInvalidClient, "the client is public: it has no secret to send")
		}
		return c, nil
	case AuthClientSecretBasic, AuthClientSecretPost:
		if a.Basic != (c.AuthMethod == AuthClientSecretBasic) || !wellFormed(a.Secret, ClientSecretPrefix) ||
			subtle.ConstantTimeCompare([]byte(HashSecret(a.Secret)), []byte(c.SecretHash)) != 1 {
			return Client{}, refuse(ErrInvalidClient, "the client did not authenticate with its %s", c.AuthMethod)
		}
		return c, nil
	default:
		return Client{}, refuse(ErrInvalidClient, "the client's authentication method %q is not supported", c.AuthMethod)
	}
}

// Revoke revokes the token raw (RFC 7009): an access or refresh token of
// the authenticated client revokes its whole grant. A token that is
// unknown, malformed or already revoked is not an error (the answer is
// the same, so it reveals nothing).
//
// Errors: *Error invalid_client when the client fails to authenticate;
// unauthorized_client when the token is another client's.
func (s *Service) Revoke(ctx context.Context, a ClientAuth, raw string) error {
	c, err := s.authenticateClient(ctx, a)
	if err != nil {
		return err
	}
	if !wellFormed(raw, AccessTokenPrefix) && !wellFormed(raw, RefreshTokenPrefix) {
		return nil
	}
	sec, g, err := s.store.Find(ctx, HashSecret(raw))
	switch {
	case failure.Is(err, failure.NotFound):
		return nil
	case err != nil:
		return refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
	case sec.Kind == KindCode:
		return nil
	case g.ClientID != c.ID:
		return refuse(ErrUnauthorizedClient, "the token was not issued to this client")
	}
	if err := s.store.RevokeGrant(ctx, g.ID, s.now()); err != nil && !failure.Is(err, failure.NotFound) {
		return refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
	}
	return nil
}

// A Registration is a client registered by DCR (RFC 7591 §3.2.1).
type Registration struct {
	Client Client
	// Secret is the client secret, returned once; empty for a public
	// client.
	Secret string
}

// Register enrols a client by Dynamic Client Registration. The token
// endpoint method defaults to client_secret_basic (RFC 7591 §2); "none"
// makes a public client.
//
// Errors are *Error values: invalid_redirect_uri when redirect_uris is
// empty, longer than MaxRedirectURIs, or holds one that is not https or
// http loopback (or has a fragment or user info); invalid_client_metadata
// for a grant type, response type or auth method this server does not
// support, or a name longer than MaxClientName. Nothing is stored then.
func (s *Service) Register(ctx context.Context, m oauthex.ClientRegistrationMetadata) (Registration, error) {
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > MaxRedirectURIs {
		return Registration{}, refuse(ErrInvalidRedirectURI, "redirect_uris must hold 1 to %d URIs", MaxRedirectURIs)
	}
	for _, u := range m.RedirectURIs {
		if !validRedirectURI(u) {
			return Registration{}, refuse(ErrInvalidRedirectURI, "redirect URI %q must be https, or http on a loopback host, without a fragment", clip(u))
		}
	}
	for _, g := range m.GrantTypes {
		if g != GrantAuthorizationCode && g != GrantRefreshToken {
			return Registration{}, refuse(ErrInvalidClientMetadata, "grant type %q is not supported", clip(g))
		}
	}
	for _, r := range m.ResponseTypes {
		if r != "code" {
			return Registration{}, refuse(ErrInvalidClientMetadata, "response type %q is not supported", clip(r))
		}
	}
	if len(m.ClientName) > MaxClientName {
		return Registration{}, refuse(ErrInvalidClientMetadata, "client_name is longer than %d bytes", MaxClientName)
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = AuthClientSecretBasic
	}
	if method != AuthNone && method != AuthClientSecretBasic && method != AuthClientSecretPost {
		return Registration{}, refuse(ErrInvalidClientMetadata, "token_endpoint_auth_method %q is not supported", clip(method))
	}
	name := m.ClientName
	if name == "" {
		name = "unnamed client"
	}
	c := Client{ID: newID(ClientIDPrefix), Name: name, Enrolment: EnrolDCR, RedirectURIs: slices.Clone(m.RedirectURIs),
		AuthMethod: method, CreatedAt: s.now()}
	var secret string
	if method != AuthNone {
		secret = newSecret(ClientSecretPrefix)
		c.SecretHash = HashSecret(secret)
	}
	s.sweep(ctx, c.CreatedAt)
	if err := s.store.PutClient(ctx, c); err != nil {
		return Registration{}, refuse(ErrTemporarilyUnavailable, "the client store is unavailable")
	}
	return Registration{Client: c, Secret: secret}, nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
