// Package httpserver builds WebCodex's HTTP handler stack: request limits,
// Origin and DNS-rebinding protection, bearer authentication and bounded
// concurrency, around the routes the transports register.
//
// Transports register their routes on a [Mux]; routes are public (no
// credential, e.g. /healthz) or authenticated (the principal is in the
// request context, see [auth.PrincipalFrom]).
package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// Limits of the HTTP surface.
const (
	// MaxBodyBytes bounds one request body (4 MiB).
	MaxBodyBytes = 4 << 20
	// MaxConcurrent bounds requests served at once; more get 503.
	MaxConcurrent = 64
)

// Authenticator turns a raw bearer credential into a principal, returning
// failure.Unauthenticated when it is not valid.
type Authenticator interface {
	Authenticate(ctx context.Context, raw string) (auth.Principal, error)
}

// Options configure the handler stack.
type Options struct {
	Auth Authenticator
	// AllowedOrigins lists browser origins (scheme://host[:port]) allowed
	// to call the API; requests without an Origin header are not affected.
	AllowedOrigins []string
	// LoopbackOnly enables DNS-rebinding protection: the Host header must
	// name a loopback address, localhost or one of PublicHosts.
	LoopbackOnly bool
	// PublicHosts are host names (no port; compared case-insensitively,
	// on any port) the server is reached by besides loopback, e.g. the
	// host of the configured public URL behind a tunnel.
	PublicHosts []string
	Logger      *slog.Logger
}

// Mux collects the routes of every transport.
type Mux struct {
	opts   Options
	public *http.ServeMux
	authed *http.ServeMux
	sem    chan struct{}
}

// NewMux returns an empty Mux.
func NewMux(o Options) *Mux {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Mux{opts: o, public: http.NewServeMux(), authed: http.NewServeMux(), sem: make(chan struct{}, MaxConcurrent)}
}

// Public registers a route that needs no credential.
func (m *Mux) Public(pattern string, h http.Handler) { m.public.Handle(pattern, h) }

// Authenticated registers a route that needs a valid bearer credential.
func (m *Mux) Authenticated(pattern string, h http.Handler) { m.authed.Handle(pattern, h) }

// Handler returns the complete handler stack.
func (m *Mux) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case m.sem <- struct{}{}:
			defer func() { <-m.sem }()
		default:
			WriteError(w, http.StatusServiceUnavailable, failure.New(failure.Unavailable, "too many concurrent requests"))
			return
		}
		if m.opts.LoopbackOnly && !loopbackHost(r.Host) && !m.publicHost(r.Host) {
			WriteError(w, http.StatusForbidden, failure.New(failure.PermissionDenied, "host %q is not allowed (DNS-rebinding protection)", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !m.originAllowed(origin, r.Host) {
			WriteError(w, http.StatusForbidden, failure.New(failure.PermissionDenied, "origin %q is not allowed", origin))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if h, pattern := m.public.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		if _, pattern := m.authed.Handler(r); pattern == "" {
			WriteError(w, http.StatusNotFound, failure.New(failure.NotFound, "no route for %s %s", r.Method, r.URL.Path))
			return
		}
		raw, ok := auth.ParseBearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="webcodex"`)
			WriteError(w, http.StatusUnauthorized, failure.New(failure.Unauthenticated, "a bearer credential is required"))
			return
		}
		p, err := m.opts.Auth.Authenticate(r.Context(), raw)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="webcodex", error="invalid_token"`)
			if failure.KindOf(err) != failure.Unauthenticated {
				m.opts.Logger.Error("authenticate", "err", err)
				WriteError(w, http.StatusServiceUnavailable, failure.New(failure.Unavailable, "credential store unavailable"))
				return
			}
			WriteError(w, http.StatusUnauthorized, failure.New(failure.Unauthenticated, "the bearer credential is not valid"))
			return
		}
		// The body is read here, once: handlers get the bytes (Body) and a
		// reader over the same bytes for code that wants one (the go-sdk).
		body, err := io.ReadAll(r.Body)
		if err != nil {
			if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
				WriteError(w, http.StatusRequestEntityTooLarge, failure.New(failure.RequestTooLarge, "request body exceeds %d bytes", mbe.Limit))
				return
			}
			WriteError(w, http.StatusBadRequest, failure.New(failure.InvalidArguments, "cannot read request body"))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		ctx := context.WithValue(auth.WithPrincipal(r.Context(), p), bodyKey{}, body)
		m.authed.ServeHTTP(w, r.WithContext(ctx))
	})
}

type bodyKey struct{}

// Body returns the body of an authenticated request as the Mux read it
// (at most MaxBodyBytes; an oversized body was answered 413
// request_too_large, an unreadable one 400, before any handler ran). It is
// nil for a request that did not come through the Mux's authenticated
// routes.
func Body(r *http.Request) []byte {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return b
}

func (m *Mux) originAllowed(origin, host string) bool {
	if slices.Contains(m.opts.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == host && (u.Scheme == "http" || u.Scheme == "https")
}

// publicHost reports whether the Host header names one of PublicHosts.
func (m *Mux) publicHost(hostport string) bool {
	host := hostName(hostport)
	return slices.ContainsFunc(m.opts.PublicHosts, func(h string) bool { return strings.EqualFold(h, host) })
}

// hostName is the host of a Host header, without port or IPv6 brackets.
func hostName(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.Trim(host, "[]")
}

func loopbackHost(hostport string) bool {
	host := hostName(hostport)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrorBody is the JSON body of a non-tool HTTP error. It has the shape of
// a failed ToolResult so clients parse one format.
type ErrorBody struct {
	Success bool        `json:"success"`
	Error   ErrorDetail `json:"error"`
}

// ErrorDetail is the error member of ErrorBody.
type ErrorDetail struct {
	Kind    failure.Kind `json:"kind"`
	Message string       `json:"message"`
}

// WriteError writes err as a JSON error with the given status.
func WriteError(w http.ResponseWriter, status int, err error) {
	WriteJSON(w, status, ErrorBody{Error: ErrorDetail{Kind: failure.KindOf(err), Message: failure.MessageOf(err)}})
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := EncodeJSON(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, failure.Wrap(failure.Internal, err, "response not serializable"))
		return
	}
	WriteJSONBytes(w, status, b)
}

// EncodeJSON is the JSON encoding of every response body: no HTML
// escaping, no trailing newline.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteJSONBytes writes b, a body from EncodeJSON, with status and a
// trailing newline.
func WriteJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// StatusFor is the HTTP status of a request that fails with kind k outside
// a tool result (the status column of failure's one table).
func StatusFor(k failure.Kind) int { return failure.ClassOf(k).HTTPStatus }
