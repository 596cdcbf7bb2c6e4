package pgnotify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
)

// Timing of the listener.
const (
	// PollInterval is how often every subscriber is woken while
	// notifications cannot be trusted (the connection is down, or the
	// pooler probe found they do not arrive), within ±PollJitter.
	PollInterval = time.Second
	PollJitter   = PollInterval / 10
	// ReconnectMin is the wait after a failed connection attempt; each
	// further failure doubles it, up to ReconnectMax (±10% jitter, so
	// replicas do not reconnect in step). A dropped connection is
	// reconnected at once the first time.
	ReconnectMin = 100 * time.Millisecond
	ReconnectMax = 5 * time.Second
	// PingAfter is how long the connection may be silent before the
	// listener pings it, so a dead connection is found within
	// PingAfter + CommandTimeout.
	PingAfter = 5 * time.Second
	// ConnectTimeout bounds taking the connection from the pool;
	// CommandTimeout bounds one LISTEN or ping; CloseTimeout bounds the
	// goodbye on a connection being closed.
	ConnectTimeout = 10 * time.Second
	CommandTimeout = 10 * time.Second
	CloseTimeout   = time.Second
	// ProbeTimeout bounds how long Probe waits for its own notification.
	ProbeTimeout = 2 * time.Second
)

// probeChannel is the private channel of Probe (its payload is a random
// token, so concurrent probes of several replicas do not answer each
// other).
const probeChannel = "webcodex_pgnotify_probe"

// A ProbeResult says whether a notification sent through the pool reached
// the listener.
type ProbeResult string

// Probe results.
const (
	ProbeNotRun       ProbeResult = "not_run"
	ProbeDelivered    ProbeResult = "delivered"
	ProbeNotDelivered ProbeResult = "not_delivered"
)

// Status is what an operator or a test can see of a listener.
type Status struct {
	// Connected is true while the LISTEN connection is up.
	Connected bool
	// PID is the connection's backend process id while Connected (the
	// pid column of pg_stat_activity).
	PID uint32
	// Connects counts connections made; Reconnects those after the
	// first; Disconnects connections lost.
	Connects, Reconnects, Disconnects uint64
	// PollWakes counts the wakes of every subscriber made by the poll;
	// Pings the pings after PingAfter of silence that the connection
	// answered.
	PollWakes, Pings uint64
	// Probe is the last Probe's result.
	Probe ProbeResult
}

// A Listener holds one process's LISTEN connection and wakes the
// subscribers of its Topics. Make it with [Start]; end it with Close.
type Listener struct {
	db     *pgdb.DB
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	topics map[string]*Topic
	// listened are the channels LISTENed on the current connection.
	listened map[string]bool
	st       Status
	// changed is closed (and replaced) at every change of st or of the
	// channels listened.
	changed chan struct{}
	// interrupt, while the loop waits for a notification, ends the wait
	// so that a new Topic's channel is LISTENed.
	interrupt context.CancelFunc
	// probes are the tokens of the probes waiting for their notification.
	probes map[string]chan struct{}
	// stopped is closed by Close.
	stopped chan struct{}
	once    sync.Once
}

// Start starts db's listener: it takes one connection from db's pool for
// good and LISTENs on it until ctx ends or Close. It returns at once;
// until the connection is up, subscribers are woken every PollInterval.
// Call [Listener.Probe] once it has started, to learn whether
// notifications arrive at all (they do not through a transaction-mode
// pooler).
func Start(ctx context.Context, db *pgdb.DB, log *slog.Logger) *Listener {
	ctx, cancel := context.WithCancel(ctx)
	l := &Listener{
		db: db, log: log, cancel: cancel,
		topics:   map[string]*Topic{probeChannel: newTopic(probeChannel)},
		listened: map[string]bool{},
		st:       Status{Probe: ProbeNotRun},
		changed:  make(chan struct{}),
		probes:   map[string]chan struct{}{},
		stopped:  make(chan struct{}),
	}
	l.wg.Add(2)
	go l.run(ctx)
	go l.poll(ctx)
	return l
}

// Close stops the listener and closes its connection; when it returns no
// goroutine of the listener is left. Subscribers are no longer woken by
// other replicas' notifications (a local Notify still wakes them).
func (l *Listener) Close() {
	l.once.Do(func() { close(l.stopped) })
	l.cancel()
	l.wg.Wait()
}

// Topic returns the topic of channel, LISTENed from now on (subscribers
// that subscribe before the LISTEN is in place are woken once it is). It
// panics if channel is not 1-MaxChannelBytes bytes of text (a channel is a
// constant of the code, never input).
func (l *Listener) Topic(channel string) *Topic {
	if err := checkChannel(channel); err != nil || channel == probeChannel {
		panic(fmt.Sprintf("pgnotify: %q cannot be a topic's channel", channel))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.topics[channel]; t != nil {
		return t
	}
	t := newTopic(channel)
	l.topics[channel] = t
	if l.interrupt != nil {
		l.interrupt()
	}
	l.changedLocked()
	return t
}

// Status returns the listener's state now.
func (l *Listener) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// Changed returns a channel closed at the next change of Status or of the
// channels LISTENed.
func (l *Listener) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Ready waits until the connection is up and LISTENs on the channel of
// every Topic made so far.
//
// Errors: failure.Cancelled when ctx ends first; failure.Unavailable when
// the listener is closed.
func (l *Listener) Ready(ctx context.Context) error {
	for {
		l.mu.Lock()
		ready := l.st.Connected && l.pendingLocked() == ""
		changed := l.changed
		l.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return failure.Wrap(failure.Cancelled, ctx.Err(), "pgnotify: cancelled waiting for the LISTEN connection")
		case <-l.stopped:
			return failure.New(failure.Unavailable, "pgnotify: the listener is closed")
		}
	}
}

// Probe checks that a notification sent through the pool reaches the
// listener within ProbeTimeout, once the listener is Ready. When it does
// not (a transaction-mode pooler such as PgBouncer cannot LISTEN), it logs
// one warning and the listener wakes every subscriber every PollInterval
// from then on: waits fall back to polling. A later Probe that succeeds
// ends the polling.
//
// Errors: failure.Unavailable when the notification did not arrive (or
// could not be sent); the errors of Ready.
func (l *Listener) Probe(ctx context.Context) error {
	if err := l.Ready(ctx); err != nil {
		return err
	}
	token := fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
	arrived := make(chan struct{})
	l.mu.Lock()
	connects := l.st.Connects
	l.probes[token] = arrived
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.probes, token)
		l.mu.Unlock()
	}()
	if _, err := l.db.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, probeChannel, token); err != nil {
		return failure.Wrap(failure.Unavailable, err, "pgnotify: the probe notification could not be sent")
	}
	timer := time.NewTimer(ProbeTimeout)
	defer timer.Stop()
	select {
	case <-arrived:
		l.setProbe(ProbeDelivered)
		return nil
	case <-timer.C:
	case <-ctx.Done():
		return failure.Wrap(failure.Cancelled, ctx.Err(), "pgnotify: the probe was cancelled")
	case <-l.stopped:
		return failure.New(failure.Unavailable, "pgnotify: the listener is closed")
	}
	l.mu.Lock()
	same := l.st.Connected && l.st.Connects == connects
	l.mu.Unlock()
	if !same {
		return failure.New(failure.Unavailable, "pgnotify: the LISTEN connection was lost during the probe; probe again")
	}
	l.setProbe(ProbeNotDelivered)
	l.log.Warn("pgnotify: a notification sent through the pool never reached the LISTEN connection (a transaction-mode pooler such as PgBouncer cannot LISTEN): waits across replicas fall back to polling",
		"database", l.db.URL(), "waited", ProbeTimeout, "poll_interval", PollInterval)
	return failure.New(failure.Unavailable, "pgnotify: a notification sent through the pool did not arrive within %s (a transaction-mode pooler?): waits across replicas fall back to polling every %s", ProbeTimeout, PollInterval)
}

func (l *Listener) setProbe(r ProbeResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Probe = r
	l.changedLocked()
}

// changedLocked signals a change to Changed's callers; l.mu is held.
func (l *Listener) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// pendingLocked returns a channel of a Topic not yet LISTENed on the
// current connection, or ""; l.mu is held.
func (l *Listener) pendingLocked() string {
	for c := range l.topics {
		if !l.listened[c] {
			return c
		}
	}
	return ""
}

// wakeAll wakes every subscriber of every topic.
func (l *Listener) wakeAll() {
	l.mu.Lock()
	ts := slices.Collect(maps.Values(l.topics))
	l.mu.Unlock()
	for _, t := range ts {
		t.wakeAll()
	}
}

// run connects, listens until the connection fails, and reconnects, until
// ctx ends.
func (l *Listener) run(ctx context.Context) {
	defer l.wg.Done()
	wait := ReconnectMin
	for {
		conn, err := l.connect(ctx)
		if err == nil {
			wait = ReconnectMin
			err = l.listen(ctx, conn)
			l.drop(ctx, conn)
			if ctx.Err() != nil {
				return
			}
			l.log.Warn("pgnotify: the LISTEN connection dropped: waits fall back to polling until it is back", "err", err)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// One warning per outage; the retries that follow are debug.
		level := slog.LevelDebug
		if wait == ReconnectMin {
			level = slog.LevelWarn
		}
		l.log.Log(ctx, level, "pgnotify: cannot open the LISTEN connection: waits fall back to polling", "err", err, "retry_in", wait)
		t := time.NewTimer(jitter(wait, wait/10))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		wait = nextBackoff(wait)
	}
}

// nextBackoff doubles a reconnection wait up to ReconnectMax.
func nextBackoff(d time.Duration) time.Duration { return min(2*d, ReconnectMax) }

// jitter returns d ± j, uniformly.
func jitter(d, j time.Duration) time.Duration {
	return d - j + time.Duration(rand.Int64N(int64(2*j)+1))
}

// connect takes a connection from the pool for good (hijacked: it is
// closed, never released, so its LISTENs never reach another query).
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	pc, err := l.db.Pool.Acquire(cctx)
	if err != nil {
		return nil, err
	}
	return pc.Hijack(), nil
}

// drop closes conn and, if it was up, wakes every subscriber: what was
// notified while it failed is only seen by re-reading.
func (l *Listener) drop(ctx context.Context, conn *pgx.Conn) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CloseTimeout)
	conn.Close(cctx)
	cancel()
	l.mu.Lock()
	was := l.st.Connected
	l.mu.Unlock()
	// Woken before the state says disconnected: whoever subscribes after
	// that is woken by the poll.
	if was && ctx.Err() == nil {
		l.wakeAll()
	}
	l.mu.Lock()
	if was {
		l.st.Disconnects++
	}
	l.st.Connected, l.st.PID = false, 0
	l.listened = map[string]bool{}
	l.changedLocked()
	l.mu.Unlock()
}

// listen LISTENs on every topic's channel, marks the connection up, wakes
// every subscriber once (they re-read: anything missed before is seen),
// then dispatches notifications until the connection fails or ctx ends.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn) error {
	if err := l.listenPending(ctx, conn); err != nil {
		return err
	}
	// Woken after the LISTENs are in place and before the state says
	// connected, so a subscriber that sees it connected is woken only by
	// what comes after.
	l.wakeAll()
	l.mu.Lock()
	l.st.Connected, l.st.PID = true, conn.PgConn().PID()
	if l.st.Connects++; l.st.Connects > 1 {
		l.st.Reconnects++
	}
	reconnected := l.st.Reconnects > 0
	l.changedLocked()
	l.mu.Unlock()
	if reconnected {
		l.log.Info("pgnotify: the LISTEN connection is back: waits wake by notification again", "pid", conn.PgConn().PID())
	}
	for {
		if err := l.listenPending(ctx, conn); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, PingAfter)
		l.mu.Lock()
		if l.pendingLocked() != "" {
			l.mu.Unlock()
			cancel()
			continue
		}
		l.interrupt = cancel
		l.mu.Unlock()
		n, err := conn.WaitForNotification(wctx)
		l.mu.Lock()
		l.interrupt = nil
		l.mu.Unlock()
		silent := errors.Is(wctx.Err(), context.DeadlineExceeded)
		interrupted := errors.Is(wctx.Err(), context.Canceled)
		cancel()
		switch {
		case err == nil:
			l.dispatch(n)
		case ctx.Err() != nil:
			return ctx.Err()
		case conn.IsClosed():
			return err
		case silent:
			pctx, cancel := context.WithTimeout(ctx, CommandTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping after %s of silence: %w", PingAfter, err)
			}
			l.mu.Lock()
			l.st.Pings++
			l.changedLocked()
			l.mu.Unlock()
		case !interrupted:
			return err
		}
	}
}

// listenPending LISTENs on the channels of the topics not yet LISTENed on
// conn. While the connection is up, a new topic's subscribers are then
// woken: they may have subscribed before the LISTEN was in place.
func (l *Listener) listenPending(ctx context.Context, conn *pgx.Conn) error {
	for {
		l.mu.Lock()
		c := l.pendingLocked()
		l.mu.Unlock()
		if c == "" {
			return nil
		}
		lctx, cancel := context.WithTimeout(ctx, CommandTimeout)
		_, err := conn.Exec(lctx, "LISTEN "+pgx.Identifier{c}.Sanitize())
		cancel()
		if err != nil {
			return fmt.Errorf("listen %s: %w", c, err)
		}
		l.mu.Lock()
		t, up := l.topics[c], l.st.Connected
		l.mu.Unlock()
		if up {
			t.wakeAll()
		}
		l.mu.Lock()
		l.listened[c] = true
		l.changedLocked()
		l.mu.Unlock()
	}
}

// dispatch wakes the subscribers a notification names.
func (l *Listener) dispatch(n *pgconn.Notification) {
	l.mu.Lock()
	if n.Channel == probeChannel {
		if ch := l.probes[n.Payload]; ch != nil {
			close(ch)
			delete(l.probes, n.Payload)
		}
		l.mu.Unlock()
		return
	}
	t := l.topics[n.Channel]
	l.mu.Unlock()
	if t != nil {
		t.Notify(n.Payload)
	}
}

// poll wakes every subscriber every PollInterval (±PollJitter) while
// notifications cannot be trusted: the connection is down, or the probe
// found they do not arrive.
func (l *Listener) poll(ctx context.Context) {
	defer l.wg.Done()
	var timer *time.Timer
	var tick <-chan time.Time
	for {
		l.mu.Lock()
		polling := l.pollingLocked()
		changed := l.changed
		l.mu.Unlock()
		switch {
		case polling && timer == nil:
			timer = time.NewTimer(jitter(PollInterval, PollJitter))
			tick = timer.C
		case !polling && timer != nil:
			timer.Stop()
			timer, tick = nil, nil
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-changed:
		case <-tick:
			l.mu.Lock()
			wake := l.pollingLocked()
			if wake {
				l.st.PollWakes++
				l.changedLocked()
			}
			l.mu.Unlock()
			if wake {
				l.wakeAll()
			}
			timer.Reset(jitter(PollInterval, PollJitter))
		}
	}
}

func (l *Listener) pollingLocked() bool {
	return !l.st.Connected || l.st.Probe == ProbeNotDelivered
}
