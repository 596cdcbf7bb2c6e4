package audit

import (
	"sync"
	"time"
)

// AffinityCacheTTL bounds how long the service trusts a session it
// resolved before asking the store again. Within this process the cache
// is exact (it is dropped whenever another session becomes active or a
// session is closed); a session closed by another process, such as the
// webcodex audit close command, stops being reused within this time.
const AffinityCacheTTL = time.Second

// maxKnownIDs bounds the cache of explicit ids known to exist.
const maxKnownIDs = 1024

// affinityCache remembers the idle-reuse session and explicit ids that
// exist, so that most requests resolve their audit session without a
// database query.
type affinityCache struct {
	mu sync.Mutex
	// idle is the session idle reuse picked, its last activity (unix
	// seconds) and when the store was last asked.
	idle    string
	active  int64
	checked time.Time
	known   map[string]time.Time // explicit id -> when the store confirmed it
}

// lookup returns the cached answer for explicit ("" for idle reuse) at
// now, or "" when the store must be asked.
func (c *affinityCache) lookup(explicit string, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if explicit != "" {
		if at, ok := c.known[explicit]; ok && now.Sub(at) < AffinityCacheTTL {
			return explicit
		}
		return ""
	}
	if c.idle != "" && now.Sub(c.checked) < AffinityCacheTTL && now.Unix()-c.active < int64(IdleReuse/time.Second) {
		return c.idle
	}
	return ""
}

// store records what the store answered at now.
func (c *affinityCache) store(explicit string, r Resolved, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if explicit != "" {
		if c.known == nil || len(c.known) >= maxKnownIDs {
			c.known = map[string]time.Time{}
		}
		c.known[explicit] = now
		if r.ID != c.idle {
			c.idle = "" // another session is now the most recently active
		}
		return
	}
	c.idle, c.active, c.checked = r.ID, r.UpdatedAt, now
}

// touch notes activity in session id at now: the idle session stays
// cached; activity anywhere else may change which session idle reuse
// picks, so the idle answer is dropped.
func (c *affinityCache) touch(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == c.idle {
		c.active = max(c.active, now.Unix())
		return
	}
	c.idle = ""
}

// forget drops everything (a session was closed).
func (c *affinityCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle, c.known = "", nil
}
