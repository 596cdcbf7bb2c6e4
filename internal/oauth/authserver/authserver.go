// Package authserver is WebCodex's built-in OAuth 2.1 authorization server
// (issue 26, decision 0069): what a person who runs WebCodex for themselves
// uses to connect hosted agents (ChatGPT, claude.ai, Claude Code, Codex) to
// it through the MCP authorization profile.
//
// It issues opaque tokens for one resource (the server's MCP URL) by the
// authorization code grant with PKCE S256 only, enrols clients by Client ID
// Metadata Document or by Dynamic Client Registration (RFC 7591), rotates
// refresh tokens on use and revokes a grant's whole family when a code or a
// refresh token is presented twice, and revokes on request (RFC 7009).
// Every code, token and client secret is stored only as a domain-separated
// SHA-256 hash.
//
// A consent is a [Grant]: who approved (an authority group), which client,
// which scopes, which resource and, optionally, the one project it is bound
// to. Its codes, access tokens and refresh tokens are [Secret] rows of the
// grant; revoking the grant revokes them all.
//
// The package is a domain: it knows OAuth's parameters and error codes but
// no HTTP. The transport (transport/oauthhttp) parses requests into the
// typed requests here and writes the answers and redirects.
package authserver

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
)

// Lifetimes of what the server issues.
const (
	// CodeTTL is how long an authorization code may be redeemed.
	CodeTTL = 5 * time.Minute
	// AccessTTL is the lifetime of an access token (short-lived: a client
	// refreshes).
	AccessTTL = time.Hour
	// RefreshTTL is the lifetime of one refresh token; each use rotates it
	// and the new one lives RefreshTTL again, up to the grant's expiry.
	RefreshTTL = 30 * 24 * time.Hour
	// GrantTTL is the absolute lifetime of a grant: after it the person
	// approves again.
	GrantTTL = 90 * 24 * time.Hour
	// UnusedClientTTL is how long an unrevoked client that holds no grant
	// is kept: registration is open to anyone, so a client nobody
	// approved is deleted after it (a CIMD client is fetched again when
	// it returns; a DCR client registers again).
	UnusedClientTTL = 24 * time.Hour
)

// Bounds of what a client may register or ask for.
const (
	// MaxClientName bounds a client's name, in bytes.
	MaxClientName = 128
	// MaxRedirectURIs bounds the redirect URIs of one client.
	MaxRedirectURIs = 16
	// MaxURI bounds a redirect URI, a client id URL and a resource, in
	// bytes.
	MaxURI = 2048
	// MaxState bounds the state parameter echoed to the client, in bytes.
	MaxState = 1024
)

// Prefixes of the secrets the server issues; 43 base64url characters (256
// random bits) follow each.
const (
	CodePrefix         = "wc_oac_"
	AccessTokenPrefix  = "wc_oat_"
	RefreshTokenPrefix = "wc_ort_"
	ClientSecretPrefix = "wc_csec_"
	// ClientIDPrefix starts the id of a client enrolled by DCR; 16
	// lowercase hex digits follow. A CIMD client's id is its https URL.
	ClientIDPrefix = "wc_client_"
	// GrantIDPrefix starts a grant id; 16 lowercase hex digits follow.
	GrantIDPrefix = "grt_"
)

// PrincipalKind is the auth.Kind of a principal authenticated by an access
// token of this server ("oauth2", the reference server's principal_kind,
// as for an external issuer's tokens).
const PrincipalKind auth.Kind = "oauth2"

// Enrolment is how a client became known.
type Enrolment string

// Enrolments.
const (
	// EnrolCIMD: the client id is the https URL of its Client ID Metadata
	// Document, fetched and cached.
	EnrolCIMD Enrolment = "cimd"
	// EnrolDCR: the client registered itself (RFC 7591).
	EnrolDCR Enrolment = "dcr"
)

// Client authentication methods at the token endpoint.
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
)

// A Client is an enrolled OAuth client.
type Client struct {
	// ID is the client_id: "wc_client_…" for DCR, the document's URL for
	// CIMD.
	ID        string    `json:"client_id"`
	Name      string    `json:"client_name"`
	Enrolment Enrolment `json:"enrolment"`
	// RedirectURIs are matched exactly, except that a loopback redirect's
	// port may differ (RFC 8252 §7.3).
	RedirectURIs []string `json:"redirect_uris"`
	// AuthMethod is how it authenticates at the token endpoint (AuthNone
	// for a public client).
	AuthMethod string `json:"token_endpoint_auth_method"`
	// SecretHash is HashSecret of its client secret; empty for a public
	// client. Never shown.
	SecretHash string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	// FetchedAt and FreshUntil are a CIMD client's document cache times;
	// zero for DCR.
	FetchedAt  time.Time `json:"-"`
	FreshUntil time.Time `json:"-"`
}

// Revoked reports whether the client is revoked.
func (c Client) Revoked() bool { return c.RevokedAt != nil }

// A Grant is one consent: a person (Owner) let a client act on a resource
// with scopes, optionally on one project only. Its codes and tokens form
// one family: revoking the grant revokes them all.
type Grant struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	// Owner is the authority group of the person who approved.
	Owner string `json:"owner"`
	// Subject is the credential id of the console session that approved.
	Subject  string       `json:"subject"`
	Scopes   []auth.Scope `json:"scopes"`
	Resource string       `json:"resource"`
	// Project, when set, is the one project the grant reaches.
	Project   string     `json:"project,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Revoked reports whether the grant is revoked.
func (g Grant) Revoked() bool { return g.RevokedAt != nil }

// SecretKind is what a Secret is.
type SecretKind string

// Secret kinds.
const (
	KindCode    SecretKind = "code"
	KindAccess  SecretKind = "access"
	KindRefresh SecretKind = "refresh"
)

// A Secret is the stored record of a code or token of a grant: its hash,
// never the value.
type Secret struct {
	Hash      string
	Kind      SecretKind
	GrantID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when a code or refresh token was redeemed (each once).
	UsedAt *time.Time
	// Challenge and RedirectURI are a code's PKCE S256 challenge and the
	// redirect URI it was sent to.
	Challenge   string
	RedirectURI string
}

// Store persists clients, grants and secrets. Every mutating method returns
// only after its change is durable.
type Store interface {
	// PutClient inserts c, or, when an unrevoked client has its id,
	// replaces its name, redirect URIs, auth method and cache times (a
	// CIMD document fetched again). Errors: failure.Conflict when a
	// revoked client has the id (a revoked client stays revoked).
	PutClient(ctx context.Context, c Client) error
	// Client returns the client with id. Errors: failure.NotFound.
	Client(ctx context.Context, id string) (Client, error)
	// Clients returns every client, revoked ones included, by creation
	// time.
	Clients(ctx context.Context) ([]Client, error)
	// RevokeClient revokes the client with id and every grant of it at
	// at, and returns the client (a revoked one keeps its first
	// revocation time). Errors: failure.NotFound.
	RevokeClient(ctx context.Context, id string, at time.Time) (Client, error)
	// CreateGrant stores g and its first authorization code in one
	// transaction. Errors: failure.NotFound when g's client does not
	// exist or is revoked.
	CreateGrant(ctx context.Context, g Grant, code Secret) error
	// Find returns the secret with hash and its grant. Errors:
	// failure.NotFound.
	Find(ctx context.Context, hash string) (Secret, Grant, error)
	// Redeem marks the unused secret with hash used at at and stores
	// issue, in one transaction. When the secret was already used it
	// instead revokes its grant at at (a replayed code or refresh token
	// ends the family) and returns failure.Conflict; failure.NotFound
	// when there is no such secret.
	Redeem(ctx context.Context, hash string, at time.Time, issue []Secret) error
	// RevokeGrant revokes the grant with id at at (already revoked: no
	// change). Errors: failure.NotFound.
	RevokeGrant(ctx context.Context, id string, at time.Time) error
	// Sweep deletes unspent secrets that expired before t, grants revoked
	// or expired before t with all their secrets, and unrevoked clients
	// created before t-UnusedClientTTL that hold no grant, and returns how
	// many rows it deleted. A spent code or refresh token is kept while its
	// grant lives, so that presenting it again is always recognised as a
	// replay.
	Sweep(ctx context.Context, t time.Time) (int64, error)
}
