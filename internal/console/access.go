package console

import (
	"net/http"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
)

// LoginData is the model of the login page.
type LoginData struct {
	Next  string
	Error string
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	next := r.URL.Query().Get("next")
	if !localPath(next) {
		next = ""
	}
	if err := s.render(w, r, http.StatusOK, "login", "Sign in", "", LoginData{Next: next}); err != nil {
		s.fail(w, r, err)
	}
}

// login opens a console session for the posted token. A wrong token is
// answered 401 with the form again; nothing is stored for it.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	next := r.PostFormValue("next")
	if !localPath(next) {
		next = Prefix + "/"
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		s.renderLogin(w, r, http.StatusUnauthorized, next, "Enter an API token.")
		return
	}
	in, err := s.opts.Auth.LoginConsole(r.Context(), token)
	if failure.KindOf(err) == failure.Unauthenticated {
		s.renderLogin(w, r, http.StatusUnauthorized, next, "That token is not a valid API token: "+failure.MessageOf(err)+".")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.setCookie(w, r, in.Cookie, in.ExpiresAt)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	if err := s.render(w, r, status, "login", "Sign in", "", LoginData{Next: next, Error: msg}); err != nil {
		s.fail(w, r, err)
	}
}

// logout deletes the console session's row and clears the cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	c, _ := r.Cookie(CookieName)
	if err := s.opts.Auth.LogoutConsole(r.Context(), c.Value); err != nil {
		return failure.Wrap(failure.Unavailable, err, "could not end the console session")
	}
	s.clearCookie(w, r)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
	return nil
}
