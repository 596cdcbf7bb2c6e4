// Package httpserver builds WebCodex's HTTP handler stack: request limits,
// Origin and DNS-rebinding protection, bearer authentication and bounded
// concurrency, around the routes the transports register.
//
// Transports register their routes on a [Mux]; routes are always served
// (/healthz, outside every limit), public (no credential, e.g.
// /openapi.json), discovery (public and readable from any origin: the
// OAuth protected resource metadata) or authenticated (the principal is in
// the request context, see [auth.PrincipalFrom]). A refused credential, a
// missing one and a missing scope are answered with an RFC 6750 Bearer
// challenge that names the resource metadata (Options.ResourceMetadata;
// see [InsufficientScopeChallenge] for the 403 step-up). An authenticated request holds a
// slot of its principal's share from the end of the credential check to
// its response, except while its call waits (see [admission.BeginWait]).
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
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/admission"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/requestid"
	"github.com/webcodex/webcodex/internal/telemetry"
)

// Limits of the HTTP surface. A full pool refuses at once (503
// unavailable); a caller over its share of request slots waits in a short
// queue of its own (RequestQueueWait) and then gets 429
// too_many_requests; over its other shares it gets 429 at once. Every
// refusal carries Retry-After. A principal here is an authority group
// (auth.Principal.Owner): its credentials share one share.
const (
	// MaxBodyBytes bounds one request body (4 MiB).
	MaxBodyBytes = 4 << 20
	// MaxConcurrent bounds the authenticated requests served at once, all
	// principals together, from the end of the credential check (the body
	// read included) to the response.
	MaxConcurrent = 64
	// MaxPerPrincipal bounds the authenticated requests one principal has
	// in flight (the default of Options.PerPrincipal, config
	// requests_per_principal): one caller cannot take all MaxConcurrent
	// slots.
	MaxPerPrincipal = 16
	// RequestQueueWait bounds how long a request over its principal's
	// share waits for one of the principal's slots (first come, first
	// served) before it is refused 429. As many requests may wait as the
	// share holds; one more is refused at once.
	RequestQueueWait = 2 * time.Second
	// MaxAuthenticating bounds requests in the credential check (a
	// credential store lookup; no body has been read). A request waits
	// up to AuthWait for one of these slots (the check itself is short;
	// a burst of requests must not be refused for it), then gets 503.
	MaxAuthenticating = 32
	AuthWait          = 5 * time.Second
	// MaxPublic bounds requests to public routes (openapi.json); routes
	// registered with Always take no slot at all.
	MaxPublic = 16
	// MaxWaiters bounds the bounded waits in progress (see
	// admission.BeginWait), all principals together; a waiting call holds
	// a waiter slot instead of its request slot.
	MaxWaiters = 256
	// MaxWaitersPerPrincipal bounds one principal's waits in progress.
	MaxWaitersPerPrincipal = 8
	// BodyTimeout bounds the time from the end of the credential check to
	// the last byte of the body: a slow body holds its principal's slot at
	// most this long and is then answered 408.
	BodyTimeout = 20 * time.Second
	// RetryAfterSeconds is the Retry-After of a refusal by a pool.
	RetryAfterSeconds = 1
)

// Authenticator turns a raw bearer credential into a principal, returning
// failure.Unauthenticated when it is not valid (answered 401 with
// error="invalid_token") and any other error when it cannot judge (503).
// It is where OAuth access tokens join the API tokens: a verifier that
// checks a token's issuer, audience (the resource of
// resourcemeta.For), expiry and revocation, and returns a principal whose
// scopes are the token's, sits behind it; the challenges and scope checks
// after it are the same for every credential (decision 0067).
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
	// BodyTimeout overrides the package's BodyTimeout when positive.
	BodyTimeout time.Duration
	// PerPrincipal overrides MaxPerPrincipal when positive (at most
	// MaxConcurrent).
	PerPrincipal int
	// QueueWait overrides RequestQueueWait when positive.
	QueueWait time.Duration
	// ResourceMetadata is the URL of the protected resource metadata
	// (RFC 9728) that every Bearer challenge names as resource_metadata,
	// so that an OAuth client discovers from a 401 or 403 where to get a
	// token; empty: challenges name none.
	ResourceMetadata string
	// ChallengeScopes is the scope hint of a 401 challenge, whose
	// operation is not known yet (auth.DefaultScopes); empty: none.
	ChallengeScopes []auth.Scope
	Logger          *slog.Logger
	// Tracing, when set, gets a server span per request to a public,
	// discovery or authenticated route (Always routes get none); nil is
	// tracing off.
	Tracing *telemetry.Tracing
}

// Mux collects the routes of every transport.
type Mux struct {
	opts      Options
	always    *http.ServeMux
	discovery *http.ServeMux
	public    *http.ServeMux
	authed    *http.ServeMux

	authenticating chan struct{}
	publicSlots    *admission.Pool
	requests       *admission.Pool
	waiters        *admission.Pool

	// transports names the transport of each authenticated pattern and
	// inUse counts the request slots each transport holds; both are
	// written only while routes are registered, before serving.
	transports map[string]string
	inUse      map[string]*atomic.Int64
}

// Transports of the authenticated routes, the label of
// Slots.ByTransport.
const (
	// TransportMCP is MCP over HTTP.
	TransportMCP = "mcp"
	// TransportREST is the REST API: GPT Actions, the console's API,
	// operators' endpoints.
	TransportREST = "rest"
)

// NewMux returns an empty Mux.
func NewMux(o Options) *Mux {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = BodyTimeout
	}
	if o.PerPrincipal <= 0 || o.PerPrincipal > MaxConcurrent {
		o.PerPrincipal = MaxPerPrincipal
	}
	if o.QueueWait <= 0 {
		o.QueueWait = RequestQueueWait
	}
	return &Mux{
		opts: o, always: http.NewServeMux(), discovery: http.NewServeMux(), public: http.NewServeMux(), authed: http.NewServeMux(),
		authenticating: make(chan struct{}, MaxAuthenticating),
		publicSlots:    admission.NewPool("public request slots", MaxPublic, 0),
		requests: admission.NewQueuedPool("request slots", MaxConcurrent, o.PerPrincipal,
			admission.Queue{Depth: o.PerPrincipal, Wait: o.QueueWait}),
		waiters:    admission.NewPool("waiting calls", MaxWaiters, MaxWaitersPerPrincipal),
		transports: map[string]string{},
		inUse:      map[string]*atomic.Int64{TransportMCP: {}, TransportREST: {}},
	}
}

// Queued returns how many requests of the principal owner wait for one of
// its request slots.
func (m *Mux) Queued(owner string) int { return m.requests.Waiting(owner) }

// Slots are the request slots a Mux's pools hold at one moment.
type Slots struct {
	// Authenticated are the slots of authenticated requests (MCP over
	// HTTP, REST, the console's API: one pool), Public those of public
	// and discovery routes, Waiting the waiter slots of calls in a
	// bounded wait.
	Authenticated, Public, Waiting int
	// ByTransport splits Authenticated by transport (TransportMCP,
	// TransportREST).
	ByTransport map[string]int
}

// InUse returns the slots held now (a gauge for /metrics).
func (m *Mux) InUse() Slots {
	a, _ := m.requests.Held("")
	p, _ := m.publicSlots.Held("")
	w, _ := m.waiters.Held("")
	by := make(map[string]int, len(m.inUse))
	for t, n := range m.inUse {
		by[t] = int(n.Load())
	}
	return Slots{Authenticated: a, Public: p, Waiting: w, ByTransport: by}
}

// Always registers a public route that is served before and outside every
// pool, so that it is never refused for capacity: its handler must be
// cheap and bounded (e.g. /healthz).
func (m *Mux) Always(pattern string, h http.Handler) { m.always.Handle(pattern, h) }

// Public registers a route that needs no credential; at most MaxPublic
// such requests are served at once.
func (m *Mux) Public(pattern string, h http.Handler) { m.public.Handle(pattern, h) }

// Discovery registers a public route that any origin may call: what a
// browser-based client uses cross-origin before it holds a credential
// (OAuth metadata, and the token, registration and revocation endpoints
// of the built-in authorization server). It is exempt from the Origin
// check only (the Host check still applies), takes a public slot like
// Public, and its handler answers the CORS preflight itself. It must
// never act on an ambient credential (a cookie): every request carries
// its own proof, so a cross-origin caller gains nothing it could not do
// directly.
func (m *Mux) Discovery(pattern string, h http.Handler) { m.discovery.Handle(pattern, h) }

// Authenticated registers a route that needs a valid bearer credential.
func (m *Mux) Authenticated(pattern string, h http.Handler) {
	m.AuthenticatedTransport(TransportREST, pattern, h)
}

// AuthenticatedTransport is Authenticated for a route of transport t
// (TransportMCP or TransportREST), whose request slots Slots.ByTransport
// counts. Another t panics, as a bad pattern does.
func (m *Mux) AuthenticatedTransport(t, pattern string, h http.Handler) {
	if m.inUse[t] == nil {
		panic("httpserver: unknown transport " + strconv.Quote(t))
	}
	m.transports[pattern] = t
	m.authed.Handle(pattern, h)
}

// Handler returns the complete handler stack. Every request gets a
// request id (requestid.Accept of its X-Request-Id), echoed in the
// response's X-Request-Id and carried in its context (requestid.From);
// a request to a route other than an Always one is traced (Options.Tracing;
// a child of the caller's span when it sent a W3C traceparent) and logged once served, at info, with its route pattern (never its URL
// path), status and duration.
func (m *Mux) Handler() http.Handler {
	inner := m.routes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := requestid.Accept(r.Header.Get(requestid.Header))
		w.Header().Set(requestid.Header, id)
		ctx := requestid.With(r.Context(), id)
		if _, pattern := m.always.Handler(r); pattern != "" {
			inner.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		start := time.Now()
		route := m.route(r)
		ctx, span := m.opts.Tracing.StartHTTP(ctx, telemetry.HTTPRequest{Method: r.Method, Route: route, RequestID: id,
			Traceparent: r.Header.Get("Traceparent")})
		sw := NewRecorder(w)
		inner.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.Status()
		span.EndHTTP(status)
		m.opts.Logger.InfoContext(ctx, "http request", "method", r.Method, "route", route, "status", status,
			"duration_ms", time.Since(start).Milliseconds())
	})
}

// route is the path template of the route r is served by, its pattern
// without the method ("" when none matches).
func (m *Mux) route(r *http.Request) string {
	for _, mux := range []*http.ServeMux{m.discovery, m.public, m.authed} {
		if _, pattern := mux.Handler(r); pattern != "" {
			if _, path, ok := strings.Cut(pattern, " "); ok {
				return path
			}
			return pattern
		}
	}
	return ""
}

// routes is the handler stack below the request id and the span.
func (m *Mux) routes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.opts.LoopbackOnly && !loopbackHost(r.Host) && !m.publicHost(r.Host) {
			writeUnread(w, r, http.StatusForbidden, failure.New(failure.PermissionDenied, "host %q is not allowed (DNS-rebinding protection)", r.Host))
			return
		}
		if h, pattern := m.discovery.Handler(r); pattern != "" {
			m.servePublic(w, r, h)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !m.originAllowed(origin, r.Host) {
			writeUnread(w, r, http.StatusForbidden, failure.New(failure.PermissionDenied, "origin %q is not allowed", origin))
			return
		}
		if h, pattern := m.always.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		if h, pattern := m.public.Handler(r); pattern != "" {
			m.servePublic(w, r, h)
			return
		}
		_, pattern := m.authed.Handler(r)
		if pattern == "" {
			writeUnread(w, r, http.StatusNotFound, failure.New(failure.NotFound, "no route for %s %s", r.Method, r.URL.Path))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		raw, ok := auth.ParseBearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", m.challenge("", m.opts.ChallengeScopes))
			writeUnread(w, r, http.StatusUnauthorized, failure.New(failure.Unauthenticated, "a bearer credential is required"))
			return
		}
		p, ok := m.authenticate(w, r, raw)
		if !ok {
			return
		}
		// The principal's request slot is taken before its body is read:
		// a slow body holds a slot of its own principal's share, for at
		// most the body timeout. Over the share the request waits for one
		// of its principal's slots, behind that principal's calls only.
		h := &hold{waiters: m.waiters, key: p.Owner}
		release, err := m.requests.AcquireWait(r.Context(), h.key)
		if err != nil {
			if r.Context().Err() == nil { // else the client is gone
				refuse(w, r, err)
			}
			return
		}
		inUse := m.inUse[m.transports[pattern]]
		inUse.Add(1)
		h.request = sync.OnceFunc(func() { inUse.Add(-1); release() })
		defer h.release()
		body, ok := m.readBody(w, r)
		if !ok {
			return
		}
		// The body is read here, once: handlers get the bytes (Body) and a
		// reader over the same bytes for code that wants one (the go-sdk).
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		ctx := context.WithValue(auth.WithPrincipal(r.Context(), p), bodyKey{}, body)
		ctx = context.WithValue(ctx, muxKey{}, m)
		ctx = admission.WithWaiter(ctx, h)
		m.authed.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authenticate checks the credential in one of the MaxAuthenticating
// slots, answering the request itself when it fails.
func (m *Mux) authenticate(w http.ResponseWriter, r *http.Request, raw string) (auth.Principal, bool) {
	wait := time.NewTimer(AuthWait)
	defer wait.Stop()
	select {
	case m.authenticating <- struct{}{}:
	case <-wait.C:
		refuse(w, r, failure.New(failure.Unavailable, "all %d credential checks are in use; retry shortly", MaxAuthenticating))
		return auth.Principal{}, false
	case <-r.Context().Done():
		return auth.Principal{}, false
	}
	p, err := m.opts.Auth.Authenticate(r.Context(), raw)
	<-m.authenticating
	if err == nil {
		return p, true
	}
	if failure.KindOf(err) != failure.Unauthenticated {
		m.opts.Logger.Error("authenticate", "err", err)
		writeUnread(w, r, http.StatusServiceUnavailable, failure.New(failure.Unavailable, "credential store unavailable"))
		return auth.Principal{}, false
	}
	w.Header().Set("WWW-Authenticate", m.challenge("invalid_token", m.opts.ChallengeScopes))
	writeUnread(w, r, http.StatusUnauthorized, failure.New(failure.Unauthenticated, "the bearer credential is not valid"))
	return auth.Principal{}, false
}

// servePublic serves a public or discovery route in one of the MaxPublic
// slots.
func (m *Mux) servePublic(w http.ResponseWriter, r *http.Request, h http.Handler) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	release, err := m.publicSlots.Acquire("")
	if err != nil {
		refuse(w, r, err)
		return
	}
	defer release()
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), publicSlotKey{}, release)))
}

// challenge is the value of a Bearer WWW-Authenticate header (RFC 6750
// §3): the error code when there is one (invalid_token,
// insufficient_scope), the resource metadata URL (RFC 9728 §5.1) when
// configured, and scopes as the scope hint when there are any.
func (m *Mux) challenge(code string, scopes []auth.Scope) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="webcodex"`)
	param := func(name, value string) {
		// A quoted-string (RFC 9110 §5.6.4): only " and \ are escaped.
		b.WriteString(", " + name + `="` + quotedPair.Replace(value) + `"`)
	}
	if code != "" {
		param("error", code)
	}
	if m.opts.ResourceMetadata != "" {
		param("resource_metadata", m.opts.ResourceMetadata)
	}
	if len(scopes) > 0 {
		names := make([]string, len(scopes))
		for i, s := range scopes {
			names[i] = string(s)
		}
		param("scope", strings.Join(names, " "))
	}
	return b.String()
}

var quotedPair = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

type muxKey struct{}

// InsufficientScopeChallenge is the WWW-Authenticate value of a 403 that
// refuses an authenticated request r for lack of scope (step-up, RFC 6750
// §3.1): error="insufficient_scope", the resource metadata URL and, as
// scope, every scope the operation needs (need), not only the missing
// ones, so that a client asks for them all at once. A request that did
// not come through the Mux's authenticated routes gets the challenge
// without resource_metadata.
func InsufficientScopeChallenge(r *http.Request, need []auth.Scope) string {
	m, ok := r.Context().Value(muxKey{}).(*Mux)
	if !ok {
		m = &Mux{}
	}
	return m.challenge("insufficient_scope", need)
}

// WriteInsufficientScope answers an authenticated request that lacks a
// scope of need with 403, the step-up challenge
// (InsufficientScopeChallenge) and err (a failure.InsufficientScope) as
// the JSON error body.
func WriteInsufficientScope(w http.ResponseWriter, r *http.Request, need []auth.Scope, err error) {
	w.Header().Set("WWW-Authenticate", InsufficientScopeChallenge(r, need))
	WriteError(w, http.StatusForbidden, err)
}

// readBody reads the whole body within the body timeout, answering the
// request itself when it cannot.
func (m *Mux) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength != 0 {
		// Only a request with a body to read gets the deadline: net/http
		// clears it when the body hits EOF; without a body, its
		// background read would be cut off by it instead.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(m.opts.BodyTimeout))
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		return body, true
	}
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		WriteError(w, http.StatusRequestEntityTooLarge, failure.New(failure.RequestTooLarge, "request body exceeds %d bytes", mbe.Limit))
		return nil, false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		writeUnread(w, r, http.StatusRequestTimeout, failure.New(failure.InvalidArguments, "the request body did not arrive within %s", m.opts.BodyTimeout))
		return nil, false
	}
	writeUnread(w, r, http.StatusBadRequest, failure.New(failure.InvalidArguments, "cannot read request body"))
	return nil, false
}

// refuse answers a request a pool refused (429 or 503, with Retry-After),
// without reading its body.
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	writeUnread(w, r, StatusFor(failure.KindOf(err)), err)
}

// writeUnread answers a request whose body is not read (or not wholly):
// the connection is closed after the answer and nothing more is read from
// it, so that a slow body holds nothing once refused (net/http would
// otherwise read the rest of a small body before answering).
func writeUnread(w http.ResponseWriter, r *http.Request, status int, err error) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	WriteError(w, status, err)
}

// hold is what one authenticated request holds: its request slot and,
// once its call begins a bounded wait, a waiter slot instead. Both are
// given back when the request ends.
type hold struct {
	waiters *admission.Pool
	key     string

	mu      sync.Mutex
	request func()
	waiter  func()
}

// BeginWait implements admission.Waiter.
func (h *hold) BeginWait() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiter != nil {
		return nil
	}
	release, err := h.waiters.Acquire(h.key)
	if err != nil {
		return err
	}
	h.waiter = release
	h.request()
	return nil
}

func (h *hold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.request()
	if h.waiter != nil {
		h.waiter()
	}
}

type publicSlotKey struct{}

// ReleasePublicSlot gives back the public request slot (of the MaxPublic)
// that r holds, for a public handler that goes on for long under a bound
// of its own: a console live stream, once its stream limiter has admitted
// it, holds one of that limiter's slots instead, so that open streams
// never take the slots sign-in, static files and other public routes
// need. Only the first call counts (the Mux's own release at the end of
// the request then does nothing); on a request that holds no public slot
// it does nothing.
func ReleasePublicSlot(r *http.Request) {
	if release, ok := r.Context().Value(publicSlotKey{}).(func()); ok {
		release()
	}
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

// Recorder keeps the status and counts the bytes of a response for the
// layers that report on it (the request's span and log line, the audit
// event); it never reads what the handler writes. It passes Flush
// (streaming) and Unwrap (http.ResponseController) through.
type Recorder struct {
	http.ResponseWriter
	code int
	n    int64
}

// NewRecorder wraps w.
func NewRecorder(w http.ResponseWriter) *Recorder { return &Recorder{ResponseWriter: w} }

// WriteHeader implements http.ResponseWriter.
func (r *Recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (r *Recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

// Status is the response status (200 when the handler set none).
func (r *Recorder) Status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// Written is how many body bytes were written.
func (r *Recorder) Written() int64 { return r.n }

// Flush keeps streaming (MCP event streams) working through the recorder.
func (r *Recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
