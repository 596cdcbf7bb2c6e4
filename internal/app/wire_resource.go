package app

import (
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
)

// PublicBase is the base URL clients reach the server by: public_url when
// configured, else the http URL of the bound listen address (of the
// configured one before Listen). It names the OAuth protected resource
// (the MCP URL is PublicBase + "/mcp").
func (a *App) PublicBase() string {
	if a.Config.PublicURL != "" {
		return a.Config.PublicURL
	}
	if a.ln != nil {
		return "http://" + a.ln.Addr().String()
	}
	return "http://" + a.Config.Listen
}

// resource is the OAuth protected resource the HTTP server is: its
// identity (resourcemeta.For of PublicBase) and its metadata. A base that
// is not a URL (a listen address Validate accepted that makes none) leaves
// the metadata unserved and the challenges without resource_metadata,
// logged.
//
// AuthorizationServers names the external issuer ([oauth] issuer) when one
// is configured; the built-in authorization server (issue 26) will be
// listed here too.
func (a *App) resource() (resourcemeta.Options, bool) {
	r, err := resourcemeta.For(a.PublicBase())
	if err != nil {
		a.Log.Error("oauth: no protected resource metadata", "err", err)
		return resourcemeta.Options{}, false
	}
	o := resourcemeta.Options{Resource: r, Scopes: auth.ResourceScopes}
	if a.oauth != nil {
		o.AuthorizationServers = []string{a.oauth.Issuer()}
	}
	return o, true
}
