package console

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
)

// ClientsPath is the page of the OAuth clients hosted agents enrolled with
// the built-in authorization server (webcodex oauth clients on the
// console). Clients are the server's, not one authority group's, and
// revoking one ends every grant to it: the page needs account:manage.
const ClientsPath = Prefix + "/oauth/clients"

// OAuthClientRow is one client on the page.
type OAuthClientRow struct {
	Client authserver.Client
	// RedirectHosts are the distinct hosts its redirect URIs return to.
	RedirectHosts []string
}

// OAuthClientsData is the model of the clients page.
type OAuthClientsData struct {
	Clients []OAuthClientRow
	// Revoked names the client the previous action revoked.
	Revoked string
}

func (s *Server) clientsPage(w http.ResponseWriter, r *http.Request) error {
	if err := needAccountManage(viewerOf(r).Principal); err != nil {
		return err
	}
	cs, err := s.opts.OAuth.Clients(r.Context())
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "the OAuth client store is unavailable")
	}
	d := OAuthClientsData{Revoked: r.URL.Query().Get("revoked")}
	for _, c := range cs {
		row := OAuthClientRow{Client: c}
		for _, u := range c.RedirectURIs {
			if p, err := url.Parse(u); err == nil && !slices.Contains(row.RedirectHosts, p.Host) {
				row.RedirectHosts = append(row.RedirectHosts, p.Host)
			}
		}
		d.Clients = append(d.Clients, row)
	}
	return s.render(w, r, http.StatusOK, "oauth_clients", "OAuth clients", "oauth", d)
}

// revokeClient revokes the posted client and every grant to it, and goes
// back to the list.
func (s *Server) revokeClient(w http.ResponseWriter, r *http.Request) error {
	if err := needAccountManage(viewerOf(r).Principal); err != nil {
		return err
	}
	c, err := s.opts.OAuth.RevokeClient(r.Context(), r.PostFormValue("client_id"))
	if failure.Is(err, failure.NotFound) {
		return err
	}
	if err != nil {
		return failure.Wrap(failure.Unavailable, err, "the OAuth client store is unavailable")
	}
	http.Redirect(w, r, ClientsPath+"?revoked="+url.QueryEscape(c.ID), http.StatusSeeOther)
	return nil
}

func needAccountManage(p auth.Principal) error {
	if !p.Has(auth.ScopeAccountManage) {
		return failure.New(failure.InsufficientScope, "the OAuth clients page needs the %s scope", auth.ScopeAccountManage)
	}
	return nil
}
