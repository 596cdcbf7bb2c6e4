// Package pendingcache remembers which keys (sessions) were found to have
// nothing pending in a store, so that a hot path can skip reading the
// store for them until something may be pending again.
//
// Something may be pending again after an epoch change: the local writer
// made something (Changed, called after its commit), or another process
// signalled that it did (Watch: on PostgreSQL a listener topic woken by
// the NOTIFY the writer's transaction sent, and woken too when
// notifications may have been missed). A lookup takes in a signal that has
// arrived, without waiting, before it answers; a read that found nothing
// is remembered with the epoch it started at, so a change committed while
// it ran makes the memory stale at once.
package pendingcache

import "sync"

// Cache is safe for concurrent use. Its zero value is not usable: see New.
type Cache struct {
	mu    sync.Mutex
	epoch uint64
	clean map[string]uint64
	max   int
	// subscribe, wake and unsubscribe are the other processes' signal
	// (Watch); nil without one.
	subscribe   func() (<-chan struct{}, func())
	wake        <-chan struct{}
	unsubscribe func()
}

// New returns a Cache that remembers at most max keys; past that it
// forgets them all (each is read once again).
func New(max int) *Cache { return &Cache{clean: map[string]uint64{}, max: max} }

// Watch gives c the signal of other processes' changes: subscribe
// returns a channel closed at the next such change (or when some may have
// been missed) and a function that ends the subscription. Call it before
// c is used; Close ends the subscription.
func (c *Cache) Watch(subscribe func() (<-chan struct{}, func())) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subscribe = subscribe
	c.wake, c.unsubscribe = subscribe()
}

// Changed tells c that something may be pending for any key: every key is
// read again.
func (c *Cache) Changed() {
	c.mu.Lock()
	c.epoch++
	c.mu.Unlock()
}

// Clean reports whether key was found to have nothing pending and nothing
// changed since; otherwise the caller reads the store and, when it finds
// nothing, calls Found with the returned epoch.
func (c *Cache) Clean(key string) (clean bool, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake != nil {
		select {
		case <-c.wake:
			// Subscribed again before the epoch moves: a signal that
			// arrives in between is for a change this move covers.
			c.unsubscribe()
			c.wake, c.unsubscribe = c.subscribe()
			c.epoch++
		default:
		}
	}
	at, known := c.clean[key]
	return known && at == c.epoch, c.epoch
}

// Found records that a read begun at epoch (from Clean) found nothing
// pending for key.
func (c *Cache) Found(key string, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.clean) >= c.max {
		clear(c.clean)
	}
	c.clean[key] = epoch
}

// Close ends the subscription Watch took.
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unsubscribe != nil {
		c.unsubscribe()
		c.wake, c.subscribe, c.unsubscribe = nil, nil, nil
	}
}
