package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/project"
)

// ConsentPath is the consent page of the built-in authorization server:
// the authorization endpoint sends the browser here with the request's
// query; the signed-in person approves or denies with a CSRF-protected
// form posted to the same path.
const ConsentPath = Prefix + "/oauth/consent"

// AuthorizationServer is the built-in authorization server as the
// console's consent and OAuth clients pages use it (*authserver.Service).
type AuthorizationServer interface {
	Authorize(ctx context.Context, q url.Values) (authserver.Request, error)
	Approve(ctx context.Context, r authserver.Request, a authserver.Approval) (string, error)
	ErrorRedirect(r authserver.Request, err error) string
	Clients(ctx context.Context) ([]authserver.Client, error)
	RevokeClient(ctx context.Context, id string) (authserver.Client, error)
}

// consentParams are the authorization request's parameters the consent
// form carries back.
var consentParams = []string{"response_type", "client_id", "redirect_uri", "state", "scope",
	"code_challenge", "code_challenge_method", "resource"}

// scopeLabels say what each delegated scope lets a client do.
var scopeLabels = map[auth.Scope]string{
	auth.ScopeRuntimeRead:  "see the runtime's status, sessions and jobs",
	auth.ScopeProjectRead:  "read files and history of your projects",
	auth.ScopeProjectWrite: "change files of your projects",
	auth.ScopeJobRun:       "run commands and jobs in your projects",
	auth.ScopeMemoryRead:   "read Project Memory",
	auth.ScopeMemoryManage: "change Project Memory",
}

func init() {
	extraRouteFuncs = append(extraRouteFuncs, func(s *Server) {
		if s.opts.OAuth == nil {
			return
		}
		s.handle("GET "+ConsentPath, s.page(s.consentPage))
		s.handle("POST "+ConsentPath, s.action(s.consentDecision))
		s.handle("GET "+ClientsPath, s.page(s.clientsPage))
		s.handle("POST "+ClientsPath+"/revoke", s.action(s.revokeClient))
	})
}

// ConsentScope is one requested scope on the consent page.
type ConsentScope struct {
	Name  auth.Scope
	Label string
	// Held: the signed-in person holds it, so approving grants it; a
	// scope they lack is not granted.
	Held bool
}

// ConsentData is the model of the consent page.
type ConsentData struct {
	ClientName string
	ClientID   string
	// Metadata: the client is identified by its metadata document (CIMD)
	// rather than a registration with this server.
	Metadata bool
	// RedirectHost is where the browser returns: shown so the person can
	// tell a look-alike client by where it sends the code.
	RedirectHost string
	// Loopback: the redirect is to a program on the person's own computer.
	Loopback bool
	Scopes   []ConsentScope
	Projects []project.Project
	// Params are the request's parameters, carried back by the form.
	Params []ConsentParam
}

// ConsentParam is one hidden field of the consent form.
type ConsentParam struct{ Name, Value string }

// consentPage shows what the client asks for. A request the client or
// redirect URI of which cannot be trusted is shown as an error; any other
// invalid request is sent back to the client with the error.
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request) error {
	req, ok := s.consentRequest(w, r, r.URL.Query())
	if !ok {
		return nil
	}
	v := viewerOf(r)
	d := ConsentData{ClientName: req.Client.Name, ClientID: req.Client.ID, Metadata: req.Client.Enrolment == authserver.EnrolCIMD,
		RedirectHost: req.RedirectHost()}
	if u, err := url.Parse(req.RedirectURI); err == nil {
		d.Loopback = u.Scheme == "http"
		// The approval's redirect leaves this origin: a form may be sent
		// there only if the page's policy says so.
		w.Header().Set("Content-Security-Policy", ContentSecurityPolicy+" "+u.Scheme+"://"+u.Host)
	}
	for _, sc := range req.Scopes {
		d.Scopes = append(d.Scopes, ConsentScope{Name: sc, Label: scopeLabels[sc], Held: v.Principal.Has(sc)})
	}
	ps, err := s.visibleProjects(r.Context(), v.Principal)
	if err != nil {
		return err
	}
	d.Projects = ps
	q := r.URL.Query()
	for _, k := range consentParams {
		if q.Has(k) {
			d.Params = append(d.Params, ConsentParam{Name: k, Value: q.Get(k)})
		}
	}
	return s.render(w, r, http.StatusOK, "consent", "Connect "+req.Client.Name, "", d)
}

// consentDecision records the person's decision and sends the browser back
// to the client: with a code when approved, with access_denied when
// denied. A project choice that is not one of the person's projects is
// refused and nothing is issued.
func (s *Server) consentDecision(w http.ResponseWriter, r *http.Request) error {
	q := url.Values{}
	for _, k := range consentParams {
		if r.PostForm.Has(k) {
			q[k] = r.PostForm[k]
		}
	}
	req, ok := s.consentRequest(w, r, q)
	if !ok {
		return nil
	}
	switch r.PostFormValue("decision") {
	case "deny":
		http.Redirect(w, r, s.opts.OAuth.ErrorRedirect(req, authserver.Deny), http.StatusSeeOther)
		return nil
	case "approve":
	default:
		return failure.New(failure.InvalidArguments, "the decision must be approve or deny")
	}
	v := viewerOf(r)
	a := authserver.Approval{Approver: v.Principal, Project: r.PostFormValue("project")}
	if a.Project != "" {
		ps, err := s.visibleProjects(r.Context(), v.Principal)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(ps, func(p project.Project) bool { return p.ID == a.Project }) {
			return failure.New(failure.InvalidArguments, "project %q is not one of yours", a.Project)
		}
	}
	to, err := s.opts.OAuth.Approve(r.Context(), req, a)
	if err != nil {
		if authserver.CodeOf(err) == authserver.ErrAccessDenied {
			http.Redirect(w, r, s.opts.OAuth.ErrorRedirect(req, err), http.StatusSeeOther)
			return nil
		}
		return failure.New(failure.Unavailable, "the authorization could not be recorded: %v", err)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// consentRequest validates q as an authorization request. It answers the
// request itself when it returns false: an untrusted client or redirect
// URI with the error page, any other refusal with a redirect to the
// client.
func (s *Server) consentRequest(w http.ResponseWriter, r *http.Request, q url.Values) (authserver.Request, bool) {
	req, err := s.opts.OAuth.Authorize(r.Context(), q)
	switch {
	case err != nil && req.RedirectURI == "":
		s.fail(w, r, failure.New(failure.InvalidArguments, "this authorization request cannot be trusted: %v", err))
		return req, false
	case err != nil:
		http.Redirect(w, r, s.opts.OAuth.ErrorRedirect(req, err), http.StatusSeeOther)
		return req, false
	}
	return req, true
}

// visibleProjects are the projects p may bind a grant to: the server's
// own and those of runners of p's authority group.
func (s *Server) visibleProjects(ctx context.Context, p auth.Principal) ([]project.Project, error) {
	all, err := s.opts.Projects.List(ctx)
	if err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "the project registry is unavailable")
	}
	var out []project.Project
	for _, pr := range all {
		if (pr.Owner == "" || pr.Owner == p.Owner) && (p.Project == "" || p.Project == pr.ID) {
			out = append(out, pr)
		}
	}
	return out, nil
}
