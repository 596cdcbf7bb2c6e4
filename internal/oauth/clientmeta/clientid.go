package clientmeta

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
)

// IsClientIDURL reports whether id is shaped as a CIMD client id: an https
// URL with a non-root path, no fragment, no userinfo, no "." or ".."
// segments, at most MaxURL bytes. It also requires printable ASCII (no
// spaces) and the scheme written "https" in lower case, since the id is
// compared byte for byte.
func IsClientIDURL(id string) bool { return checkClientIDURL(id) == nil }

// checkClientIDURL returns nil when id is a client id URL, else a
// failure.InvalidArguments saying which rule it breaks.
func checkClientIDURL(id string) error {
	bad := func(why string) error {
		return failure.New(failure.InvalidArguments, "client_id %s is not a client metadata URL: %s", quote(id), why)
	}
	if len(id) > MaxURL {
		return bad("longer than " + strconv.Itoa(MaxURL) + " bytes")
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return bad("it has a character other than printable ASCII")
		}
	}
	if !strings.HasPrefix(id, "https://") {
		return bad("it is not an https URL")
	}
	if strings.Contains(id, "#") {
		return bad("it has a fragment")
	}
	u, err := url.Parse(id)
	if err != nil {
		return bad("it does not parse as a URL")
	}
	switch {
	case u.User != nil:
		return bad("it has userinfo")
	case u.Hostname() == "":
		return bad("it has no host")
	case u.Path == "" || u.Path == "/":
		return bad("it has no path")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return bad(`it has a "." or ".." path segment`)
		}
	}
	return nil
}

// isLoopbackHost reports whether host (a URL's Hostname) is one of the
// loopback hosts a redirect URI may use over http.
func isLoopbackHost(host string) bool {
	return strings.EqualFold(host, "localhost") || host == "127.0.0.1" || host == "::1"
}
