package authserver

import (
	"context"
	"encoding/base64"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/clientmeta"
)

// A Request is a validated authorization request, waiting for the
// person's decision.
type Request struct {
	Client Client
	// RedirectURI is the one the request named, matched against the
	// client's registered ones.
	RedirectURI string
	State       string
	// Scopes are what the client asks for (auth.DefaultScopes when it
	// named none).
	Scopes    []auth.Scope
	Resource  string
	Challenge string
}

// RedirectHost is the host the person is sent back to: what the consent
// page shows beside the client's name.
func (r Request) RedirectHost() string {
	u, err := url.Parse(r.RedirectURI)
	if err != nil {
		return ""
	}
	return u.Host
}

// authorizeParams are the parameters of an authorization request; each
// may appear at most once.
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "state", "scope",
	"code_challenge", "code_challenge_method", "resource"}

// Authorize validates an authorization request (the query of a GET, or
// the fields of the consent form posted back).
//
// A refusal with a zero Request (no RedirectURI) must be shown to the
// person and never redirected: the client or its redirect URI cannot be
// trusted (unknown or revoked client, redirect URI not registered byte for
// byte, a repeated client_id or redirect_uri). Any other refusal comes with
// the Request; the transport sends it to the client with ErrorRedirect.
// Errors are *Error values.
func (s *Service) Authorize(ctx context.Context, q url.Values) (Request, error) {
	for _, k := range []string{"client_id", "redirect_uri"} {
		if len(q[k]) > 1 {
			return Request{}, refuse(ErrInvalidRequest, "%s is repeated", k)
		}
	}
	c, err := s.client(ctx, q.Get("client_id"))
	if err != nil {
		return Request{}, err
	}
	uri := q.Get("redirect_uri")
	if uri == "" || len(uri) > MaxURI || !redirectMatches(c.RedirectURIs, uri) {
		return Request{}, refuse(ErrInvalidRequest, "redirect_uri is missing or not one registered for this client")
	}
	r := Request{Client: c, RedirectURI: uri}
	if st := q.Get("state"); len(st) <= MaxState {
		r.State = st
	}
	for _, k := range authorizeParams {
		if len(q[k]) > 1 {
			return r, refuse(ErrInvalidRequest, "%s is repeated", k)
		}
	}
	if len(q.Get("state")) > MaxState {
		return r, refuse(ErrInvalidRequest, "state is longer than %d bytes", MaxState)
	}
	if q.Get("response_type") != "code" {
		return r, refuse(ErrUnsupportedResponseType, "only response_type=code is supported")
	}
	switch q.Get("code_challenge_method") {
	case "S256":
	case "":
		return r, refuse(ErrInvalidRequest, "code_challenge_method=S256 is required (PKCE)")
	default:
		return r, refuse(ErrInvalidRequest, "code_challenge_method %q is not supported: only S256", clip(q.Get("code_challenge_method")))
	}
	r.Challenge = q.Get("code_challenge")
	if !wellFormedChallenge(r.Challenge) {
		return r, refuse(ErrInvalidRequest, "code_challenge must be the 43-character base64url SHA-256 of the verifier")
	}
	if r.Resource, err = s.target(q.Get("resource")); err != nil {
		return r, err
	}
	if r.Scopes, err = requestedScopes(q.Get("scope")); err != nil {
		return r, err
	}
	return r, nil
}

// client returns the enrolled client with id: a DCR client from the store,
// a CIMD client from the store while its document is fresh, else fetched.
// Errors: *Error invalid_client.
func (s *Service) client(ctx context.Context, id string) (Client, error) {
	if id == "" || len(id) > MaxURI {
		return Client{}, refuse(ErrInvalidClient, "client_id is missing or too long")
	}
	c, err := s.store.Client(ctx, id)
	known := err == nil
	switch {
	case err == nil && c.Revoked():
		return Client{}, refuse(ErrInvalidClient, "the client is revoked")
	case err == nil && (c.Enrolment == EnrolDCR || s.now().Before(c.FreshUntil)):
		return c, nil
	case err != nil && !failure.Is(err, failure.NotFound):
		return Client{}, refuse(ErrTemporarilyUnavailable, "the client store is unavailable")
	case s.docs == nil || !clientmeta.IsClientIDURL(id):
		return Client{}, refuse(ErrInvalidClient, "the client is not registered")
	}
	doc, fresh, err := s.docs.Fetch(ctx, id)
	if err != nil {
		return Client{}, refuse(ErrInvalidClient, "the client's metadata document was refused: %s", failure.MessageOf(err))
	}
	now := s.now()
	nc := Client{ID: id, Name: clip(doc.ClientName), Enrolment: EnrolCIMD, RedirectURIs: doc.RedirectURIs,
		AuthMethod: AuthNone, CreatedAt: now, FetchedAt: now, FreshUntil: fresh}
	if known {
		nc.CreatedAt = c.CreatedAt
	}
	if err := s.store.PutClient(ctx, nc); err != nil {
		if failure.Is(err, failure.Conflict) {
			return Client{}, refuse(ErrInvalidClient, "the client is revoked")
		}
		return Client{}, refuse(ErrTemporarilyUnavailable, "the client store is unavailable")
	}
	return nc, nil
}

// target returns the resource a request names: this server's resource
// when it names none, names it, or names the server's base (the issuer;
// Claude Code sends the origin, with a trailing slash): the server
// protects one resource, and the grant is bound to its canonical URL.
// Errors: *Error invalid_target for any other resource.
func (s *Service) target(resource string) (string, error) {
	if resource == "" {
		return s.resource, nil
	}
	if len(resource) > MaxURI || !oauthex.MatchesResource([]string{resource}, s.resource) &&
		!oauthex.MatchesResource([]string{resource}, s.issuer) {
		return "", refuse(ErrInvalidTarget, "resource must be %s", s.resource)
	}
	return s.resource, nil
}

// requestedScopes parses a scope parameter: auth.DefaultScopes when empty
// (a reconnecting client may send none), offline_access dropped. Errors:
// *Error invalid_scope for a scope this resource does not delegate.
func requestedScopes(param string) ([]auth.Scope, error) {
	var out []auth.Scope
	for _, f := range strings.Fields(param) {
		if f == OfflineAccess {
			continue
		}
		sc := auth.Scope(f)
		if !slices.Contains(auth.ResourceScopes, sc) {
			return nil, refuse(ErrInvalidScope, "scope %q is not one this server delegates", clip(f))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return slices.Clone(auth.DefaultScopes), nil
	}
	norm, err := auth.NormalizeScopes(out)
	if err != nil {
		return nil, refuse(ErrInvalidScope, "%s", failure.MessageOf(err))
	}
	return norm, nil
}

// Approval is the person's decision on a Request.
type Approval struct {
	// Approver is the signed-in person (a console principal).
	Approver auth.Principal
	// Project, when set, binds the grant to that one project (the
	// transport checks the approver can see it).
	Project string
}

// Approve records the person's consent to r as a grant and returns where
// to send the browser: r's redirect URI with a fresh code, r's state and
// this issuer (RFC 9207). The grant's scopes are those of r the approver
// holds.
//
// Errors: *Error access_denied when the approver holds none of r's
// scopes; invalid_client when the client was revoked meanwhile;
// temporarily_unavailable when the store fails. Nothing is stored then.
func (s *Service) Approve(ctx context.Context, r Request, a Approval) (string, error) {
	var scopes []auth.Scope
	for _, sc := range r.Scopes {
		if a.Approver.Has(sc) {
			scopes = append(scopes, sc)
		}
	}
	if len(scopes) == 0 {
		return "", refuse(ErrAccessDenied, "the approver holds none of the requested scopes")
	}
	now := s.now()
	g := Grant{ID: newID(GrantIDPrefix), ClientID: r.Client.ID, Owner: a.Approver.Owner, Subject: a.Approver.ID,
		Scopes: scopes, Resource: r.Resource, Project: a.Project, CreatedAt: now, ExpiresAt: now.Add(GrantTTL)}
	code := newSecret(CodePrefix)
	sec := Secret{Hash: HashSecret(code), Kind: KindCode, GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(CodeTTL),
		Challenge: r.Challenge, RedirectURI: r.RedirectURI}
	if err := s.store.CreateGrant(ctx, g, sec); err != nil {
		if failure.Is(err, failure.NotFound) {
			return "", refuse(ErrInvalidClient, "the client is revoked or no longer registered")
		}
		return "", refuse(ErrTemporarilyUnavailable, "the grant store is unavailable")
	}
	// After the grant, not before: the client holds it now, so a sweep
	// cannot delete a client nobody had approved yet (UnusedClientTTL) on
	// the way to its first approval.
	s.sweep(ctx, now)
	return s.redirect(r, url.Values{"code": {code}}), nil
}

// ErrorRedirect returns where to send the browser when r is refused (or
// denied: pass an *Error access_denied): r's redirect URI with the error,
// its description, r's state and this issuer.
func (s *Service) ErrorRedirect(r Request, err error) string {
	v := url.Values{"error": {string(CodeOf(err))}}
	if e, ok := err.(*Error); ok && e.Description != "" {
		v.Set("error_description", e.Description)
	}
	return s.redirect(r, v)
}

// Deny is the error a person's refusal sends.
var Deny = &Error{Code: ErrAccessDenied, Description: "the person denied the request"}

func (s *Service) redirect(r Request, v url.Values) string {
	if r.State != "" {
		v.Set("state", r.State)
	}
	v.Set("iss", s.issuer)
	u, _ := url.Parse(r.RedirectURI) // matched a registered URI: it parses
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redirectMatches reports whether got is one of registered byte for byte,
// or both are http loopback URIs (127.0.0.1, [::1] or localhost) that
// differ only in the port (RFC 8252 §7.3: a native client listens on an
// ephemeral port).
func redirectMatches(registered []string, got string) bool {
	if slices.Contains(registered, got) {
		return true
	}
	g, err := url.Parse(got)
	if err != nil || !loopbackHTTP(g) || strings.Contains(got, "#") { // an empty fragment parses as none
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err == nil && loopbackHTTP(u) && u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() &&
			u.RawQuery == g.RawQuery && u.User == nil && g.User == nil && !u.ForceQuery && !g.ForceQuery {
			return true
		}
	}
	return false
}

// loopbackHTTP reports whether u is an http URI of a loopback host without
// a fragment.
func loopbackHTTP(u *url.URL) bool {
	if u.Scheme != "http" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback() && (h == "127.0.0.1" || h == "::1")
}

// validRedirectURI reports whether a client may register uri: an absolute
// https URI, or an http loopback one, without a fragment or user info.
func validRedirectURI(uri string) bool {
	if uri == "" || len(uri) > MaxURI || strings.Contains(uri, "#") { // an empty fragment parses as none
		return false
	}
	u, err := url.Parse(uri)
	if err != nil || u.Fragment != "" || u.User != nil || u.Host == "" || u.Opaque != "" {
		return false
	}
	return u.Scheme == "https" || loopbackHTTP(u)
}

func wellFormedChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(c)
	return err == nil
}

// clip bounds a client-supplied value echoed in a message.
func clip(s string) string {
	if len(s) > MaxClientName {
		return s[:MaxClientName] + "..."
	}
	return s
}
