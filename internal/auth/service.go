package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/webcodex/webcodex/internal/failure"
)

// BootstrapID is the principal id of the WEBCODEX_TOKEN credential.
const BootstrapID = "bootstrap"

// MinBootstrapLen is the shortest accepted bootstrap credential, in bytes.
const MinBootstrapLen = 16

// LastUsedGranularity is how stale a token's LastUsedAt may get before a
// successful authentication records the new time. It bounds the writes that
// authentication causes to one per token per interval.
const LastUsedGranularity = time.Minute

// bootstrapDomain separates the in-memory bootstrap digest from the stored
// token hashes.
const bootstrapDomain = "webcodex.bootstrap.v1\x00"

// Options configure a Service. The zero value is valid.
type Options struct {
	// Bootstrap is the WEBCODEX_TOKEN value. When non-empty, Authenticate
	// accepts exactly this value as the admin bootstrap principal. It must
	// be at least MinBootstrapLen bytes without white space or control
	// characters. The Service keeps only a digest of it; it is never
	// stored or logged.
	Bootstrap string
	// BootstrapDigest, used only when Bootstrap is empty, is the hex
	// digest of a bootstrap credential (BootstrapDigest): a verb that
	// answers for a server recognises the server's credential by it
	// without holding the value (ReadServedBootstrap).
	BootstrapDigest string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives warnings about best-effort bookkeeping (LastUsedAt
	// updates); nil discards them. Credentials are never logged.
	Logger *slog.Logger
	// CheckTools judges a token's tool profile (Token.Tools) at creation:
	// an error names the tool that is not one. Nil: a token cannot be
	// created with a tool profile.
	CheckTools func(tools []string) error
	// Consoles stores Runtime Console sessions; nil: console sign-in is
	// unavailable (see LoginConsole).
	Consoles ConsoleStore
}

// A Service issues, lists, revokes and authenticates API tokens over a
// Store. It is safe for concurrent use when its Store is.
type Service struct {
	store      Store
	now        func() time.Time
	log        *slog.Logger
	bootstrap  *[sha256.Size]byte // nil when disabled
	checkTools func([]string) error
	consoles   ConsoleStore
}

// NewService returns a Service over store. It returns
// failure.InvalidArguments when opts.Bootstrap is set but too short or
// contains white space or control characters (the message never includes
// the value).
func NewService(store Store, opts Options) (*Service, error) {
	s := &Service{store: store, now: opts.Now, log: opts.Logger, checkTools: opts.CheckTools, consoles: opts.Consoles}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Bootstrap != "" {
		if len(opts.Bootstrap) < MinBootstrapLen {
			return nil, failure.New(failure.InvalidArguments, "the bootstrap credential must be at least %d bytes", MinBootstrapLen)
		}
		if strings.IndexFunc(opts.Bootstrap, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return nil, failure.New(failure.InvalidArguments, "the bootstrap credential must not contain white space or control characters")
		}
		d := bootstrapDigest(opts.Bootstrap)
		s.bootstrap = &d
	} else if opts.BootstrapDigest != "" {
		b, err := hex.DecodeString(opts.BootstrapDigest)
		if err != nil || len(b) != sha256.Size {
			return nil, failure.New(failure.InvalidArguments, "the bootstrap digest must be %d hex digits", 2*sha256.Size)
		}
		s.bootstrap = (*[sha256.Size]byte)(b)
	}
	return s, nil
}

// BootstrapDigest is the hex digest by which a Service with Options
// Bootstrap v recognises v (domain-separated SHA-256).
func BootstrapDigest(v string) string {
	d := bootstrapDigest(v)
	return hex.EncodeToString(d[:])
}

func bootstrapDigest(v string) [sha256.Size]byte {
	return sha256.Sum256([]byte(bootstrapDomain + v))
}

// Store returns the underlying store.
func (s *Service) Store() Store { return s.store }

// BootstrapEnabled reports whether a bootstrap credential is configured.
func (s *Service) BootstrapEnabled() bool { return s.bootstrap != nil }

// CreateToken issues a new API token and returns the raw token, which is
// shown exactly once and never stored, together with its record.
//
// Errors: failure.InvalidArguments when name is not 1-64 characters (or has
// control characters or surrounding white space), owner is not 1-128
// characters, scopes is empty, or a scope is unknown (the message names it).
func (s *Service) CreateToken(ctx context.Context, name, owner string, scopes []Scope) (string, Token, error) {
	return s.CreateTokenWithTools(ctx, name, owner, scopes, nil)
}

// CreateTokenWithTools is CreateToken for a token with its own tool profile
// (Token.Tools; nil for the server's).
//
// Errors: those of CreateToken; failure.InvalidArguments when tools holds
// more than MaxTokenTools names, an empty, over-long or repeated name, or
// a name Options.CheckTools refuses (its message names it).
func (s *Service) CreateTokenWithTools(ctx context.Context, name, owner string, scopes []Scope, tools []string) (string, Token, error) {
	if err := s.validTools(tools); err != nil {
		return "", Token{}, err
	}
	if err := validLabel("name", name, MaxTokenName); err != nil {
		return "", Token{}, err
	}
	if err := validLabel("owner", owner, MaxOwner); err != nil {
		return "", Token{}, err
	}
	norm, err := NormalizeScopes(scopes)
	if err != nil {
		return "", Token{}, err
	}
	raw := newRawToken()
	t := Token{
		ID:        newTokenID(),
		Name:      name,
		Owner:     owner,
		Scopes:    norm,
		CreatedAt: s.clock(),
		Tools:     slices.Clone(tools),
		Kind:      KindAPIToken,
	}
	if err := s.store.Create(ctx, t, HashToken(raw)); err != nil {
		return "", Token{}, err
	}
	return raw, t, nil
}

func (s *Service) validTools(tools []string) error {
	if len(tools) == 0 {
		return nil
	}
	if len(tools) > MaxTokenTools {
		return failure.New(failure.InvalidArguments, "a tool profile names at most %d tools", MaxTokenTools)
	}
	for i, t := range tools {
		if t == "" || len(t) > MaxToolName || slices.Contains(tools[:i], t) {
			return failure.New(failure.InvalidArguments, "tool profile: %q is empty, longer than %d bytes or repeated", clipName(t), MaxToolName)
		}
	}
	if s.checkTools == nil {
		return failure.New(failure.InvalidArguments, "this service cannot check a tool profile")
	}
	if err := s.checkTools(tools); err != nil {
		return failure.New(failure.InvalidArguments, "tool profile: %v", err)
	}
	return nil
}

func clipName(s string) string {
	if len(s) > MaxToolName {
		return s[:MaxToolName] + "..."
	}
	return s
}

// ListTokens returns every token record, revoked ones included, ordered by
// creation time.
func (s *Service) ListTokens(ctx context.Context) ([]Token, error) {
	return s.store.List(ctx)
}

// RevokeToken revokes the token with id and returns its record. Revoking an
// already revoked token succeeds and keeps the first revocation time.
//
// Errors: failure.InvalidArguments when id is not a token id;
// failure.NotFound when no token has it.
func (s *Service) RevokeToken(ctx context.Context, id string) (Token, error) {
	if !ValidTokenID(id) {
		return Token{}, failure.New(failure.InvalidArguments, "token id %q must be %s followed by 16 lowercase hex digits", id, TokenIDPrefix)
	}
	return s.store.Revoke(ctx, id, s.clock())
}

// Authenticate returns the principal a raw credential stands for.
//
// The bootstrap credential (when configured) is compared in constant time
// and yields Principal{Kind: KindBootstrap, ID: BootstrapID, Owner:
// DefaultOwner, Scopes: [admin]}. A token yields Principal{Kind: the
// token's kind, ID: token id, Owner, Scopes, Tools, Project: the one
// project a project credential or project share reaches} and, at most once per
// LastUsedGranularity, records its LastUsedAt (best effort: a failed update
// is logged and does not fail authentication).
//
// Errors: failure.Unauthenticated for an empty, malformed, unknown,
// revoked or expired credential (the message never echoes it; an expired
// one is said to be "expired"); failure.Unavailable when the store cannot
// be read.
func (s *Service) Authenticate(ctx context.Context, raw string) (Principal, error) {
	if raw == "" {
		return Principal{}, failure.New(failure.Unauthenticated, "a bearer credential is required")
	}
	if s.bootstrap != nil {
		d := bootstrapDigest(raw)
		if subtle.ConstantTimeCompare(d[:], s.bootstrap[:]) == 1 {
			return Principal{Kind: KindBootstrap, ID: BootstrapID, Owner: DefaultOwner, Scopes: []Scope{ScopeAdmin}}, nil
		}
	}
	if !WellFormedToken(raw) {
		return Principal{}, failure.New(failure.Unauthenticated, "the bearer credential is not a valid token")
	}
	t, err := s.store.FindByHash(ctx, HashToken(raw))
	if failure.Is(err, failure.NotFound) {
		return Principal{}, failure.New(failure.Unauthenticated, "the bearer credential is unknown or revoked")
	}
	if err != nil {
		return Principal{}, failure.Wrap(failure.Unavailable, err, "the credential store is unavailable")
	}
	if t.Revoked() || t.Runner != "" {
		return Principal{}, failure.New(failure.Unauthenticated, "the bearer credential is unknown or revoked")
	}
	now := s.clock()
	if t.Expired(now) {
		return Principal{}, failure.New(failure.Unauthenticated, "the bearer credential expired")
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= LastUsedGranularity {
		// Detached: a client that hangs up must not undo bookkeeping for
		// a request that was already authenticated.
		if err := s.store.Touch(context.WithoutCancel(ctx), t.ID, now); err != nil {
			s.log.Warn("auth: recording token use failed", slog.String("token_id", t.ID), slog.Any("error", err))
		}
	}
	return tokenPrincipal(t), nil
}

// tokenPrincipal is the principal a token stands for: of the token's kind
// (KindAPIToken when it has none), reaching only the token's project when
// it is bound to one.
func tokenPrincipal(t Token) Principal {
	kind := t.Kind
	if kind == "" {
		kind = KindAPIToken
	}
	return Principal{Kind: kind, ID: t.ID, Owner: t.Owner, Scopes: slices.Clone(t.Scopes), Tools: slices.Clone(t.Tools), Project: t.Project}
}

// clock returns the current time in UTC without a monotonic reading, so
// that values round-trip through stores unchanged.
func (s *Service) clock() time.Time { return s.now().UTC().Round(0) }
