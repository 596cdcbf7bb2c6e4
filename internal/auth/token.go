package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
)

// TokenPrefix starts every raw API token.
const TokenPrefix = "wc_pat_"

// tokenSecretBytes is the entropy of a raw token: 256 bits, written as 43
// unpadded base64url characters after TokenPrefix.
const tokenSecretBytes = 32

// rawTokenLen is the exact length of a well-formed raw token.
var rawTokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenSecretBytes)

// TokenIDPrefix starts every token id; 16 lowercase hex digits follow.
const TokenIDPrefix = "tok_"

// MaxTokenName and MaxOwner bound a token's name and owner, in characters.
const (
	MaxTokenName = 64
	MaxOwner     = 128
)

// tokenHashDomain separates stored token hashes from every other SHA-256
// use in WebCodex.
const tokenHashDomain = "webcodex.token.v1\x00"

// A Token is the stored record of an API credential. It never holds the raw
// token or its hash.
type Token struct {
	// ID is "tok_" followed by 16 lowercase hex digits; it is not secret.
	ID string `json:"id"`
	// Name is a human label, 1-64 characters.
	Name string `json:"name"`
	// Owner is the authority group the credential belongs to.
	Owner string `json:"owner"`
	// Scopes are the permissions the credential carries, deduplicated, in
	// AllScopes order.
	Scopes    []Scope   `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is set once the token is revoked; a revoked token never
	// authenticates again.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// LastUsedAt is the time of a recent successful authentication, kept at
	// LastUsedGranularity.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// Tools is the token's tool profile, what MCP tools/list shows its
	// caller: empty for the server's profile, one name "core" or "full"
	// for that profile, or the tools to list (decision 0024). It changes
	// what is listed, never what may be called.
	Tools []string `json:"tools,omitempty"`
	// Runner is the client id of the `webcodex runner` a runner token
	// (RunnerTokenPrefix) authenticates; empty for an API token.
	Runner string `json:"runner,omitempty"`
	// Kind is the credential kind of the principal the token stands for:
	// KindAPIToken (a direct runtime credential; also every runner token
	// and every token created before kinds existed), KindProjectCredential
	// or KindProjectShare.
	Kind Kind `json:"kind"`
	// Project is the one project a project-bound token (a project
	// credential or a project share) reaches; empty for an API token.
	Project string `json:"project,omitempty"`
	// ExpiresAt is when the token stops authenticating; nil: never (an API
	// token, a project share created without an expiry).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// MaxTokenTools bounds the names of a token's tool profile, and
// MaxToolName one name, in bytes.
const (
	MaxTokenTools = 64
	MaxToolName   = 64
)

// Revoked reports whether t has been revoked.
func (t Token) Revoked() bool { return t.RevokedAt != nil }

// Expired reports whether t has an expiry at or before now.
func (t Token) Expired(now time.Time) bool { return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt) }

// Store persists API tokens. Implementations store the hash they are given
// and never see a raw token. Every mutating method returns only after its
// change is durable.
type Store interface {
	// Create inserts t with the token hash (an empty Kind is stored, and
	// read back, as KindAPIToken). failure.InvalidArguments when the id
	// or the hash is empty; failure.Conflict when the id or the hash
	// already exists.
	Create(ctx context.Context, t Token, hash string) error
	// List returns every token, revoked ones included, ordered by creation
	// time and then id.
	List(ctx context.Context) ([]Token, error)
	// Revoke sets RevokedAt to at unless the token is already revoked (the
	// first revocation time is kept) and returns the token.
	// failure.NotFound when the id is unknown.
	Revoke(ctx context.Context, id string, at time.Time) (Token, error)
	// FindByHash returns the token with the hash, revoked or not.
	// failure.NotFound when no token has it.
	FindByHash(ctx context.Context, hash string) (Token, error)
	// Touch records a successful use at time at, unless the stored
	// LastUsedAt is already at or after it. failure.NotFound when the id is
	// unknown.
	Touch(ctx context.Context, id string, at time.Time) error
}

// HashToken returns the lowercase hex, domain-separated SHA-256 hash under
// which a raw token is stored.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(tokenHashDomain + raw))
	return hex.EncodeToString(sum[:])
}

// WellFormedToken reports whether raw has the exact shape of an API token:
// TokenPrefix followed by the canonical unpadded base64url encoding of 32
// bytes. It says nothing about whether the token exists.
func WellFormedToken(raw string) bool {
	if len(raw) != rawTokenLen || !strings.HasPrefix(raw, TokenPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(raw[len(TokenPrefix):])
	return err == nil && len(b) == tokenSecretBytes
}

// ValidTokenID reports whether id has the shape of a token id.
func ValidTokenID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, TokenIDPrefix)
	if !ok || len(hexPart) != 16 {
		return false
	}
	for _, c := range []byte(hexPart) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newRawToken returns a fresh raw token with 256 random bits.
func newRawToken() string {
	b := make([]byte, tokenSecretBytes)
	rand.Read(b) // never fails (crypto/rand panics instead)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// newTokenID returns a fresh token id with 64 random bits.
func newTokenID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return TokenIDPrefix + hex.EncodeToString(b)
}

// NormalizeScopes validates scopes and returns them deduplicated in
// AllScopes order. failure.InvalidArguments names the first unknown scope,
// or reports an empty list.
func NormalizeScopes(scopes []Scope) ([]Scope, error) {
	if len(scopes) == 0 {
		return nil, failure.New(failure.InvalidArguments, "at least one scope is required")
	}
	for _, s := range scopes {
		if !ValidScope(s) {
			return nil, failure.New(failure.InvalidArguments, "unknown scope %q", string(s)).
				WithDetail("scope", string(s))
		}
	}
	out := make([]Scope, 0, len(scopes))
	for _, s := range AllScopes {
		if slices.Contains(scopes, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseScopes parses a comma- or space-separated scope list (as given on a
// command line) and normalizes it with NormalizeScopes.
func ParseScopes(list string) ([]Scope, error) {
	fields := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	scopes := make([]Scope, len(fields))
	for i, f := range fields {
		scopes[i] = Scope(f)
	}
	return NormalizeScopes(scopes)
}

// validLabel checks a token name or owner: valid UTF-8, 1..max characters,
// no control characters, no surrounding white space.
func validLabel(what, s string, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return failure.New(failure.InvalidArguments, "token %s is not valid UTF-8", what)
	case n == 0 || n > max:
		return failure.New(failure.InvalidArguments, "token %s must be 1-%d characters", what, max)
	case strings.TrimSpace(s) != s:
		return failure.New(failure.InvalidArguments, "token %s must not start or end with white space", what)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return failure.New(failure.InvalidArguments, "token %s must not contain control characters", what)
	}
	return nil
}

// ParseBearer extracts the credential from an Authorization header value of
// the form "Bearer <credential>". The scheme is matched case-insensitively;
// surrounding spaces are ignored. It reports false for any other scheme, an
// empty credential, or a credential containing white space.
func ParseBearer(header string) (string, bool) {
	header = strings.TrimSpace(header)
	const scheme = "bearer"
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", false
	}
	rest := header[len(scheme):]
	if rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	cred := strings.TrimLeft(rest, " \t")
	if cred == "" || strings.IndexFunc(cred, unicode.IsSpace) >= 0 {
		return "", false
	}
	return cred, true
}
