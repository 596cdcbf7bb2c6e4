package app

import (
	"strings"

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
// is configured, else the built-in authorization server's ([oauth]
// enabled; its issuer is the public base).
func (a *App) resource() (resourcemeta.Options, bool) {
	r, err := resourcemeta.For(a.PublicBase())
	if err != nil {
		a.Log.Error("oauth: no protected resource metadata", "err", err)
		return resourcemeta.Options{}, false
	}
	o := resourcemeta.Options{Resource: r, Scopes: auth.ResourceScopes}
	switch {
	case a.oauth != nil:
		o.AuthorizationServers = []string{a.oauth.Issuer()}
	case a.oauthStore != nil:
		o.AuthorizationServers = []string{issuerOf(r)}
	}
	return o, true
}

// issuerOf is the built-in authorization server's issuer for resource r:
// r's base (the canonical public base: lowercase scheme and host, no
// trailing slash).
func issuerOf(r resourcemeta.Resource) string {
	return strings.TrimSuffix(r.URL, resourcemeta.MCPPath)
}
