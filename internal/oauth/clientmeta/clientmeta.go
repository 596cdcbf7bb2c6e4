// Package clientmeta fetches and validates OAuth Client ID Metadata
// Documents (draft-ietf-oauth-client-id-metadata-document; the enrolment the
// MCP 2026-07-28 authorization profile prefers): a client whose client_id is
// an https URL with a path publishes its metadata at that URL, and the
// authorization server fetches it instead of registering the client.
//
// [Fetcher.Fetch] GETs the URL and returns a [Document] only when every rule
// below holds; otherwise it returns a *failure.Error whose message says what
// was wrong, names no server address and never quotes the body, so it is
// safe to show to the client:
//
//   - The URL is a client id URL ([IsClientIDURL]): https, a host, a path
//     other than "/", no userinfo, no fragment, no "." or ".." segment,
//     printable ASCII, at most [MaxURL] bytes.
//   - The connection goes only to a public address: the address dialled
//     (after DNS resolution, so a name that resolves or rebinds to an
//     internal address is still refused) is checked, and loopback, private
//     (RFC 1918), shared (CGNAT 100.64/10), link-local, unique-local,
//     multicast, unspecified, documentation and other reserved ranges, and
//     IPv4-mapped forms of them, are refused unless [Options.AllowPrivate].
//     No proxy from the environment is used.
//   - TLS verifies (at least TLS 1.2); no redirect is followed; the answer
//     is 200 with a Content-Type of application/json (parameters such as
//     charset allowed); the whole fetch, body included, takes at most
//     [FetchTimeout]; the body is at most [MaxDocumentBytes] (a larger one
//     is refused, never truncated) and the response headers at most
//     [MaxHeaderBytes].
//   - The body is one JSON object in UTF-8, no member twice, whose
//     client_id equals the URL byte for byte (no normalisation), whose
//     client_name is non-empty, at most [MaxClientName] bytes and free of
//     control characters, whose redirect_uris has 1 to [MaxRedirectURIs]
//     entries, each an absolute URI of at most [MaxURI] bytes without a
//     fragment or userinfo that is https, or http on a loopback host
//     (localhost, 127.0.0.1, [::1]; any port), with no custom scheme; which
//     has no client_secret or client_secret_expires_at member (a public
//     document cannot carry a secret); and whose token_endpoint_auth_method,
//     if present, is "none" or "private_key_jwt". Unknown members are
//     ignored.
//
// Failure kinds: failure.InvalidArguments for a URL that is not a client id
// URL and for a document that breaks a rule (including an oversized body or
// a wrong Content-Type); failure.PermissionDenied for a URL whose host
// resolves only to refused addresses (nothing is sent to it);
// failure.Unavailable for a network or TLS error, a timeout, a redirect or
// any status other than 200.
//
// The package keeps no cache: Fetch returns, with the document, the time
// until which it may be used without fetching again, computed by HTTP
// caching rules ([Freshness]); the caller stores the document with it. It
// imports no transport of WebCodex: it is an HTTP client of the outside
// world only.
package clientmeta

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of a fetch.
const (
	// FetchTimeout bounds one whole fetch: connecting, TLS, the request,
	// the response headers and the body.
	FetchTimeout = 5 * time.Second
	// MaxDocumentBytes bounds the document's body. It is generous (64 KiB):
	// claude.ai's document broke a 5 KB cap elsewhere (cloudflare/mcp#46).
	MaxDocumentBytes = 64 << 10
	// MaxHeaderBytes bounds the response headers.
	MaxHeaderBytes = 16 << 10
)

// Bounds of a document; they equal the authorization server's bounds of a
// client (authserver.MaxClientName, MaxRedirectURIs, MaxURI; a test checks
// it).
const (
	// MaxURL bounds a client id URL, in bytes.
	MaxURL = 2048
	// MaxClientName bounds client_name, in bytes.
	MaxClientName = 128
	// MaxRedirectURIs bounds the entries of redirect_uris.
	MaxRedirectURIs = 16
	// MaxURI bounds each redirect URI, client_uri and logo_uri, in bytes.
	MaxURI = 2048
)

// Cache lifetimes of a fetched document (see [Freshness]).
const (
	// MinCacheTTL is the least time a document is used before it is
	// fetched again, even when its response says no-store or no-cache or
	// is already stale: it bounds how often one client id makes the server
	// fetch.
	MinCacheTTL = time.Minute
	// MaxCacheTTL is the most time a document is used before it is
	// fetched again, whatever its response says: a client's changed or
	// withdrawn redirect URIs take effect within it.
	MaxCacheTTL = 24 * time.Hour
	// DefaultCacheTTL is the lifetime of a document whose response has
	// neither Cache-Control max-age nor Expires.
	DefaultCacheTTL = time.Hour
)

// Token endpoint authentication methods a document may name.
const (
	// AuthNone: a public client. It is also what a document that names no
	// method gets: the draft forbids every method built on a shared secret,
	// so RFC 7591's default (client_secret_basic) cannot apply.
	AuthNone = "none"
	// AuthPrivateKeyJWT: the client would authenticate with a JWT signed
	// by a key it publishes. WebCodex verifies no client assertions, so the
	// authorization server treats such a client as public (PKCE binds its
	// codes); the document is accepted because ChatGPT's prefers the
	// method yet lists "none" too.
	AuthPrivateKeyJWT = "private_key_jwt"
)

// Document is a validated client metadata document.
type Document struct {
	// ClientID is the URL the document was fetched from, which equals its
	// client_id member byte for byte.
	ClientID   string
	ClientName string
	// RedirectURIs are the document's, as written (not normalised), in
	// its order; each is https, or http on a loopback host.
	RedirectURIs []string
	// TokenEndpointAuthMethod is AuthNone or AuthPrivateKeyJWT: the
	// document's value, or AuthNone when it names none. Either way the
	// client is public to WebCodex (see AuthPrivateKeyJWT).
	TokenEndpointAuthMethod string
	// GrantTypes and ResponseTypes are the document's lists as written, nil
	// when absent; this package does not judge them.
	GrantTypes, ResponseTypes []string
	// ClientURI and LogoURI are the document's when each is an absolute
	// https URL of at most MaxURI bytes, and "" otherwise: they are only
	// shown, so a bad one is dropped rather than refusing the client.
	ClientURI, LogoURI string
}

// Options configure a [Fetcher].
type Options struct {
	// AllowPrivate lets the fetcher reach loopback, private, link-local
	// and other non-public addresses (tests, and an operator who runs
	// clients on their LAN). Off: every such address is refused, checked
	// on the dialed IP (after DNS resolution, so DNS rebinding cannot
	// bypass it).
	AllowPrivate bool
	// RootCAs, when non-nil, are the roots for TLS (tests use
	// httptest.NewTLSServer's certificate); nil means the system roots.
	RootCAs *x509.CertPool
	// Now is the clock of freshness times; nil means time.Now.
	Now func() time.Time
}

// A Fetcher fetches client metadata documents. It is safe for concurrent
// use.
type Fetcher struct {
	client  *http.Client
	now     func() time.Time
	timeout time.Duration // FetchTimeout; tests shorten it
}

// New returns a Fetcher configured by o.
func New(o Options) *Fetcher {
	dialer := &net.Dialer{Timeout: FetchTimeout}
	if !o.AllowPrivate {
		dialer.Control = refuseNonPublic
	}
	transport := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    FetchTimeout,
		ResponseHeaderTimeout:  FetchTimeout,
		MaxResponseHeaderBytes: MaxHeaderBytes,
		ForceAttemptHTTP2:      true,
		// Documents are fetched rarely (they are cached for at least
		// MinCacheTTL); an idle connection is not worth keeping.
		DisableKeepAlives: true,
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Fetcher{
		client: &http.Client{
			Transport: transport,
			// A redirect is refused, not followed: its target is never
			// requested.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now:     now,
		timeout: FetchTimeout,
	}
}

// Fetch GETs the document at id and validates it; freshUntil is when it
// must be fetched again. On error doc and freshUntil are zero. Errors (see
// the package comment): failure.InvalidArguments, failure.PermissionDenied,
// failure.Unavailable.
func (f *Fetcher) Fetch(ctx context.Context, id string) (doc Document, freshUntil time.Time, err error) {
	if err := checkClientIDURL(id); err != nil {
		return Document{}, time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Document{}, time.Time{}, failure.Wrap(failure.InvalidArguments, err, "client_id %s is not a URL that can be fetched", quote(id))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err == nil && ctx.Err() != nil {
		// The answer came as the bound ran out (the transport can hand
		// over a response the server sent once the cancelled request's
		// connection closed): the fetch took too long all the same.
		resp.Body.Close()
		err = ctx.Err()
	}
	if err != nil {
		return Document{}, time.Time{}, f.fetchError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return Document{}, time.Time{}, failure.New(failure.Unavailable,
				"the client metadata document answered a redirect (HTTP %d); redirects are not followed", resp.StatusCode)
		}
		return Document{}, time.Time{}, failure.New(failure.Unavailable,
			"the client metadata document answered HTTP %d; want 200", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return Document{}, time.Time{}, failure.New(failure.InvalidArguments,
			"the client metadata document's Content-Type is %s; want application/json", quote(resp.Header.Get("Content-Type")))
	}
	if resp.ContentLength > MaxDocumentBytes {
		return Document{}, time.Time{}, tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return Document{}, time.Time{}, f.fetchError(ctx, err)
	}
	if len(body) > MaxDocumentBytes {
		return Document{}, time.Time{}, tooLarge()
	}
	doc, err = parseDocument(id, body)
	if err != nil {
		return Document{}, time.Time{}, err
	}
	now := f.now()
	return doc, now.Add(Freshness(resp.Header, now)), nil
}

func tooLarge() error {
	return failure.New(failure.InvalidArguments, "the client metadata document is larger than %d bytes", MaxDocumentBytes)
}

// fetchError maps an error of the request or of reading the body to a
// failure whose message names no address and no internal detail (the cause
// is wrapped, never shown).
func (f *Fetcher) fetchError(ctx context.Context, err error) error {
	var refused *refusedAddrError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &refused):
		return failure.Wrap(failure.PermissionDenied, err,
			"the client metadata URL's host resolves to a non-public address; it is not fetched")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return failure.Wrap(failure.Unavailable, err,
			"fetching the client metadata document took longer than %v", f.timeout)
	case ctx.Err() != nil:
		return failure.Wrap(failure.Unavailable, err, "fetching the client metadata document was cancelled")
	case errors.As(err, &dnsErr):
		return failure.Wrap(failure.Unavailable, err, "the client metadata URL's host name did not resolve")
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return failure.Wrap(failure.Unavailable, err, "the client metadata URL's TLS certificate did not verify")
	default:
		return failure.Wrap(failure.Unavailable, err, "the client metadata document could not be fetched")
	}
}

// quote returns s quoted for a message, cut to MaxURL bytes.
func quote(s string) string {
	if len(s) > MaxURL {
		return strconv.Quote(s[:MaxURL]) + "…"
	}
	return strconv.Quote(s)
}

// errorf is failure.New(failure.InvalidArguments, …) for a document rule.
func errorf(format string, args ...any) error {
	return failure.New(failure.InvalidArguments, "client metadata document: %s", fmt.Sprintf(format, args...))
}
