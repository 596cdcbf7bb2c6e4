// Package auth authenticates bearer credentials and describes the resulting
// principal: its kind, its authority group and its scopes.
//
// Credentials are wc_pat_ tokens stored only as SHA-256 hashes, plus the
// optional WEBCODEX_TOKEN bootstrap credential (admin, compared in constant
// time, never stored) and the local user of a stdio server. Every principal
// belongs to an authority group (its owner); Workflow Sessions remember only
// the domain-separated fingerprint of the group that created them.
//
// # Tokens
//
// A [Service] issues, lists, revokes and authenticates API tokens over a
// [Store] (auth/authdb is the SQLite one). A raw token is "wc_pat_" plus
// 43 base64url characters (256 random bits); it is returned once by
// [Service.CreateToken] and only its domain-separated SHA-256 ([HashToken])
// is stored. [Service.EnsureAdmin] creates the first-start admin credential
// file. [ParseBearer] reads an Authorization header.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// Scope is a permission a credential carries.
type Scope string

// The scopes of DESIGN.md §4.
const (
	ScopeRuntimeRead   Scope = "runtime:read"
	ScopeProjectRead   Scope = "project:read"
	ScopeProjectWrite  Scope = "project:write"
	ScopeJobRun        Scope = "job:run"
	ScopeMemoryRead    Scope = "memory:read"
	ScopeMemoryManage  Scope = "memory:manage"
	ScopeAccountManage Scope = "account:manage"
	// ScopeMetricsRead reads the server's Prometheus metrics (GET
	// /metrics) and nothing else; account:manage (and admin) imply it.
	ScopeMetricsRead Scope = "metrics:read"
	ScopeAdmin       Scope = "admin"
)

// AllScopes lists every scope, in a fixed order.
var AllScopes = []Scope{
	ScopeRuntimeRead, ScopeProjectRead, ScopeProjectWrite, ScopeJobRun,
	ScopeMemoryRead, ScopeMemoryManage, ScopeMetricsRead, ScopeAccountManage, ScopeAdmin,
}

// ResourceScopes are the scopes a delegated client (an OAuth client of a
// hosted agent) may ask this resource for: those of the agent tools, in a
// fixed order. They are the protected resource metadata's
// scopes_supported (RFC 9728). account:manage and admin are the
// operator's: a token created with them holds them, but they are never
// advertised for delegation.
var ResourceScopes = []Scope{
	ScopeRuntimeRead, ScopeProjectRead, ScopeProjectWrite, ScopeJobRun,
	ScopeMemoryRead, ScopeMemoryManage,
}

// DefaultScopes are the scopes of a credential created without naming
// any (webcodex token create), and the scope hint of a 401 challenge,
// whose operation is not known: the coding loop's reading and writing.
// Running jobs and memory are asked for by a step-up (a 403
// insufficient_scope challenge names them) when a call needs them.
var DefaultScopes = []Scope{ScopeProjectRead, ScopeProjectWrite, ScopeRuntimeRead}

// ValidScope reports whether s is a known scope.
func ValidScope(s Scope) bool { return slices.Contains(AllScopes, s) }

// Kind is the canonical credential kind of a principal.
type Kind string

// Principal kinds: the canonical credential kinds Action Audit snapshots
// (the values of the reference server's principal_kind).
const (
	// KindAPIToken is a direct runtime credential (a wc_pat_ token made by
	// `webcodex token create`).
	KindAPIToken  Kind = "api_token"
	KindBootstrap Kind = "bootstrap"
	KindLocal     Kind = "local"
	// KindProjectCredential is a temporary token bound to exactly one
	// project, with an expiry (what `webcodex share` hands out).
	KindProjectCredential Kind = "project-credential"
	// KindProjectShare is a revocable token granting scoped access to one
	// project to another authority group (the token's owner is the
	// grantee's group).
	KindProjectShare Kind = "project-share"
)

// DefaultOwner is the authority group of the local user: the first-start
// admin credential, WEBCODEX_TOKEN and stdio all belong to it.
const DefaultOwner = "local"

// A Principal is an authenticated caller.
type Principal struct {
	Kind Kind `json:"kind"`
	// ID identifies the credential (token id, "bootstrap" or "local").
	ID string `json:"id"`
	// Owner is the authority group the credential belongs to.
	Owner  string  `json:"owner"`
	Scopes []Scope `json:"scopes"`
	// Tools is the credential's tool profile (Token.Tools); empty for the
	// server's.
	Tools []string `json:"tools,omitempty"`
	// Project, when set, is the one project the credential reaches (a
	// ProjectCredential, a Project Share, an OAuth grant bound to one
	// project): every other project is refused to it.
	Project string `json:"project,omitempty"`
	// OAuthClientID is the OAuth client the credential was issued to, for
	// a token of the built-in authorization server; empty otherwise. It is
	// snapshotted into Action Audit events (spec §2).
	OAuthClientID string `json:"oauth_client_id,omitempty"`
}

// Has reports whether p holds scope s. admin implies every scope.
func (p Principal) Has(s Scope) bool {
	return slices.Contains(p.Scopes, ScopeAdmin) || slices.Contains(p.Scopes, s)
}

// Missing returns the scopes of need that p does not hold, in need's order
// (none when p holds admin).
func (p Principal) Missing(need []Scope) []Scope {
	var missing []Scope
	for _, s := range need {
		if !p.Has(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// fingerprintDomain separates authority fingerprints from every other
// SHA-256 use in WebCodex.
const fingerprintDomain = "webcodex.authority-group.v1"

// AuthorityFingerprint returns the lowercase hex, domain-separated SHA-256
// fingerprint of p's authority group. It is stable across credentials of the
// same owner and reveals nothing about the credential itself.
func (p Principal) AuthorityFingerprint() string {
	return Fingerprint(p.Owner)
}

// Fingerprint returns the authority fingerprint of an owner.
func Fingerprint(owner string) string {
	h := sha256.New()
	writeField(h, fingerprintDomain)
	writeField(h, owner)
	return hex.EncodeToString(h.Sum(nil))
}

func writeField(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// LocalUser is the principal of a process started by the local user (stdio
// and CLI commands that open the data directory directly).
func LocalUser() Principal {
	return Principal{Kind: KindLocal, ID: "local", Owner: DefaultOwner, Scopes: []Scope{ScopeAdmin}}
}

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
