package accesstoken

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// Bounds of the cache of verified tokens. Each has a test.
const (
	// MaxCachedTokens bounds the verified tokens remembered; when full, the
	// cache is emptied and refilled by the tokens in use.
	MaxCachedTokens = 4096
	// ResultLifetime is how long a verified token is remembered (never
	// past its `exp`): a key the issuer withdraws stops authenticating its
	// tokens at most this much later.
	ResultLifetime = time.Minute
)

// results remembers verified tokens by the SHA-256 of the raw token (never
// the token itself).
type results struct {
	mu sync.RWMutex
	m  map[[sha256.Size]byte]cached
}

type cached struct {
	access Access
	until  time.Time // the earlier of the token's exp and ResultLifetime
}

// get returns the Access remembered for key if it is still valid at now.
func (r *results) get(key [sha256.Size]byte, now time.Time) (Access, bool) {
	r.mu.RLock()
	c, ok := r.m[key]
	r.mu.RUnlock()
	if !ok || !now.Before(c.until) {
		return Access{}, false
	}
	a := c.access
	a.Principal.Scopes = slices.Clone(c.access.Principal.Scopes)
	return a, true
}

// put remembers a until the earlier of now+ResultLifetime and its expiry.
func (r *results) put(key [sha256.Size]byte, a Access, now time.Time) {
	until := now.Add(ResultLifetime)
	if a.Expiry.Before(until) {
		until = a.Expiry
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= MaxCachedTokens {
		r.m = make(map[[sha256.Size]byte]cached)
	}
	a.Principal.Scopes = slices.Clone(a.Principal.Scopes)
	r.m[key] = cached{access: a, until: until}
}

// len returns the number of remembered tokens.
func (r *results) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}
