package pendingcache_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/pendingcache"
)

func TestCache(t *testing.T) {
	c := pendingcache.New(2)
	clean := func(key string, want bool) uint64 {
		t.Helper()
		got, epoch := c.Clean(key)
		if got != want {
			t.Fatalf("Clean(%s) = %v, want %v", key, got, want)
		}
		return epoch
	}
	// Unknown, then found empty: clean until a change.
	c.Found("a", clean("a", false))
	clean("a", true)
	c.Changed()
	clean("a", false)

	// A read begun before a change is stale at once.
	e := clean("a", false)
	c.Changed()
	c.Found("a", e)
	clean("a", false)

	// The other processes' signal: taken in without waiting, and
	// subscribed again each time.
	signal, subscriptions, ended := make(chan struct{}), 0, 0
	c.Watch(func() (<-chan struct{}, func()) { subscriptions++; return signal, func() { ended++ } })
	c.Found("a", clean("a", false))
	clean("a", true)
	close(signal)
	signal = make(chan struct{})
	clean("a", false)
	if subscriptions != 2 || ended != 1 {
		t.Fatalf("%d subscriptions, %d ended; want 2 and 1", subscriptions, ended)
	}

	// The bound: a third key forgets the others.
	c.Found("a", clean("a", false))
	c.Found("b", clean("b", false))
	c.Found("c", clean("c", false))
	clean("c", true)
	clean("a", false)
	c.Close()
	if ended != 2 {
		t.Fatalf("Close ended %d subscriptions in all, want 2", ended)
	}
}
