package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Console sign-in (decision 0038). A person signs in to the Runtime
// Console with an API token; the console then holds a random cookie value
// whose domain-separated hash names a row of the console session table.
// The row remembers the hash of the token it was opened with, so every
// request is judged against the token as it is now: a revoked token ends
// its console sessions at once, and the principal's scopes and authority
// group are the token's.
const (
	// ConsoleSessionTTL is how long a console session lasts from sign-in
	// (an absolute expiry; it is not extended by use).
	ConsoleSessionTTL = 12 * time.Hour
	// ConsoleCookiePrefix starts every console cookie value.
	ConsoleCookiePrefix = "wc_con_"
)

// consoleSecretBytes is the entropy of a console cookie value.
const consoleSecretBytes = 32

// consoleHashDomain and csrfDomain separate the console's hashes from
// every other SHA-256 use in WebCodex.
const (
	consoleHashDomain = "webcodex.console-session.v1\x00"
	csrfDomain        = "webcodex.console-csrf.v1"
)

// A ConsoleSession is the stored record of one console sign-in. It never
// holds the cookie value or the raw token.
type ConsoleSession struct {
	// Hash is HashConsoleCookie of the cookie value.
	Hash string
	// TokenHash is the stored hash (HashToken) of the token signed in with.
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ConsoleStore persists console sessions. Every mutating method returns
// only after its change is durable.
type ConsoleStore interface {
	// CreateConsole inserts s and deletes every session expired at
	// s.CreatedAt. failure.InvalidArguments when s.Hash or s.TokenHash is
	// empty; failure.Conflict when a session has s.Hash.
	CreateConsole(ctx context.Context, s ConsoleSession) error
	// FindConsole returns the session with hash; failure.NotFound when
	// there is none.
	FindConsole(ctx context.Context, hash string) (ConsoleSession, error)
	// DeleteConsole deletes the session with hash (none is not an error).
	DeleteConsole(ctx context.Context, hash string) error
}

// HashConsoleCookie returns the lowercase hex, domain-separated SHA-256
// under which a console cookie value is stored.
func HashConsoleCookie(cookie string) string {
	sum := sha256.Sum256([]byte(consoleHashDomain + cookie))
	return hex.EncodeToString(sum[:])
}

// ConsoleCSRF returns the CSRF token of the console session whose cookie
// value is cookie: an HMAC of a fixed label keyed by the cookie value, so
// it is bound to that session, needs no storage, and cannot be computed
// without the cookie.
func ConsoleCSRF(cookie string) string {
	m := hmac.New(sha256.New, []byte(cookie))
	m.Write([]byte(csrfDomain))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckConsoleCSRF reports whether got is the CSRF token of cookie
// (compared in constant time).
func CheckConsoleCSRF(cookie, got string) bool {
	return got != "" && hmac.Equal([]byte(ConsoleCSRF(cookie)), []byte(got))
}

// wellFormedConsoleCookie reports whether v has the shape of a console
// cookie value.
func wellFormedConsoleCookie(v string) bool {
	s, ok := strings.CutPrefix(v, ConsoleCookiePrefix)
	if !ok || len(s) != base64.RawURLEncoding.EncodedLen(consoleSecretBytes) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == consoleSecretBytes
}

// ConsoleLogin is the result of a console sign-in.
type ConsoleLogin struct {
	// Cookie is the cookie value, returned once and never stored.
	Cookie    string
	Principal Principal
	ExpiresAt time.Time
}

// LoginConsole opens a console session for the API token raw.
//
// Errors: failure.Unauthenticated when raw is not a valid, unrevoked API
// token (the bootstrap credential cannot sign in: it is never stored, so
// no console session could be judged against it later; nor can a project
// credential or project share, which reach one project, not the console's
// every project); failure.Unavailable
// when the service has no console store or a store cannot be reached.
func (s *Service) LoginConsole(ctx context.Context, raw string) (ConsoleLogin, error) {
	if s.consoles == nil {
		return ConsoleLogin{}, failure.New(failure.Unavailable, "console sign-in is not configured")
	}
	p, err := s.Authenticate(ctx, raw)
	if err != nil {
		return ConsoleLogin{}, err
	}
	if p.Kind != KindAPIToken {
		return ConsoleLogin{}, failure.New(failure.Unauthenticated, "the console takes an API token (%s... made by webcodex token create), not a %s", TokenPrefix, p.Kind)
	}
	b := make([]byte, consoleSecretBytes)
	rand.Read(b)
	cookie := ConsoleCookiePrefix + base64.RawURLEncoding.EncodeToString(b)
	now := s.clock()
	row := ConsoleSession{Hash: HashConsoleCookie(cookie), TokenHash: HashToken(raw), CreatedAt: now, ExpiresAt: now.Add(ConsoleSessionTTL)}
	if err := s.consoles.CreateConsole(ctx, row); err != nil {
		return ConsoleLogin{}, failure.Wrap(failure.Unavailable, err, "the console session store is unavailable")
	}
	return ConsoleLogin{Cookie: cookie, Principal: p, ExpiresAt: row.ExpiresAt}, nil
}

// ConsolePrincipal returns the principal of the console session whose
// cookie value is cookie: the principal of its token as the token is now.
//
// Errors: failure.Unauthenticated when the cookie is malformed, unknown
// (forged, or signed out), expired, or its token is revoked;
// failure.Unavailable when a store cannot be read.
func (s *Service) ConsolePrincipal(ctx context.Context, cookie string) (Principal, error) {
	if s.consoles == nil {
		return Principal{}, failure.New(failure.Unavailable, "console sign-in is not configured")
	}
	if !wellFormedConsoleCookie(cookie) {
		return Principal{}, failure.New(failure.Unauthenticated, "not a console session")
	}
	row, err := s.consoles.FindConsole(ctx, HashConsoleCookie(cookie))
	if failure.Is(err, failure.NotFound) {
		return Principal{}, failure.New(failure.Unauthenticated, "the console session is unknown or signed out")
	}
	if err != nil {
		return Principal{}, failure.Wrap(failure.Unavailable, err, "the console session store is unavailable")
	}
	if !s.clock().Before(row.ExpiresAt) {
		return Principal{}, failure.New(failure.Unauthenticated, "the console session expired")
	}
	t, err := s.store.FindByHash(ctx, row.TokenHash)
	if failure.Is(err, failure.NotFound) || err == nil && (t.Revoked() || t.Expired(s.clock()) || tokenPrincipal(t).Kind != KindAPIToken) {
		return Principal{}, failure.New(failure.Unauthenticated, "the console session's token is unknown or revoked")
	}
	if err != nil {
		return Principal{}, failure.Wrap(failure.Unavailable, err, "the credential store is unavailable")
	}
	return tokenPrincipal(t), nil
}

// LogoutConsole deletes the console session whose cookie value is cookie
// (an unknown or malformed one is not an error: there is nothing to end).
func (s *Service) LogoutConsole(ctx context.Context, cookie string) error {
	if s.consoles == nil || !wellFormedConsoleCookie(cookie) {
		return nil
	}
	return s.consoles.DeleteConsole(ctx, HashConsoleCookie(cookie))
}
