package auth

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
)

// Project-bound credentials (issue 26; spec §1 Project Memory, §2
// Identity). A project credential and a project share are wc_pat_ tokens
// whose principal reaches exactly one project (Principal.Project): every
// other project is refused to it. Neither ever carries a Memory scope, nor
// account:manage or admin: only a direct runtime credential (an API
// token) does. A project credential belongs to the project's own authority
// group and always expires; a project share belongs to the grantee's group
// and expires only when given an expiry. Both are revoked like any token.
const (
	// DefaultProjectCredentialTTL is the lifetime of a project credential
	// created without one.
	DefaultProjectCredentialTTL = 24 * time.Hour
	// MaxProjectCredentialTTL bounds the lifetime of a project credential.
	MaxProjectCredentialTTL = 7 * 24 * time.Hour
	// MaxTokenProject bounds the project id a token is bound to, in
	// characters.
	MaxTokenProject = 256
)

// ProjectScopes are the scopes a project-bound credential may carry, in
// AllScopes order, and those it gets when created without naming any: the
// coding loop on its one project (reading, writing, running jobs) and the
// runtime's own status. Memory, account and admin scopes are never among
// them (spec: project-bound credentials do not gain Memory scopes from
// project scopes).
var ProjectScopes = []Scope{ScopeRuntimeRead, ScopeProjectRead, ScopeProjectWrite, ScopeJobRun}

// projectBound reports whether a token of kind k reaches only its project.
func projectBound(k Kind) bool { return k == KindProjectCredential || k == KindProjectShare }

// CreateProjectCredential issues a project credential: a token of the
// authority group owner that reaches only project and expires ttl from
// now (DefaultProjectCredentialTTL when ttl is 0). name may be empty (it
// then says the kind and the project). scopes nil or empty means
// ProjectScopes. It returns the raw token, shown once, and its record.
//
// Errors: failure.InvalidArguments when project is empty or longer than
// MaxTokenProject characters, ttl is negative or above
// MaxProjectCredentialTTL, a scope is unknown or outside ProjectScopes
// (the message and the "scope" detail name it: memory:read, memory:manage,
// account:manage and admin are refused), or name or owner is invalid.
func (s *Service) CreateProjectCredential(ctx context.Context, name, owner, project string, scopes []Scope, ttl time.Duration) (string, Token, error) {
	if ttl == 0 {
		ttl = DefaultProjectCredentialTTL
	}
	if ttl < 0 || ttl > MaxProjectCredentialTTL {
		return "", Token{}, failure.New(failure.InvalidArguments, "a project credential lasts more than 0 and at most %s, not %s", MaxProjectCredentialTTL, ttl)
	}
	expires := s.clock().Add(ttl)
	return s.createProjectBound(ctx, KindProjectCredential, name, owner, project, scopes, &expires)
}

// CreateProjectShare issues a project share: a token of the grantee's
// authority group that reaches only project, even when the project belongs
// to another authority group (the caller has checked that whoever shares
// it can see it). expiresAt nil means it lasts until revoked. name may be
// empty; scopes nil or empty means ProjectScopes. It returns the raw
// token, shown once, and its record.
//
// Errors: failure.InvalidArguments when project is empty or too long,
// expiresAt is not in the future, a scope is unknown or outside
// ProjectScopes (named as by CreateProjectCredential), or name or grantee
// is invalid.
func (s *Service) CreateProjectShare(ctx context.Context, name, grantee, project string, scopes []Scope, expiresAt *time.Time) (string, Token, error) {
	if expiresAt != nil {
		e := expiresAt.UTC().Round(0)
		if !e.After(s.clock()) {
			return "", Token{}, failure.New(failure.InvalidArguments, "a project share's expiry %s is not in the future", e.Format(time.RFC3339))
		}
		expiresAt = &e
	}
	return s.createProjectBound(ctx, KindProjectShare, name, grantee, project, scopes, expiresAt)
}

func (s *Service) createProjectBound(ctx context.Context, kind Kind, name, owner, project string, scopes []Scope, expires *time.Time) (string, Token, error) {
	if project == "" {
		return "", Token{}, failure.New(failure.InvalidArguments, "a %s needs the project it reaches", kind)
	}
	if err := validLabel("project", project, MaxTokenProject); err != nil {
		return "", Token{}, err
	}
	if name == "" {
		name = clipRunes(fmt.Sprintf("%s %s", kind, project), MaxTokenName)
	}
	if err := validLabel("name", name, MaxTokenName); err != nil {
		return "", Token{}, err
	}
	if err := validLabel("owner", owner, MaxOwner); err != nil {
		return "", Token{}, err
	}
	norm, err := projectScopes(kind, scopes)
	if err != nil {
		return "", Token{}, err
	}
	raw := newRawToken()
	t := Token{ID: newTokenID(), Name: name, Owner: owner, Scopes: norm, CreatedAt: s.clock(),
		Kind: kind, Project: project, ExpiresAt: expires}
	if err := s.store.Create(ctx, t, HashToken(raw)); err != nil {
		return "", Token{}, err
	}
	return raw, t, nil
}

// projectScopes normalizes the scopes of a project-bound credential of
// kind k: ProjectScopes when none are named, otherwise each must be one
// of ProjectScopes.
func projectScopes(k Kind, scopes []Scope) ([]Scope, error) {
	if len(scopes) == 0 {
		return slices.Clone(ProjectScopes), nil
	}
	norm, err := NormalizeScopes(scopes)
	if err != nil {
		return nil, err
	}
	for _, sc := range norm {
		if !slices.Contains(ProjectScopes, sc) {
			return nil, failure.New(failure.InvalidArguments, "a %s cannot carry scope %s: only a direct API token does", k, sc).
				WithDetail("scope", string(sc))
		}
	}
	return norm, nil
}

// clipRunes returns s cut to at most n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
