package telemetry

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Bounds of the headers sent with every export request.
const (
	// MaxHeaders bounds how many headers [telemetry] headers and the
	// OTEL_EXPORTER_OTLP_(TRACES_)HEADERS variables may set together.
	MaxHeaders = 32
	// MaxHeaderBytes bounds the names and values of those headers
	// together (a collector's API key is tens of bytes).
	MaxHeaderBytes = 8192
)

// ErrHeaders is the cause of every refused export header. Its messages
// name the header (or the entry's position) and never show a value: a
// header is where a collector's API key is.
var ErrHeaders = errors.New("bad OTLP export header")

// ParseHeaders reads the value of OTEL_EXPORTER_OTLP_HEADERS (or
// OTEL_EXPORTER_OTLP_TRACES_HEADERS): comma-separated name=value pairs,
// as W3C baggage writes them, each value percent-decoded and both sides
// trimmed of spaces; an empty entry (a trailing comma) is skipped. Names
// are canonical header names (http.CanonicalHeaderKey); a later pair
// wins over an earlier one of the same name. An entry without "=", a
// name that is not an HTTP token, a value that does not percent-decode
// or holds a control character is refused with an error wrapping
// ErrHeaders that never shows the value.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, entry := range strings.Split(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		name, raw, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, fmt.Errorf("%w: entry %d is not name=value with an HTTP token as the name", ErrHeaders, i+1)
		}
		value, err := url.PathUnescape(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: the value of %s is not percent-encoded text", ErrHeaders, name)
		}
		out[http.CanonicalHeaderKey(name)] = strings.TrimSpace(value)
	}
	if err := checkHeaders(out); err != nil {
		return nil, err
	}
	return out, nil
}

// MergeHeaders returns base with over's headers added, a header of over
// replacing one of base with the same (case-insensitive) name; neither
// map is changed.
func MergeHeaders(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[http.CanonicalHeaderKey(k)] = v
	}
	for k, v := range over {
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out
}

// checkHeaders refuses more than MaxHeaders headers or MaxHeaderBytes,
// a name that is not an HTTP token, and a value with a control
// character (one that could end the header line), without showing it.
func checkHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("%w: %d headers, at most %d", ErrHeaders, len(h), MaxHeaders)
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(h)) {
		v := h[name]
		if !validHeaderName(name) {
			return fmt.Errorf("%w: a name is not an HTTP token", ErrHeaders)
		}
		for i := 0; i < len(v); i++ {
			if (v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f {
				return fmt.Errorf("%w: the value of %s holds a control character", ErrHeaders, name)
			}
		}
		total += len(name) + len(v)
	}
	if total > MaxHeaderBytes {
		return fmt.Errorf("%w: %d bytes of names and values, at most %d", ErrHeaders, total, MaxHeaderBytes)
	}
	return nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
