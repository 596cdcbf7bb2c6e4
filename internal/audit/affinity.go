package audit

import (
	"sync"
	"time"
)

// AffinityCacheTTL bounds how long the service trusts a session it
// resolved before asking the store again. Within this process the cache
// is exact (a principal's idle answer is dropped whenever another of its
// sessions becomes active, and everything when a session is closed); a
// session closed by another process, such as the webcodex audit close
// command, stops being reused within this time.
const AffinityCacheTTL = time.Second

// maxCachedAffinities bounds each map of the affinity cache (explicit
// ids, principals' idle answers, sessions' owners); a full map is
// emptied, which costs store reads, never a wrong answer.
const maxCachedAffinities = 1024

// affinityCache remembers, per principal, the idle-reuse session and the
// sessions explicit ids resolved to, so that most requests resolve their
// audit session without a database query.
type affinityCache struct {
	mu    sync.Mutex
	idle  map[string]idleAnswer    // principal -> idle reuse's session
	known map[knownKey]knownAnswer // (principal, explicit id) -> session
	owner map[string]string        // session id -> its principal
}

// idleAnswer is the session idle reuse picked for a principal, its last
// activity (unix seconds) and when the store was last asked.
type idleAnswer struct {
	id      string
	active  int64
	checked time.Time
}

type knownKey struct{ principal, explicit string }

// knownAnswer is the session an explicit id resolved to and when the
// store confirmed it.
type knownAnswer struct {
	id string
	at time.Time
}

// lookup returns the cached answer for principal and explicit ("" for
// idle reuse) at now, or "" when the store must be asked.
func (c *affinityCache) lookup(principal, explicit string, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if explicit != "" {
		if k, ok := c.known[knownKey{principal, explicit}]; ok && now.Sub(k.at) < AffinityCacheTTL {
			return k.id
		}
		return ""
	}
	if a, ok := c.idle[principal]; ok && now.Sub(a.checked) < AffinityCacheTTL && now.Unix()-a.active < int64(IdleReuse/time.Second) {
		return a.id
	}
	return ""
}

// store records what the store answered at now.
func (c *affinityCache) store(principal, explicit string, r Resolved, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner == nil || len(c.owner) >= maxCachedAffinities {
		c.owner = map[string]string{}
	}
	c.owner[r.ID] = principal
	if explicit != "" {
		if c.known == nil || len(c.known) >= maxCachedAffinities {
			c.known = map[knownKey]knownAnswer{}
		}
		c.known[knownKey{principal, explicit}] = knownAnswer{r.ID, now}
		if c.idle[principal].id != r.ID {
			delete(c.idle, principal) // another session is now its most recently active
		}
		return
	}
	if c.idle == nil || len(c.idle) >= maxCachedAffinities {
		c.idle = map[string]idleAnswer{}
	}
	c.idle[principal] = idleAnswer{r.ID, r.UpdatedAt, now}
}

// touch notes activity in session id at now: the idle session of its
// principal stays cached; activity in another of that principal's
// sessions may change which session idle reuse picks for it, so that
// answer is dropped (every idle answer when id's principal is unknown).
func (c *affinityCache) touch(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	principal, ok := c.owner[id]
	if !ok {
		clear(c.idle)
		return
	}
	if a, ok := c.idle[principal]; ok && a.id == id {
		a.active = max(a.active, now.Unix())
		c.idle[principal] = a
		return
	}
	delete(c.idle, principal)
}

// forget drops everything (a session was closed).
func (c *affinityCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle, c.known, c.owner = nil, nil, nil
}
