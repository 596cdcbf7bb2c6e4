// Package console is the Runtime Console: server-rendered web pages under
// /console on the API's server, showing a person what their agents did,
// what is waiting, and what the evidence proves (issue 17, decision 0038).
//
// It is a transport: it reads the domains (workflow, jobs, evidence,
// projects) and posts to a session's board through the kernel, exactly as
// an API call would, so that a console user sees and does exactly what
// their token could through the API. Pages are html/template (every value
// escaped); htmx and idiomorph are vendored under static/ and served by
// the binary; no script is inline, and every response carries a strict
// Content-Security-Policy.
//
// Access: GET /console/login shows a form that takes an API token; POST
// /console/login opens a console session (auth.Service.LoginConsole) and
// sets its cookie (HttpOnly, SameSite=Strict, Secure on https). Every
// other page needs that cookie; every state-changing request also needs
// the session's CSRF token (auth.ConsoleCSRF) in the form field
// CSRFField. A session that is not the principal's authority group's is
// answered 404, exactly like one that does not exist.
package console

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console/sse"
	"github.com/webcodex/webcodex/internal/console/verifyrun"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Prefix is the path every console route lives under.
const Prefix = "/console"

// Names of the console's cookie and of its CSRF form field.
const (
	CookieName = "wc_console"
	CSRFField  = "csrf_token"
)

// ContentSecurityPolicy is sent with every console response: scripts and
// styles only from the server's own files, nothing embedded, framed or
// posted elsewhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// ExportContentSecurityPolicy is the policy of a session export: it runs
// no script and loads nothing at all (its CSS is inline).
const ExportContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

//go:embed static/*.js static/*.css
var staticFS embed.FS

//go:embed templates
var templateFS embed.FS

// Journal is the evidence journal as the console reads it.
type Journal interface {
	SessionRecords(ctx context.Context, sessionID string, limit int) ([]evidence.Entry, error)
	SessionCounts(ctx context.Context, sessionID string) (evidence.Counts, error)
	Latest(ctx context.Context) (evidence.SignedCheckpoint, error)
	ExportBundle(ctx context.Context, sessionID string) (evidence.Bundle, error)
}

// Options are what the console reads and calls. Every field but Journal
// and Jobs is required.
type Options struct {
	Auth      *auth.Service
	Sessions  *workflow.Service
	Snapshots workflow.SnapshotReader
	Board     *workflow.Board
	Projects  *project.Registry
	// Kernel dispatches the operator's posts (post_session_message), so
	// they pass the same scope and session checks and are recorded in
	// the ledger and the evidence journal like any call.
	Kernel *kernel.Kernel
	// Jobs lists jobs; nil leaves the job lists empty and says so.
	Jobs *jobs.Manager
	// Journal is the evidence journal; nil leaves evidence out and says
	// so.
	Journal Journal
	// Secure sets the Secure attribute of the cookie on every response
	// (the server is reached over https, e.g. behind a TLS tunnel); a
	// request over TLS gets it regardless.
	Secure bool
	Logger *slog.Logger
	// Audit, Verify and Streams serve the audit and evidence pages and
	// the live streams (auditpage.go, evidencepage.go, jobtail.go); nil
	// leaves those parts out and says so.
	Audit   *audit.Service
	Verify  *verifyrun.Runner
	Streams *sse.Limiter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tasks is the Agent Task service the Tasks page reads (tasks.go);
	// nil answers that page unavailable.
	Tasks *agenttask.Service
	// Intents is the declared edit intent service the Tasks page's
	// intents map reads; nil leaves the map out.
	Intents *intent.Service
	// OAuth is the built-in authorization server whose consent and
	// clients pages the console serves (consent.go, oauthclients.go); nil
	// leaves them out.
	OAuth AuthorizationServer
}

// Server serves the console.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	// templates parses the template sets at its first call and returns
	// the same sets (or error) at every later one.
	templates func() (*templateSets, error)
}

// templateSets are the console's parsed templates.
type templateSets struct {
	pages map[string]*template.Template
	// export is the self-contained session export (its own template set:
	// no layout, no script).
	export *template.Template
}

// New returns the console over o.
func New(o Options) (*Server, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{opts: o, log: o.Logger, mux: http.NewServeMux(), templates: sync.OnceValues(parseTemplates)}
	s.routes()
	return s, nil
}

// Register mounts the console on m. Its routes are public to the Mux
// (they carry no bearer credential): the console authenticates its own
// cookie. The Mux's Host and Origin protections and body limit apply.
func (s *Server) Register(m *httpserver.Mux) {
	m.Public(Prefix, s)
	m.Public(Prefix+"/", s)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser posts
	// forms with "Origin: null", which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

// routes lists every console route. public routes need no console
// session; page routes do (GET); action routes do and check the CSRF
// token (POST).
func (s *Server) routes() {
	s.mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix, s.static()))
	s.mux.HandleFunc("GET "+Prefix+"/login", s.loginForm)
	s.mux.HandleFunc("POST "+Prefix+"/login", s.login)
	s.mux.Handle("POST "+Prefix+"/logout", s.action(s.logout))
	s.mux.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	s.mux.Handle("GET "+Prefix+"/{$}", s.page(s.attention))
	s.mux.Handle("GET "+Prefix+"/sessions", s.page(s.sessionList))
	s.mux.Handle("GET "+Prefix+"/sessions/{id}", s.page(s.session))
	s.mux.Handle("GET "+Prefix+"/sessions/{id}/timeline", s.page(s.timeline))
	s.mux.Handle("GET "+Prefix+"/sessions/{id}/export", s.page(s.exportSession))
	s.mux.Handle("GET "+Prefix+"/sessions/{id}/bundle", s.page(s.bundle))
	s.mux.Handle("POST "+Prefix+"/sessions/{id}/messages", s.action(s.postMessage))
	s.mux.Handle("POST "+Prefix+"/sessions/{id}/messages/{msg}/answer", s.action(s.answerQuestion))
	s.mux.Handle("POST "+Prefix+"/sessions/{id}/messages/{msg}/resolve", s.action(s.resolveMessage))
	s.extraRoutes()
	s.mux.Handle(Prefix+"/", s.page(func(w http.ResponseWriter, r *http.Request) error {
		return failure.New(failure.NotFound, "no console page %s", r.URL.Path)
	}))
}

// extraRouteFuncs are routes other files of this package add (audit,
// evidence, job tail): each file's init appends a function that
// registers its routes with s.handle, wrapping them in s.page or
// s.action. Package initialization runs before any New.
var extraRouteFuncs []func(s *Server)

func (s *Server) extraRoutes() {
	for _, fn := range extraRouteFuncs {
		fn(s)
	}
}

// handle registers a route on the console's own mux (the pattern
// includes Prefix).
func (s *Server) handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// static serves the embedded files (immutable for one build).
func (s *Server) static() http.Handler {
	files := http.FileServerFS(staticFS)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

type viewerKey struct{}

// Viewer is the signed-in person of a console request.
type Viewer struct {
	Principal auth.Principal
	// CSRF is the session's CSRF token, for the forms of the page.
	CSRF string
}

// viewerOf returns the request's viewer (set by page and action).
func viewerOf(r *http.Request) Viewer {
	v, _ := r.Context().Value(viewerKey{}).(Viewer)
	return v
}

// handlerFunc is a console handler: an error it returns is answered
// with the error page (its status from failure's table), unless the
// handler has already written.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// page wraps a GET handler: the console session must be valid; without
// one the browser is sent to the login form.
func (s *Server) page(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		r, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		s.run(w, r, h)
	})
}

// action wraps a state-changing handler: the console session must be
// valid and the form's CSRF token must be that session's; otherwise the
// request is refused before anything changes.
func (s *Server) action(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		r, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		c, _ := r.Cookie(CookieName)
		if !auth.CheckConsoleCSRF(c.Value, r.PostFormValue(CSRFField)) {
			s.fail(w, r, failure.New(failure.PermissionDenied, "the form's CSRF token is missing or not this session's; reload the page and try again"))
			return
		}
		s.run(w, r, h)
	})
}

func (s *Server) run(w http.ResponseWriter, r *http.Request, h handlerFunc) {
	if err := h(w, r); err != nil {
		s.fail(w, r, err)
	}
}

// authenticate resolves the console cookie; on failure it answers the
// request (a GET is sent to the login form, anything else gets 401).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	c, err := r.Cookie(CookieName)
	var p auth.Principal
	if err == nil {
		p, err = s.opts.Auth.ConsolePrincipal(r.Context(), c.Value)
	}
	if err != nil {
		if failure.KindOf(err) != failure.Unauthenticated && !errors.Is(err, http.ErrNoCookie) {
			s.log.Error("console: session check", "err", err)
			s.fail(w, r, failure.New(failure.Unavailable, "the console session store is unavailable"))
			return r, false
		}
		if c != nil {
			s.clearCookie(w, r)
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return r, false
		}
		s.fail(w, r, failure.New(failure.Unauthenticated, "sign in to the console first"))
		return r, false
	}
	v := Viewer{Principal: p, CSRF: auth.ConsoleCSRF(c.Value)}
	ctx := context.WithValue(auth.WithPrincipal(r.Context(), p), viewerKey{}, v)
	return r.WithContext(ctx), true
}

func (s *Server) secure(r *http.Request) bool { return s.opts.Secure || r.TLS != nil }

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: value, Path: Prefix, Expires: expires, MaxAge: int(time.Until(expires).Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r),
	})
}

func (s *Server) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r),
	})
}

// localPath reports whether next is a console path to return to after
// sign-in (never another host or scheme).
func localPath(next string) bool {
	if !strings.HasPrefix(next, Prefix+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return false
	}
	u, err := url.Parse(next)
	return err == nil && u.Scheme == "" && u.Host == "" && path.Clean(u.Path) != ""
}

// parseTemplates builds one template set per page: the layout and the
// partials, plus the page's own file (templates/pages/NAME.html defines
// "content"); the export is its own set (export/ and the partials).
// The console parses them at its first page, not at New: the sets hold
// about 1.6 MB of live heap that a server nobody opens the console of
// would keep for nothing (decision 0058). The files are embedded, so a
// parse error is a programming error that every rendering test meets.
func parseTemplates() (*templateSets, error) {
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials/*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/pages/*.html")
	if err != nil {
		return nil, err
	}
	sets := &templateSets{pages: make(map[string]*template.Template, len(names))}
	for _, n := range names {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, err
		}
		sets.pages[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	sets.export, err = template.New("export").Funcs(funcs).ParseFS(templateFS, "templates/export/*.html", "templates/partials/*.html")
	if err != nil {
		return nil, err
	}
	return sets, nil
}

// pageTemplate returns the template set of page name (see parseTemplates).
func (s *Server) pageTemplate(name string) (*template.Template, error) {
	sets, err := s.templates()
	if err != nil {
		return nil, failure.Wrap(failure.Internal, err, "console templates")
	}
	t, ok := sets.pages[name]
	if !ok {
		return nil, failure.New(failure.Internal, "console page %q has no template", name)
	}
	return t, nil
}
