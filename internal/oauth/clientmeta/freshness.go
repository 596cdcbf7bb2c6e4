package clientmeta

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Freshness returns how long a document whose response had header h, and
// arrived at now, may be used before it is fetched again (RFC 9111 §4.2.1,
// as a private cache):
//
//   - Cache-Control no-store or no-cache: MinCacheTTL (the server keeps the
//     client it enrolled, but asks again as soon as the bound allows);
//   - else Cache-Control max-age=N: N seconds (a malformed max-age counts
//     as 0, RFC 9111 §1.2.2);
//   - else Expires: its distance from the response's Date (from now when
//     Date is absent or malformed); a malformed Expires is already stale;
//   - else DefaultCacheTTL.
//
// A lifetime from max-age or Expires is reduced by the response's Age (the
// time it already spent in caches on the way). The result is clamped to
// [MinCacheTTL, MaxCacheTTL].
func Freshness(h http.Header, now time.Time) time.Duration {
	return clampTTL(lifetime(h, now))
}

func lifetime(h http.Header, now time.Time) time.Duration {
	maxAge, hasMaxAge := time.Duration(0), false
	for _, line := range h.Values("Cache-Control") {
		for _, d := range strings.Split(line, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return MinCacheTTL
			case "max-age":
				if !hasMaxAge {
					maxAge, hasMaxAge = parseSeconds(strings.Trim(strings.TrimSpace(value), `"`)), true
				}
			}
		}
	}
	age := parseSeconds(h.Get("Age"))
	if hasMaxAge {
		return maxAge - age
	}
	if expires := h.Get("Expires"); expires != "" {
		at, err := http.ParseTime(expires)
		if err != nil {
			return 0
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = now
		}
		return at.Sub(date) - age
	}
	return DefaultCacheTTL
}

// parseSeconds reads a delta-seconds value; anything else is 0. A value
// beyond MaxCacheTTL is MaxCacheTTL (it is clamped anyway).
func parseSeconds(s string) time.Duration {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > int64(MaxCacheTTL/time.Second) {
		return MaxCacheTTL
	}
	return time.Duration(n) * time.Second
}

func clampTTL(d time.Duration) time.Duration {
	return min(max(d, MinCacheTTL), MaxCacheTTL)
}
