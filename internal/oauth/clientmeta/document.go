package clientmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// forbiddenMembers may not appear in a document: a document is public, so
// it cannot carry a client secret (CIMD draft, client metadata).
var forbiddenMembers = []string{"client_secret", "client_secret_expires_at"}

// LoopbackOnly reports whether every redirect URI of d goes to a loopback
// host (localhost, 127.0.0.1, [::1]; http or https). Anyone can publish such a document under any name, and
// only an app on the person's own machine receives its codes, so the
// consent page warns about it (MCP authorization, "Client ID Metadata
// Document Security").
func (d Document) LoopbackOnly() bool {
	for _, uri := range d.RedirectURIs {
		u, err := url.Parse(uri)
		if err != nil || !isLoopbackHost(u.Hostname()) {
			return false
		}
	}
	return len(d.RedirectURIs) > 0
}

// parseDocument validates body as the document fetched from id (the rules
// are in the package comment). Errors: failure.InvalidArguments naming the
// first rule broken.
func parseDocument(id string, body []byte) (Document, error) {
	if !utf8.Valid(body) {
		return Document{}, errorf("the body is not UTF-8")
	}
	members, err := objectMembers(body)
	if err != nil {
		return Document{}, err
	}
	for _, name := range forbiddenMembers {
		if _, ok := members[name]; ok {
			return Document{}, errorf("it has a %s member; a client metadata document must not carry a secret", name)
		}
	}
	var doc Document
	if err := stringMember(members, "client_id", &doc.ClientID); err != nil {
		return Document{}, err
	}
	if doc.ClientID != id {
		return Document{}, errorf("client_id %s does not equal the URL it was fetched from, %s", quote(doc.ClientID), quote(id))
	}
	if err := stringMember(members, "client_name", &doc.ClientName); err != nil {
		return Document{}, err
	}
	if err := checkClientName(doc.ClientName); err != nil {
		return Document{}, err
	}
	if doc.RedirectURIs, err = redirectURIs(members); err != nil {
		return Document{}, err
	}
	if doc.TokenEndpointAuthMethod, err = authMethod(members); err != nil {
		return Document{}, err
	}
	if doc.GrantTypes, err = stringsMember(members, "grant_types"); err != nil {
		return Document{}, err
	}
	if doc.ResponseTypes, err = stringsMember(members, "response_types"); err != nil {
		return Document{}, err
	}
	doc.ClientURI = displayURI(members["client_uri"])
	doc.LogoURI = displayURI(members["logo_uri"])
	return doc, nil
}

// objectMembers splits body, which must be exactly one JSON object, into
// its members, refusing a member that appears twice (a reader that takes
// the first and one that takes the last would see different clients).
func objectMembers(body []byte) (map[string]json.RawMessage, error) {
	notObject := errorf("the body is not a JSON object")
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, notObject
		}
		if _, dup := members[name]; dup {
			return nil, errorf("member %s appears more than once", quote(name))
		}
		members[name] = value
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errorf("the body has more after its JSON object")
	}
	return members, nil
}

// stringMember sets *dst to the required string member name.
func stringMember(members map[string]json.RawMessage, name string, dst *string) error {
	raw, ok := members[name]
	if !ok {
		return errorf("%s is missing", name)
	}
	if json.Unmarshal(raw, dst) != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return errorf("%s is not a string", name)
	}
	return nil
}

// stringsMember returns the optional string-array member name (nil when
// absent).
func stringsMember(members map[string]json.RawMessage, name string) ([]string, error) {
	raw, ok := members[name]
	if !ok {
		return nil, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || list == nil {
		return nil, errorf("%s is not an array of strings", name)
	}
	return list, nil
}

func checkClientName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errorf("client_name is empty")
	case len(name) > MaxClientName:
		return errorf("client_name is longer than %d bytes", MaxClientName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errorf("client_name has a control character")
	}
	return nil
}

// redirectURIs returns the document's redirect URIs after checking each.
func redirectURIs(members map[string]json.RawMessage) ([]string, error) {
	if _, ok := members["redirect_uris"]; !ok {
		return nil, errorf("redirect_uris is missing")
	}
	uris, err := stringsMember(members, "redirect_uris")
	if err != nil {
		return nil, err
	}
	switch {
	case len(uris) == 0:
		return nil, errorf("redirect_uris is empty")
	case len(uris) > MaxRedirectURIs:
		return nil, errorf("redirect_uris has %d entries; at most %d are allowed", len(uris), MaxRedirectURIs)
	}
	for i, uri := range uris {
		if why := redirectURIProblem(uri); why != "" {
			return nil, errorf("redirect_uris[%d] %s", i, why)
		}
	}
	return uris, nil
}

// redirectURIProblem says why uri is not an acceptable redirect URI, or ""
// when it is.
func redirectURIProblem(uri string) string {
	if len(uri) > MaxURI {
		return "is longer than " + strconv.Itoa(MaxURI) + " bytes"
	}
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return "is not a URI"
	case !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return "is not an absolute URI with a host"
	case u.Fragment != "" || strings.Contains(uri, "#"):
		return "has a fragment"
	case u.User != nil:
		return "has userinfo"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return ""
	case u.Scheme == "http":
		return "is http on a host that is not loopback (localhost, 127.0.0.1, [::1]); use https"
	default:
		return "has scheme " + quote(u.Scheme) + "; only https, or http on a loopback host, is allowed"
	}
}

// authMethod returns the document's token_endpoint_auth_method, AuthNone
// when absent.
func authMethod(members map[string]json.RawMessage) (string, error) {
	if _, ok := members["token_endpoint_auth_method"]; !ok {
		return AuthNone, nil
	}
	var m string
	if err := stringMember(members, "token_endpoint_auth_method", &m); err != nil {
		return "", err
	}
	if m != AuthNone && m != AuthPrivateKeyJWT {
		return "", errorf("token_endpoint_auth_method is %s; want %q or %q", quote(m), AuthNone, AuthPrivateKeyJWT)
	}
	return m, nil
}

// displayURI returns raw when it is a JSON string holding an absolute
// https URL of at most MaxURI bytes, else "".
func displayURI(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil || len(s) > MaxURI {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return ""
	}
	return s
}
