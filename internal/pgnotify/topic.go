package pgnotify

import "sync"

// A Topic is this process's subscribers of one channel, keyed by id. It
// has the method set of workflow.Notifier: a store that commits a change
// calls [Send] in its transaction (other replicas) and the caller may call
// Notify after the commit (this process, without the round trip).
type Topic struct {
	channel string
	mu      sync.Mutex
	subs    map[string]*wakeup
}

// A wakeup is the channel every current subscriber of one key shares, so
// that observers woken by one signal can tell they were woken together.
type wakeup struct {
	ch   chan struct{}
	refs int
}

func newTopic(channel string) *Topic {
	return &Topic{channel: channel, subs: map[string]*wakeup{}}
}

// Channel returns the PostgreSQL channel the topic listens on.
func (t *Topic) Channel() string { return t.channel }

// Subscribe returns a channel that is closed by the next wake of key (a
// notification of key or of the empty key on the topic's channel, a local
// Notify, or a wake of every subscriber when notifications may have been
// missed), and a function that ends the subscription.
func (t *Topic) Subscribe(key string) (<-chan struct{}, func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.subs[key]
	if w == nil {
		w = &wakeup{ch: make(chan struct{})}
		t.subs[key] = w
	}
	w.refs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if w.refs--; w.refs == 0 && t.subs[key] == w {
				delete(t.subs, key)
			}
		})
	}
}

// Notify wakes this process's current subscribers of key at once; other
// replicas learn of the change from the notification the writer's
// transaction sent ([Send]). An empty key wakes every subscriber.
func (t *Topic) Notify(key string) {
	if key == "" {
		t.wakeAll()
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.subs[key]; w != nil {
		close(w.ch)
		delete(t.subs, key)
	}
}

// wakeAll wakes every current subscriber.
func (t *Topic) wakeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, w := range t.subs {
		close(w.ch)
		delete(t.subs, key)
	}
}
