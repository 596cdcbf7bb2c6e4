package oauthhttp

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate limits of the endpoints: each key (an endpoint and an address, or
// the token endpoint and a client id) may make LimitBurst requests at once
// and LimitPerWindow more per limitWindow, which bounds guessing at the
// token endpoint (codes, refresh tokens, client secrets) and unauthenticated
// registrations.
const (
	LimitBurst     = 20
	LimitPerWindow = 20
	limitWindow    = time.Minute
	// MaxLimitKeys bounds the keys remembered; when full, the table starts
	// over empty (every key gets its burst again).
	MaxLimitKeys = 4096
)

// limits holds a token bucket per endpoint and key.
type limits struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*rate.Limiter
}

func newLimits(now func() time.Time) *limits {
	return &limits{now: now, m: map[string]*rate.Limiter{}}
}

// allow reports whether the request of key at endpoint may proceed, and
// counts it.
func (l *limits) allow(endpoint, key string) bool {
	k := endpoint + "\x00" + key
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[k]
	if !ok {
		if len(l.m) >= MaxLimitKeys {
			clear(l.m)
		}
		lim = rate.NewLimiter(rate.Every(limitWindow/LimitPerWindow), LimitBurst)
		l.m[k] = lim
	}
	return lim.AllowN(l.now(), 1)
}
