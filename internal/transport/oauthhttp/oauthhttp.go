// Package oauthhttp serves the built-in OAuth authorization server
// (authserver) over HTTP: its metadata (RFC 8414, and the same document at
// the OpenID discovery path), the authorization endpoint, the token
// endpoint, Dynamic Client Registration (RFC 7591) and revocation (RFC
// 7009).
//
// The authorization endpoint validates the request and sends the browser
// to the Runtime Console's consent page (console.ConsentPath), where the
// signed-in person approves or denies; a request whose client or redirect
// URI cannot be trusted is answered here with an error page and never
// redirected. The token, registration and revocation endpoints and the
// metadata are callable from any origin (browser-based clients use them
// before they hold a credential; none relies on a cookie), answer CORS
// preflights that carry MCP-Protocol-Version, and are rate-limited per
// address (and the token endpoint per client too).
package oauthhttp

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// Metadata paths (RFC 8414 §3, OpenID Connect Discovery §4). An issuer
// with a path P is served at these paths followed by P.
const (
	WellKnownAS   = "/.well-known/oauth-authorization-server"
	WellKnownOIDC = "/.well-known/openid-configuration"
)

// MaxFormBytes bounds the body of a token, revocation or registration
// request.
const MaxFormBytes = 16 << 10

// CORSMaxAgeSeconds is how long a browser may cache a preflight answer.
const CORSMaxAgeSeconds = 600

const corsAllowHeaders = "Authorization, Content-Type, MCP-Protocol-Version"

// Options configure the endpoints.
type Options struct {
	Server *authserver.Service
	// ConsentURL is the path of the console's consent page the
	// authorization endpoint sends the browser to, with the request's
	// query.
	ConsentURL string
	// Now is the rate limiters' clock; nil means time.Now.
	Now func() time.Time
}

// Handler serves the endpoints.
type Handler struct {
	o      Options
	meta   []byte
	limits *limits
}

// Register mounts the endpoints on m: the metadata and the token,
// registration and revocation endpoints as discovery routes (any origin),
// the authorization endpoint as a public route.
func Register(m *httpserver.Mux, o Options) error {
	if o.Server == nil || o.ConsentURL == "" {
		return errors.New("oauthhttp: a server and a consent URL are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	body, err := httpserver.EncodeJSON(o.Server.Metadata())
	if err != nil {
		return err
	}
	iss, err := url.Parse(o.Server.Issuer())
	if err != nil {
		return err
	}
	h := &Handler{o: o, meta: body, limits: newLimits(o.Now)}
	// A public URL's path is a prefix a proxy strips: the endpoints are
	// served at the root; the metadata also at the issuer's path-suffixed
	// well-known URLs, where RFC 8414 clients look first.
	dir := strings.TrimSuffix(iss.EscapedPath(), "/")
	meta := cors(http.MethodGet, http.HandlerFunc(h.metadata))
	for _, p := range []string{WellKnownAS, WellKnownOIDC} {
		m.Discovery(p, meta)
		if dir != "" {
			m.Discovery(p+dir, meta)
		}
	}
	m.Discovery(authserver.TokenPath, cors(http.MethodPost, http.HandlerFunc(h.token)))
	m.Discovery(authserver.RegisterPath, cors(http.MethodPost, http.HandlerFunc(h.register)))
	m.Discovery(authserver.RevokePath, cors(http.MethodPost, http.HandlerFunc(h.revoke)))
	m.Public(authserver.AuthorizePath, http.HandlerFunc(h.authorize))
	return nil
}

// cors answers preflights and lets any origin read the answers of method
// (and HEAD with GET).
func cors(method string, next http.Handler) http.Handler {
	allow := method + ", OPTIONS"
	if method == http.MethodGet {
		allow = "GET, HEAD, OPTIONS"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", allow)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", strconv.Itoa(CORSMaxAgeSeconds))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			h.Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "use " + method})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Handler) metadata(w http.ResponseWriter, r *http.Request) {
	httpserver.WriteJSONBytes(w, http.StatusOK, h.meta)
}

// authorize validates the request and sends the browser on to the consent
// page with the same query, or back to the client with the refusal, or
// shows a refusal that must not be redirected.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		ErrorPage(w, http.StatusMethodNotAllowed, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "use GET"})
		return
	}
	if !h.limits.allow("authorize", remoteHost(r)) {
		ErrorPage(w, http.StatusTooManyRequests, tooMany)
		return
	}
	req, err := h.o.Server.Authorize(r.Context(), r.URL.Query())
	switch {
	case err != nil && req.RedirectURI == "":
		ErrorPage(w, http.StatusBadRequest, err)
	case err != nil:
		http.Redirect(w, r, h.o.Server.ErrorRedirect(req, err), http.StatusSeeOther)
	default:
		http.Redirect(w, r, h.o.ConsentURL+"?"+r.URL.RawQuery, http.StatusSeeOther)
	}
}

var tooMany = &authserver.Error{Code: authserver.ErrTemporarilyUnavailable, Description: "too many requests from this address or client; retry later"}

// token serves the token endpoint (RFC 6749 §3.2).
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	form, a, ok := h.readClientForm(w, r, "token")
	if !ok {
		return
	}
	if !h.limits.allow("token-client", a.ID) {
		writeLimited(w)
		return
	}
	res, err := h.o.Server.Token(r.Context(), authserver.TokenRequest{
		Client: a, GrantType: form.Get("grant_type"), Code: form.Get("code"), RedirectURI: form.Get("redirect_uri"),
		CodeVerifier: form.Get("code_verifier"), RefreshToken: form.Get("refresh_token"),
		Resource: form.Get("resource"), Scope: form.Get("scope"),
	})
	if err != nil {
		writeError(w, status(err), err)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, res)
}

// revoke serves the revocation endpoint (RFC 7009 §2): 200 for any token,
// known or not.
func (h *Handler) revoke(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	form, a, ok := h.readClientForm(w, r, "revoke")
	if !ok {
		return
	}
	if err := h.o.Server.Revoke(r.Context(), a, form.Get("token")); err != nil {
		writeError(w, status(err), err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readClientForm reads a token or revocation request: a bounded
// form-encoded body whose parameters each appear at most once, and the
// client's credentials from a Basic header or the form, not both. It
// answers the request itself when it returns false.
func (h *Handler) readClientForm(w http.ResponseWriter, r *http.Request, endpoint string) (url.Values, authserver.ClientAuth, bool) {
	if !h.limits.allow(endpoint, remoteHost(r)) {
		writeLimited(w)
		return nil, authserver.ClientAuth{}, false
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "the body must be application/x-www-form-urlencoded"})
		return nil, authserver.ClientAuth{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxFormBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "the body is unreadable or larger than " + strconv.Itoa(MaxFormBytes) + " bytes"})
		return nil, authserver.ClientAuth{}, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "the body is not a valid form"})
		return nil, authserver.ClientAuth{}, false
	}
	for k, v := range form {
		if len(v) > 1 {
			writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "parameter " + clip(k) + " is repeated"})
			return nil, authserver.ClientAuth{}, false
		}
	}
	a := authserver.ClientAuth{ID: form.Get("client_id"), Secret: form.Get("client_secret")}
	if id, secret, basic := r.BasicAuth(); basic {
		id, err1 := url.QueryUnescape(id)
		secret, err2 := url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || a.Secret != "" || (a.ID != "" && a.ID != id) {
			writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidRequest, Description: "client credentials must come in one way: a Basic header or the form"})
			return nil, authserver.ClientAuth{}, false
		}
		a = authserver.ClientAuth{ID: id, Secret: secret, Basic: true}
	}
	return form, a, true
}

// register serves Dynamic Client Registration (RFC 7591 §3).
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if !h.limits.allow("register", remoteHost(r)) {
		writeLimited(w)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidClientMetadata, Description: "the body must be application/json"})
		return
	}
	var m oauthex.ClientRegistrationMetadata
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxFormBytes))
	if err := dec.Decode(&m); err != nil {
		writeError(w, http.StatusBadRequest, &authserver.Error{Code: authserver.ErrInvalidClientMetadata, Description: "the body is not a client metadata JSON object within " + strconv.Itoa(MaxFormBytes) + " bytes"})
		return
	}
	reg, err := h.o.Server.Register(r.Context(), m)
	if err != nil {
		writeError(w, status(err), err)
		return
	}
	c := reg.Client
	var expires *int64
	if reg.Secret != "" {
		expires = new(int64) // 0: the secret does not expire
	}
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{authserver.GrantAuthorizationCode, authserver.GrantRefreshToken}
	}
	httpserver.WriteJSON(w, http.StatusCreated, registrationResponse{
		ClientID: c.ID, ClientSecret: reg.Secret, ClientIDIssuedAt: c.CreatedAt.Unix(),
		RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.AuthMethod, GrantTypes: grants,
		ResponseTypes: []string{"code"}, ClientName: c.Name, ClientSecretExpiresAt: expires,
	})
}

// registrationResponse is RFC 7591 §3.2.1's answer. client_secret_expires_at
// is 0 (never) when there is a secret.
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
}

// errorBody is an OAuth error answer (RFC 6749 §5.2).
type errorBody struct {
	Error       authserver.ErrorCode `json:"error"`
	Description string               `json:"error_description,omitempty"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	b := errorBody{Error: authserver.CodeOf(err)}
	var e *authserver.Error
	if errors.As(err, &e) {
		b.Description = e.Description
	}
	httpserver.WriteJSON(w, code, b)
}

func writeLimited(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int(limitWindow.Seconds())))
	writeError(w, http.StatusTooManyRequests, tooMany)
}

// status is the HTTP status of a refusal: 401 for invalid_client (which
// also tells claude.ai to register again), 503 for an unavailable store,
// 400 otherwise.
func status(err error) int {
	switch authserver.CodeOf(err) {
	case authserver.ErrInvalidClient:
		return http.StatusUnauthorized
	case authserver.ErrTemporarilyUnavailable, authserver.ErrServerError:
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadRequest
	}
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// ErrorPage answers a browser with a refusal it must not be redirected
// for: plain text, never a link or a redirect.
func ErrorPage(w http.ResponseWriter, code int, err error) {
	noStore(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	msg := string(authserver.CodeOf(err))
	var e *authserver.Error
	if errors.As(err, &e) {
		msg += ": " + e.Description
	}
	io.WriteString(w, "WebCodex could not start this authorization: "+msg+"\n")
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return host
}
