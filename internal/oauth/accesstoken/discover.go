package accesstoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
)

// ValidIssuer checks an issuer identifier: an https URL (or http on a
// loopback address, for tests) with a host, without user information, query
// or fragment, and without a trailing slash. Errors:
// failure.InvalidArguments.
func ValidIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || !fetchable(u) || strings.HasSuffix(issuer, "/") {
		return failure.New(failure.InvalidArguments,
			"the issuer %q is not an https URL without a query, fragment or trailing slash (http only on a loopback address)", issuer)
	}
	return nil
}

// fetchable reports whether u may be fetched: https, or http to a loopback
// address, with a host and no user information, query or fragment.
func fetchable(u *url.URL) bool {
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return loopbackHost(u.Hostname())
	}
	return false
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func validResource(r string) bool {
	u, err := url.Parse(r)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.Fragment == ""
}

// metadataURLs returns the discovery URLs of an issuer in the MCP order:
// RFC 8414 first, then OpenID Connect (path-inserted, then path-appended).
func metadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer) // checked by ValidIssuer
	origin := u.Scheme + "://" + u.Host
	if u.Path == "" || u.Path == "/" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + u.Path,
		origin + "/.well-known/openid-configuration" + u.Path,
		issuer + "/.well-known/openid-configuration",
	}
}

// keySet returns the issuer's keys, discovering the issuer on first use.
func (v *Verifier) keySet(ctx context.Context) (*remoteKeys, error) {
	if ks := v.keys.Load(); ks != nil {
		return ks, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if ks := v.keys.Load(); ks != nil {
		return ks, nil
	}
	if v.failed != nil && v.now().Sub(v.failedAt) < DiscoveryRetryAfter {
		return nil, unavailable(v.failed)
	}
	jwks, err := v.discover(ctx)
	if err != nil {
		// A caller that gave up says nothing about the issuer.
		if ctx.Err() == nil {
			v.failed, v.failedAt = err, v.now()
		}
		return nil, unavailable(err)
	}
	ks := &remoteKeys{url: jwks, client: v.client, now: v.now}
	v.keys.Store(ks)
	return ks, nil
}

// discover fetches the issuer's metadata and returns its jwks_uri. The
// first document found decides: its issuer must be exactly v.issuer.
func (v *Verifier) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range metadataURLs(v.issuer) {
		jwks, err := v.fetchMetadata(ctx, u)
		if err == nil {
			return jwks, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errNoDocument) {
			break
		}
	}
	return "", errors.Join(errs...)
}

// errNoDocument is a metadata URL that answered 404: the next is tried.
var errNoDocument = errors.New("no metadata document")

func (v *Verifier) fetchMetadata(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", fmt.Errorf("%s: %w", u, errNoDocument)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("%s: %w", u, err)
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return "", fmt.Errorf("%s: %w", u, err)
	}
	if meta.Issuer != v.issuer {
		return "", fmt.Errorf("%s: the metadata names issuer %q", u, clip(meta.Issuer))
	}
	ju, err := url.Parse(meta.JWKSURI)
	if err != nil || !fetchable(ju) {
		return "", fmt.Errorf("%s: jwks_uri %q is not an https URL", u, clip(meta.JWKSURI))
	}
	return meta.JWKSURI, nil
}

// errTooLarge is a fetched document longer than MaxDocumentBytes.
var errTooLarge = fmt.Errorf("the document is longer than %d bytes", MaxDocumentBytes)

// boundedTransport refuses response bodies longer than MaxDocumentBytes:
// reading past the bound fails.
type boundedTransport struct{ base http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > MaxDocumentBytes {
		resp.Body.Close()
		return nil, errTooLarge
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxDocumentBytes}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
