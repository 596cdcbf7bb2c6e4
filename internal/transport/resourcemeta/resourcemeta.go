// Package resourcemeta is the discovery side of WebCodex as an OAuth 2.0
// protected resource: the protected resource metadata (RFC 9728) that an
// MCP client fetches, starting from the resource_metadata of a 401
// challenge, to learn which resource it is talking to, which
// authorization servers issue tokens for it and which scopes it knows.
//
// The metadata is served at the path-suffixed well-known URI of the MCP
// endpoint ([WellKnown]+"/mcp") and at the root one ([WellKnown]), with the
// same document: the resource is always the public MCP URL. Both answer
// CORS preflights (a browser-based client sends MCP-Protocol-Version) and
// need no credential. Token validation is not here: the HTTP stack
// authenticates (httpserver.Authenticator) and names [Resource.MetadataURL]
// in its challenges.
package resourcemeta

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// The well-known paths, on this server, of the metadata (RFC 9728 §3.1).
const (
	// WellKnown is the root metadata path.
	WellKnown = "/.well-known/oauth-protected-resource"
	// MCPPath is the MCP endpoint's path on this server.
	MCPPath = "/mcp"
	// WellKnownMCP is the path-suffixed metadata path of the MCP endpoint.
	WellKnownMCP = WellKnown + MCPPath
)

// ResourceName is the metadata's human-readable resource_name.
const ResourceName = "WebCodex"

// CORSMaxAgeSeconds is how long a browser may cache a preflight answer of
// the metadata routes.
const CORSMaxAgeSeconds = 600

// corsAllowHeaders are the request headers a cross-origin metadata fetch
// may carry: the MCP TypeScript SDK sends MCP-Protocol-Version on its
// discovery GETs.
const corsAllowHeaders = "Authorization, Content-Type, MCP-Protocol-Version"

// A Resource is the identity of the MCP endpoint as clients reach it.
type Resource struct {
	// URL is the resource identifier (RFC 8707, RFC 9728 §2): the exact
	// public MCP URL, e.g. https://host/mcp.
	URL string
	// MetadataURL is where clients fetch the metadata: the path-suffixed
	// well-known URI under the same base, e.g.
	// https://host/.well-known/oauth-protected-resource/mcp. Under a base
	// with a path (https://host/prefix) it stays under that prefix
	// (https://host/prefix/.well-known/oauth-protected-resource/mcp), the
	// only part of the host a proxy forwards to this server; clients use
	// the URL of the challenge as given.
	MetadataURL string
}

// For returns the Resource of a server whose public base URL is base (the
// configured public_url, else the http URL of the listen address). The
// scheme and host are lowercased and a trailing slash of the path dropped
// (the canonical form of the MCP authorization profile).
//
// Errors: failure.InvalidArguments when base is not an absolute http(s)
// URL without user information, query or fragment.
func For(base string) (Resource, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Resource{}, failure.New(failure.InvalidArguments, "%q is not an http(s) base URL", base)
	}
	root := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.EscapedPath(), "/")
	return Resource{URL: root + MCPPath, MetadataURL: root + WellKnownMCP}, nil
}

// Options describe the metadata.
type Options struct {
	Resource Resource
	// AuthorizationServers are the issuer identifiers (RFC 8414) of the
	// authorization servers whose tokens the resource accepts; empty (the
	// member is then omitted) until one is configured.
	AuthorizationServers []string
	// Scopes are scopes_supported (auth.ResourceScopes).
	Scopes []auth.Scope
}

// Metadata is the protected resource metadata document of o.
func (o Options) Metadata() oauthex.ProtectedResourceMetadata {
	scopes := make([]string, len(o.Scopes))
	for i, s := range o.Scopes {
		scopes[i] = string(s)
	}
	return oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource.URL,
		AuthorizationServers:   o.AuthorizationServers,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           ResourceName,
	}
}

// Register mounts the metadata at WellKnownMCP and WellKnown as discovery
// routes of m (no credential, any origin).
//
// Errors: those of encoding the document (none for a valid Options).
func Register(m *httpserver.Mux, o Options) error {
	if o.Resource.URL == "" {
		return errors.New("resourcemeta: no resource URL")
	}
	body, err := httpserver.EncodeJSON(o.Metadata())
	if err != nil {
		return fmt.Errorf("resourcemeta: %w", err)
	}
	h := handler(body)
	m.Discovery(WellKnownMCP, h)
	m.Discovery(WellKnown, h)
	return nil
}

// handler serves body to GET and HEAD, answers a CORS preflight (OPTIONS)
// with 204, and refuses any other method with 405. Every answer carries
// Access-Control-Allow-Origin: * (the document is public).
func handler(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", strconv.Itoa(CORSMaxAgeSeconds))
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodHead:
			httpserver.WriteJSONBytes(w, http.StatusOK, body)
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			httpserver.WriteError(w, http.StatusMethodNotAllowed, failure.New(failure.InvalidArguments, "%s is not allowed on %s: use GET", r.Method, r.URL.Path))
		}
	})
}
