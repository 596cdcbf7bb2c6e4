package window

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Priority is a peer message's priority.
type Priority string

// Priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
)

// Touch is one meaningful call of a window on a project, as the store
// keeps it.
type Touch struct {
	Principal string
	Window    string
	PeerID    string
	Project   string
	At        time.Time
	// Affinity is the session the call explicitly related the window
	// to (verified recorder, work_on_project), "" when none.
	Affinity string
}

// ProjectActivity is a window's retained activity on one project.
type ProjectActivity struct {
	Project string    `json:"project"`
	FirstAt time.Time `json:"first_meaningful_at"`
	LastAt  time.Time `json:"last_meaningful_at"`
	Calls   int64     `json:"meaningful_calls"`
}

// Message is a retained peer message. FromPeer is the sender's route (the
// recipient may answer it); the analysis facts (projection and ACK
// observation times) are facts only, never delivery or reading.
type Message struct {
	ID          string    `json:"message_id"`
	FromPeer    string    `json:"from_peer_id"`
	ToPeer      string    `json:"to_peer_id"`
	Body        string    `json:"message"`
	RequiresAck bool      `json:"requires_ack"`
	Priority    Priority  `json:"priority"`
	CreatedAt   time.Time `json:"created_at"`

	// Projected is the analysis fact delivery reads: the message was
	// projected before (an ordinary message is shown once). Whether an
	// ACK was ever observed is never read: it says nothing of the
	// current model context.
	Projected bool `json:"-"`

	// Principal and ToWindow address the message; never serialized.
	Principal  string `json:"-"`
	ToWindow   string `json:"-"`
	FromWindow string `json:"-"`
}

// Prune says what retention removes in a store write.
type Prune struct {
	ActivityBefore  time.Time // activity rows last active before this
	MessagesBefore  time.Time // messages created before this
	MaxRows         int       // activity rows kept per principal
	MaxMessagesEach int       // messages kept per recipient window
}

// Store persists window activity and peer messages.
type Store interface {
	// Touch records t behind the caller, without making it durable
	// (activity is observational): an upsert that never moves last
	// activity backwards, and the retention of p. It returns when t is
	// queued; then, when set, receives the write's outcome.
	Touch(ctx context.Context, t Touch, p Prune, then func(error)) error
	// Flush waits until every Touch queued so far has been written (or
	// failed), so that a read sees the activity of every call answered
	// before it started.
	Flush(ctx context.Context) error
	// Peers returns the peer ids of principal's windows other than window
	// with activity on project after since, most recent first, at
	// most limit.
	Peers(ctx context.Context, principal, window, project string, since time.Time, limit int) ([]string, error)
	// ResolvePeer returns the window of principal's peer id, if it has a
	// retained activity row at or after since.
	ResolvePeer(ctx context.Context, principal, peerID string, since time.Time) (string, bool, error)
	// Affinity returns the most recent explicit session affinity of
	// principal's window on project, if it was recorded after since.
	Affinity(ctx context.Context, principal, window, project string, since time.Time) (string, bool, error)
	// LastActive returns the last meaningful call time of window (a
	// principal-bound hash) on any project, if it has a retained row.
	LastActive(ctx context.Context, window string) (time.Time, bool, error)
	// Activity returns the retained activity of principal's window.
	Activity(ctx context.Context, principal, window string) ([]ProjectActivity, error)
	// PostMessage stores m durably and applies p's message retention.
	PostMessage(ctx context.Context, m Message, p Prune) error
	// Delivered records behind the caller, without making it durable,
	// that the messages shown (of principal's window) were projected at
	// at and that ACKs of acked were observed (only the first observation
	// is kept). It returns when queued; then, when set, gets the outcome.
	Delivered(ctx context.Context, principal, window string, shown, acked []string, at time.Time, then func(error)) error
	// Awareness returns the digest of the peer set last shown to
	// principal's window on project ("" none).
	Awareness(ctx context.Context, principal, window, project string) (string, error)
	// SetAwareness records behind the caller, without making it durable,
	// the digest of the peer set shown to t's window on t's project.
	SetAwareness(ctx context.Context, t Touch, digest string, then func(error)) error
	// Waiting returns the messages addressed to principal's window
	// created at or after since, oldest first, at most limit.
	Waiting(ctx context.Context, principal, window string, since time.Time, limit int) ([]Message, error)
}

// Service is the window plane over a Store.
type Service struct {
	store Store
	log   *slog.Logger
	now   func() time.Time

	dropped atomic.Int64
	deliver deliveryState
}

// NewService returns a Service; now nil means time.Now.
func NewService(s Store, log *slog.Logger, now func() time.Time) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Service{store: s, log: log, now: now}
}

// DroppedTouches is how many activity updates were not written. A dropped
// update only leaves a window's activity older than it was; no record
// claims anything it did not see.
func (s *Service) DroppedTouches() int64 { return s.dropped.Load() }

func (s *Service) prune(now time.Time) Prune {
	return Prune{
		ActivityBefore: now.Add(-ActivityRetention), MessagesBefore: now.Add(-MessageRetention),
		MaxRows: MaxActivityRowsPerPrincipal, MaxMessagesEach: MaxMessagesPerWindow,
	}
}

// TouchQueueWait bounds how long Observe waits for room in a full writer
// queue; past it the update is dropped (and counted), never the call held.
const TouchQueueWait = 50 * time.Millisecond

// Observe records a call of window for p on project, if it is meaningful
// (see Meaningful), with affinity, the session a successful call
// explicitly related the window to ("" none). It never blocks on a
// commit and never adds an fsync.
func (s *Service) Observe(ctx context.Context, p auth.Principal, window, tool, project string, refused bool, affinity string) {
	if s == nil || window == "" || !Meaningful(tool, project, refused) {
		return
	}
	now := s.now()
	pr := PrincipalOf(p)
	t := Touch{Principal: pr, Window: window, PeerID: PeerID(pr, window), Project: project, At: now, Affinity: affinity}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TouchQueueWait)
	defer cancel()
	err := s.store.Touch(qctx, t, s.prune(now), func(err error) {
		if err != nil {
			s.dropped.Add(1)
			s.log.Warn("window activity not written", "err", err)
		}
	})
	if err != nil {
		s.dropped.Add(1)
		s.log.Warn("window activity not queued", "err", err)
	}
}

func needWindow(window string) error {
	if window == "" {
		return failure.New(failure.ClientWindowUnavailable,
			"this call carries no client window (_meta[\"openai/session\"] over MCP, the %s header over REST)", HeaderWindow)
	}
	return nil
}

// Peer is one discovered peer route.
type Peer struct {
	PeerID string `json:"peer_id"`
}

// Peers returns the other windows of p with meaningful activity on the
// exact project within Recent (at most MaxPeers, most recent first).
func (s *Service) Peers(ctx context.Context, p auth.Principal, window, project string) ([]Peer, error) {
	if err := needWindow(window); err != nil {
		return nil, err
	}
	if err := s.store.Flush(ctx); err != nil {
		return nil, err
	}
	ids, err := s.store.Peers(ctx, PrincipalOf(p), window, project, s.now().Add(-Recent), MaxPeers)
	if err != nil {
		return nil, err
	}
	out := make([]Peer, 0, len(ids))
	for _, id := range ids {
		out = append(out, Peer{PeerID: id})
	}
	return out, nil
}

// PostParams is a post_peer_message request.
type PostParams struct {
	PeerID      string
	Body        string
	RequiresAck bool
	Priority    Priority
}

// Post stores a message from p's window to the peer. An unknown, expired
// (no retained activity) or other principal's peer id is
// failure.UnknownRecipient, and so is, for a principal bound to one
// project (auth.Principal.Project), a peer with no retained activity on
// that project; nothing is stored then.
func (s *Service) Post(ctx context.Context, p auth.Principal, window string, in PostParams) (Message, error) {
	if err := needWindow(window); err != nil {
		return Message{}, err
	}
	n := utf8.RuneCountInString(in.Body)
	if n == 0 || n > MaxMessageChars || !utf8.ValidString(in.Body) {
		return Message{}, failure.New(failure.InvalidArguments, "message must be 1-%d characters", MaxMessageChars)
	}
	switch in.Priority {
	case "":
		in.Priority = PriorityNormal
	case PriorityLow, PriorityNormal, PriorityHigh:
	default:
		return Message{}, failure.New(failure.InvalidArguments, "priority must be low, normal or high")
	}
	pr := PrincipalOf(p)
	now := s.now()
	if err := s.store.Flush(ctx); err != nil {
		return Message{}, err
	}
	to, ok, err := s.store.ResolvePeer(ctx, pr, in.PeerID, now.Add(-ActivityRetention))
	if err != nil {
		return Message{}, err
	}
	if ok && p.Project != "" {
		if ok, err = s.activeOn(ctx, pr, to, p.Project); err != nil {
			return Message{}, err
		}
	}
	if !ok {
		return Message{}, failure.New(failure.UnknownRecipient, "no retained peer window has that peer_id")
	}
	if to == window {
		return Message{}, failure.New(failure.InvalidArguments, "peer_id is this window's own route")
	}
	m := Message{
		// Credential-shaped text never reaches the store.
		ID: newMessageID(), FromPeer: PeerID(pr, window), ToPeer: in.PeerID, Body: redact.String(in.Body),
		RequiresAck: in.RequiresAck, Priority: in.Priority, CreatedAt: now.UTC(),
		Principal: pr, ToWindow: to, FromWindow: window,
	}
	if err := s.store.PostMessage(ctx, m, s.prune(now)); err != nil {
		return Message{}, err
	}
	s.deliver.changed(pr, to)
	return m, nil
}

// Current is current_window_activity: the caller's own window's
// sanitized activity.
type Current struct {
	PeerID   string            `json:"peer_id"`
	Activity []ProjectActivity `json:"activity"`
	// WaitingMessages counts retained peer messages addressed here.
	WaitingMessages int `json:"waiting_peer_messages"`
}

// CurrentActivity returns the caller's window's activity.
func (s *Service) CurrentActivity(ctx context.Context, p auth.Principal, window string) (Current, error) {
	if err := needWindow(window); err != nil {
		return Current{}, err
	}
	pr := PrincipalOf(p)
	if err := s.store.Flush(ctx); err != nil {
		return Current{}, err
	}
	act, err := s.store.Activity(ctx, pr, window)
	if err != nil {
		return Current{}, err
	}
	waiting, err := s.store.Waiting(ctx, pr, window, s.now().Add(-MessageRetention), MaxMessagesPerWindow)
	if err != nil {
		return Current{}, err
	}
	return Current{PeerID: PeerID(pr, window), Activity: act, WaitingMessages: len(waiting)}, nil
}

// Quiet reports whether window (a principal-bound ClientWindow hash)
// fetched something at fetchedAt at least d ago and has had no meaningful
// activity within d since: the stale assignment diagnostic's test. It is
// observational only. A nil Service or an empty window is never quiet.
func (s *Service) Quiet(ctx context.Context, window string, fetchedAt time.Time, d time.Duration) (bool, error) {
	if s == nil || window == "" {
		return false, nil
	}
	now := s.now()
	if now.Sub(fetchedAt) < d {
		return false, nil
	}
	if err := s.store.Flush(ctx); err != nil {
		return false, err
	}
	last, ok, err := s.store.LastActive(ctx, window)
	if err != nil {
		return false, err
	}
	return !ok || now.Sub(last) >= d, nil
}

// Affinity returns the session p's window last explicitly related to on
// project less than AffinityRecent ago: only a candidate. The caller must
// still check that it is active, on project and authorized for p, and
// must never record in it or select it (recorder continuity gap).
func (s *Service) Affinity(ctx context.Context, p auth.Principal, window, project string) (string, bool, error) {
	if window == "" || project == "" {
		return "", false, nil
	}
	if err := s.store.Flush(ctx); err != nil {
		return "", false, err
	}
	return s.store.Affinity(ctx, PrincipalOf(p), window, project, s.now().Add(-AffinityRecent))
}

// Waiting returns the retained messages addressed to p's window, oldest
// first (for delivery and attention; delivery marks nothing here).
func (s *Service) Waiting(ctx context.Context, p auth.Principal, window string) ([]Message, error) {
	if err := needWindow(window); err != nil {
		return nil, err
	}
	return s.store.Waiting(ctx, PrincipalOf(p), window, s.now().Add(-MessageRetention), MaxMessagesPerWindow)
}

func newMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	return "wc_msg_" + hex.EncodeToString(b[:])
}

// activeOn reports whether window has retained activity on project.
func (s *Service) activeOn(ctx context.Context, principal, window, project string) (bool, error) {
	act, err := s.store.Activity(ctx, principal, window)
	if err != nil {
		return false, err
	}
	for _, a := range act {
		if a.Project == project {
			return true, nil
		}
	}
	return false, nil
}
