package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/cursortoken"
	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of message observation.
const (
	// ObservationTokenPrefix starts every observation token (wso1_ was
	// the unkeyed format before decision 0051; such a token is refused).
	ObservationTokenPrefix = "wso2_"
	// ObservationKeyBytes is the size of the secret key a BoardStore
	// holds to authenticate observation tokens and assignment fences.
	ObservationKeyBytes = cursortoken.KeyBytes
	// MaxObservationTokenChars bounds an observation token as accepted.
	MaxObservationTokenChars = 192
	// MinObserveWait and MaxObserveWait bound one observation's wait.
	MinObserveWait = time.Second
	MaxObserveWait = 60 * time.Second
	// ObserveDefault and ObserveMax bound the changes one observation
	// returns.
	ObserveDefault = 50
	ObserveMax     = 100
)

// Why an observation returned (Observation.WaitOutcome).
const (
	WaitNone    = "not_waited"
	WaitUpdated = "updated"
	WaitTimeout = "timeout"
)

// A Notifier wakes observers waiting on a session's board. It is a wake
// signal only: an observer re-reads the durable revision after every wake,
// so a spurious or missed wake never changes what it returns (a missed
// wake is seen at the end of the wait). An implementation for several
// replicas (PostgreSQL LISTEN/NOTIFY) can replace [LocalNotifier].
type Notifier interface {
	// Subscribe returns a channel that is closed by a later Notify of
	// session id, and a function that ends the subscription.
	Subscribe(id string) (<-chan struct{}, func())
	// Notify wakes the current subscribers of session id.
	Notify(id string)
}

// LocalNotifier is the in-process Notifier.
type LocalNotifier struct {
	mu   sync.Mutex
	subs map[string]*wakeup
}

type wakeup struct {
	ch   chan struct{}
	refs int
}

// NewLocalNotifier returns an in-process Notifier.
func NewLocalNotifier() *LocalNotifier { return &LocalNotifier{subs: map[string]*wakeup{}} }

// Subscribe implements Notifier.
func (n *LocalNotifier) Subscribe(id string) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w := n.subs[id]
	if w == nil {
		w = &wakeup{ch: make(chan struct{})}
		n.subs[id] = w
	}
	w.refs++
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if w.refs--; w.refs == 0 && n.subs[id] == w {
				delete(n.subs, id)
			}
		})
	}
}

// Notify implements Notifier.
func (n *LocalNotifier) Notify(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if w := n.subs[id]; w != nil {
		close(w.ch)
		delete(n.subs, id)
	}
}

// observationFormat is the board's token format (decision 0051): the
// revision and the board generation under the store's ObservationKey.
var observationFormat = cursortoken.Format{Prefix: ObservationTokenPrefix, Label: "webcodex observation token v2 ",
	Fields: 2, MaxChars: MaxObservationTokenChars}

// tokenKeys make and check a board's observation tokens.
type tokenKeys struct{ keys cursortoken.Keys }

func newTokenKeys(key []byte) tokenKeys {
	if len(key) != ObservationKeyBytes {
		panic("workflow: the board store's observation key is not ObservationKeyBytes long")
	}
	return tokenKeys{cursortoken.New(observationFormat, key)}
}

// makeToken is the cursor token (package cursortoken) of the revision and
// the board generation for session: opaque (the revision is not in clear)
// and unforgeable without the store's key.
func (k tokenKeys) makeToken(session string, generation, revision int64) string {
	return k.keys.Make(session, uint64(revision), uint64(generation))
}

func badToken(why string) error {
	return failure.New(failure.InvalidObservationToken, "after_observation_token %s; call observe_session_messages without a token for a new baseline", why)
}

// parseToken returns the revision of a token issued for session at its
// board's current generation and revision; anything else (malformed,
// oversized, edited, forged without the key, another session's, another
// generation's, or a revision the board has not reached) is
// invalid_observation_token.
func (k tokenKeys) parseToken(tok, session string, st BoardState) (int64, error) {
	fields, err := k.keys.Parse(tok, session)
	switch {
	case errors.Is(err, cursortoken.ErrTooLong):
		return 0, badToken(fmt.Sprintf("is longer than %d characters", MaxObservationTokenChars))
	case errors.Is(err, cursortoken.ErrMalformed):
		return 0, badToken("is not an observation token")
	case err != nil:
		return 0, badToken("was not issued for this session")
	}
	rev, gen := int64(fields[0]), int64(fields[1])
	if rev < 0 || gen != st.Generation || rev > st.ObservationRevision {
		return 0, badToken("is from another generation of this session's board")
	}
	return rev, nil
}

// ObserveParams describe one observation.
type ObserveParams struct {
	SessionID string
	// Token is the after_observation_token; empty asks for a baseline.
	Token string
	// Wait, only with a token, waits up to this long (MinObserveWait to
	// MaxObserveWait) once for a change when there is none yet.
	Wait time.Duration
	// Limit bounds the changes returned (0: ObserveDefault).
	Limit int
	// BeforeWait, when set, is called once right before the call starts
	// to wait; an error ends the call without waiting.
	BeforeWait func() error
}

// An Observation is one read of a board's changes after a cursor.
type Observation struct {
	// Messages are the retained messages whose latest observable state
	// changed after the cursor, in the order of those changes (each
	// message once, in its current state).
	Messages []Message `json:"messages"`
	Changed  bool      `json:"changed"`
	// HasMore is true when more changes follow the last one returned; the
	// token then advances only through it.
	HasMore bool `json:"has_more"`
	// HistoryLost is true when state changed after the cursor was removed
	// by retention and cannot be shown.
	HistoryLost bool `json:"history_lost"`
	// Baseline is true for a call without a token: no history, a token.
	Baseline    bool   `json:"baseline"`
	WaitOutcome string `json:"wait_outcome"`
	Token       string `json:"observation_token"`
	// Fetches are the recorded assignment fetches of the open todos in
	// Messages (internal, see [Board.RecordFetch]); shared between
	// observers, never modified.
	Fetches map[string]TodoFetch `json:"-"`
}

// Observe returns a board's changes after p.Token (a current-state delta,
// not an event log), or a baseline token without one. The wait holds no
// store lock: it subscribes to the notifier, re-reads the durable state,
// and waits only when nothing changed; a timeout is a successful,
// unchanged result. It works on closed sessions.
func (b *Board) Observe(ctx context.Context, p ObserveParams) (Observation, error) {
	switch {
	case p.Limit == 0:
		p.Limit = ObserveDefault
	case p.Limit < 0 || p.Limit > ObserveMax:
		return Observation{}, failure.New(failure.InvalidArguments, "limit must be 1-%d", ObserveMax)
	}
	if p.Wait != 0 && (p.Token == "" || p.Wait < MinObserveWait || p.Wait > MaxObserveWait) {
		return Observation{}, failure.New(failure.InvalidArguments, "wait_seconds must be 1-60 and needs after_observation_token")
	}
	if p.Token == "" {
		var o Observation
		err := b.store.ViewBoard(ctx, p.SessionID, func(r BoardReader) error {
			st, err := r.State()
			o = Observation{Messages: []Message{}, Baseline: true, WaitOutcome: WaitNone,
				Token: b.tokens.makeToken(p.SessionID, st.Generation, st.ObservationRevision)}
			return err
		})
		return o, err
	}
	wake, cancel := b.notify.Subscribe(p.SessionID)
	defer cancel()
	o, err := b.changes(ctx, p)
	if err != nil || o.Changed || p.Wait == 0 {
		return o, err
	}
	// Counted from here, BeforeWait included, to the return.
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	if p.BeforeWait != nil {
		if err := p.BeforeWait(); err != nil {
			return Observation{}, err
		}
	}
	timer := time.NewTimer(p.Wait)
	defer timer.Stop()
	for {
		select {
		case <-wake:
			woke := wake
			cancel()
			wake, cancel = b.notify.Subscribe(p.SessionID)
			if o, err = b.sharedChanges(ctx, p, woke, wake); err != nil || o.Changed {
				o.WaitOutcome = WaitUpdated
				return o, err
			}
		case <-timer.C:
			// A change the notifier did not carry (another process)
			// is still seen here.
			o, err = b.changes(ctx, p)
			o.WaitOutcome = WaitTimeout
			if o.Changed {
				o.WaitOutcome = WaitUpdated
			}
			return o, err
		case <-ctx.Done():
			return Observation{}, ctx.Err()
		}
	}
}

// changes reads the changes after p.Token from one snapshot.
func (b *Board) changes(ctx context.Context, p ObserveParams) (Observation, error) {
	var o Observation
	err := b.store.ViewBoard(ctx, p.SessionID, func(r BoardReader) error {
		st, err := r.State()
		if err != nil {
			return err
		}
		after, err := b.tokens.parseToken(p.Token, p.SessionID, st)
		if err != nil {
			return err
		}
		ms, err := r.Changed(after, p.Limit+1)
		if err != nil {
			return err
		}
		o = Observation{Messages: ms, WaitOutcome: WaitNone, HistoryLost: after < st.ObservationLowWatermark}
		next := st.ObservationRevision
		if len(ms) > p.Limit {
			o.Messages, o.HasMore = ms[:p.Limit], true
			next = o.Messages[p.Limit-1].ObservationRevision
		}
		if o.Messages == nil {
			o.Messages = []Message{}
		}
		o.Changed = len(o.Messages) > 0 || o.HistoryLost
		var todos []string
		for _, m := range o.Messages {
			if m.Kind == MessageTodo && m.Status == MessageOpen {
				todos = append(todos, m.ID)
			}
		}
		if o.Fetches, err = r.Fetches(todos); err != nil {
			return err
		}
		o.Token = b.tokens.makeToken(p.SessionID, st.Generation, next)
		return nil
	})
	return o, err
}

// A flight is one read of a board's changes shared by the observers that
// one wake signal woke with the same cursor.
type flight struct {
	// next is the subscription its starter took before the read began.
	// An observer whose own next subscription is another one took it
	// after a later signal, which the read may predate: it must not take
	// an unchanged result from this flight.
	next  <-chan struct{}
	done  chan struct{}
	ended time.Time // zero while the read runs
	o     Observation
	err   error
}

type flightKey struct {
	wake    <-chan struct{}
	session string
	token   string
	limit   int
}

// flightKeep is how long a finished flight still answers the observers
// its wake signal woke late (scheduled after the read ended).
const flightKeep = time.Second

// sharedChanges is changes, read once for every observer woken by the
// same signal (wake) with the same token and limit that has since
// subscribed to the same next signal (next): the read starts after that
// subscription, so it sees the change the signal announced, and any later
// change wakes the observer again, whichever of those observers asks (the
// result is immutable and shared). An observer that subscribed after a
// later signal reads for itself.
func (b *Board) sharedChanges(ctx context.Context, p ObserveParams, wake, next <-chan struct{}) (Observation, error) {
	key := flightKey{wake, p.SessionID, p.Token, p.Limit}
	b.mu.Lock()
	if f := b.flights[key]; f != nil {
		b.mu.Unlock()
		if f.next != next {
			return b.changes(ctx, p)
		}
		select {
		case <-f.done:
			return f.o, f.err
		case <-ctx.Done():
			return Observation{}, ctx.Err()
		}
	}
	now := time.Now()
	for k, f := range b.flights {
		if !f.ended.IsZero() && now.Sub(f.ended) > flightKeep {
			delete(b.flights, k)
		}
	}
	f := &flight{next: next, done: make(chan struct{})}
	if b.flights == nil {
		b.flights = map[flightKey]*flight{}
	}
	b.flights[key] = f
	b.mu.Unlock()
	// Not cancelled with this caller: others wait on the same read.
	o, err := b.changes(context.WithoutCancel(ctx), p)
	b.mu.Lock()
	f.o, f.err, f.ended = o, err, time.Now()
	b.mu.Unlock()
	close(f.done)
	return o, err
}

// Waiting returns how many Observe calls of this board are in their
// bounded wait now (a gauge for /metrics).
func (b *Board) Waiting() int64 { return b.waiting.Load() }
