package accesstoken

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// A Reason says why a token was refused. It is safe to show to the caller
// (as an error_description) and to log.
type Reason string

// Reasons of a refusal.
const (
	ReasonMalformed   Reason = "malformed"
	ReasonTooLarge    Reason = "too_large"
	ReasonAlgorithm   Reason = "algorithm_not_allowed"
	ReasonSignature   Reason = "bad_signature"
	ReasonIssuer      Reason = "wrong_issuer"
	ReasonAudience    Reason = "wrong_audience"
	ReasonNoExpiry    Reason = "missing_expiry"
	ReasonExpired     Reason = "expired"
	ReasonNotYetValid Reason = "not_yet_valid"
	ReasonSubject     Reason = "missing_subject"
	ReasonScope       Reason = "malformed_scope"
	// ReasonIssuerUnavailable comes with failure.Unavailable: the issuer's
	// metadata or keys could not be fetched within the bounds.
	ReasonIssuerUnavailable Reason = "issuer_unavailable"
)

// A Rejection is the cause inside every error Verify returns.
type Rejection struct {
	Reason Reason
	Err    error
}

// Error implements error.
func (r *Rejection) Error() string {
	if r.Err != nil {
		return fmt.Sprintf("%s: %v", r.Reason, r.Err)
	}
	return string(r.Reason)
}

// Unwrap returns the underlying cause.
func (r *Rejection) Unwrap() error { return r.Err }

// ReasonOf returns the Reason of an error Verify returned, or "" when err
// carries none.
func ReasonOf(err error) Reason {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// reject returns the failure.Unauthenticated error of a refused token.
func reject(r Reason, cause error, format string, args ...any) error {
	return failure.Wrap(failure.Unauthenticated, &Rejection{Reason: r, Err: cause}, format, args...).
		WithDetail("reason", string(r))
}

// unavailable returns the failure.Unavailable error of an issuer that could
// not be reached.
func unavailable(cause error) error {
	return failure.Wrap(failure.Unavailable, &Rejection{Reason: ReasonIssuerUnavailable, Err: cause},
		"the authorization server's metadata or keys could not be fetched").
		WithDetail("reason", string(ReasonIssuerUnavailable))
}

// MaxScopeNames bounds the scope names read from one token.
const MaxScopeNames = 64

// scopeNames reads the `scope` claim (a space-separated string or an array
// of strings) and the `scp` claim (the same shapes), merged.
func scopeNames(claims ...json.RawMessage) ([]string, error) {
	var names []string
	for _, c := range claims {
		if len(c) == 0 || string(c) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(c, &s) == nil {
			names = append(names, strings.Fields(s)...)
			continue
		}
		var list []string
		if err := json.Unmarshal(c, &list); err != nil {
			return nil, reject(ReasonScope, err, "the access token's scope is neither a string nor a list of strings")
		}
		names = append(names, list...)
	}
	if len(names) > MaxScopeNames {
		return nil, reject(ReasonScope, nil, "the access token names more than %d scopes", MaxScopeNames)
	}
	return names, nil
}

// MapScopes maps an OAuth token's scope names to WebCodex scopes, in
// auth.AllScopes order without duplicates. Names that are not WebCodex
// scopes are ignored; `admin` is never granted to an OAuth token (it would
// imply every scope); memory:read and memory:manage are granted only when
// named: no project scope implies them (spec §1: OAuth client scope sets do
// not gain the memory scopes from project scopes). The result is never nil.
func MapScopes(names []string) []auth.Scope {
	out := []auth.Scope{}
	for _, s := range auth.AllScopes {
		if s != auth.ScopeAdmin && slices.Contains(names, string(s)) {
			out = append(out, s)
		}
	}
	return out
}

// ownerDomain separates OAuth owners from every other SHA-256 use.
const ownerDomain = "webcodex.oauth-owner.v1\x00"

// OwnerPrefix starts the authority group (auth.Principal.Owner) of every
// OAuth subject.
const OwnerPrefix = "oauth:"

// Owner returns the authority group of subject sub of issuer iss:
// OwnerPrefix and 32 hex digits of a domain-separated SHA-256 of both. It is
// stable for a subject, distinct across issuers, and within auth.MaxOwner.
func Owner(iss, sub string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s%d:%s%d:%s", ownerDomain, len(iss), iss, len(sub), sub)
	return OwnerPrefix + hex.EncodeToString(h.Sum(nil))[:32]
}
