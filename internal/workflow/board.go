package workflow

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// BoardReader reads one consistent snapshot of one session's message
// board.
type BoardReader interface {
	// State returns the board's counters and the session's lifecycle;
	// failure.UnknownSessionID when the session does not exist.
	State() (BoardState, error)
	// Message returns a retained message of this session.
	Message(id string) (Message, bool, error)
	// Replies returns at most limit retained direct replies of id, oldest
	// first.
	Replies(id string, limit int) ([]Message, error)
	// List returns the newest f.Limit messages matching f, newest first,
	// and whether more match.
	List(f MessageFilter) ([]Message, bool, error)
	// Changed returns at most limit retained messages whose observation
	// revision is above after, in revision order.
	Changed(after int64, limit int) ([]Message, error)
	// Counts returns the number of retained messages by kind and status.
	Counts() (map[MessageKind]map[MessageStatus]int, error)
	// Attention returns the open messages posted before before that
	// require an ACK or were never projected, ACK-required first, each
	// oldest first, at most limit, and how many there are.
	Attention(before time.Time, limit int) ([]Message, int, error)
	// Fetches returns the recorded assignment fetches of those of ids
	// that have one.
	Fetches(ids []string) (map[string]TodoFetch, error)
}

// BoardWriter reads and changes one session's board inside one writer
// transaction.
type BoardWriter interface {
	BoardReader
	// ByDeliveryKey returns the retained message posted with key.
	ByDeliveryKey(key string) (Message, bool, error)
	// Insert adds m; Save replaces the stored fields of m (by id).
	Insert(m Message) error
	Save(m Message) error
	// Oldest returns at most limit retained messages of classes that are
	// not in exclude, by class in the order of classes and oldest first
	// within a class, with only ID, Seq, ReplyTo and ObservationRevision
	// set. classes is one of RetentionPasses.
	Oldest(classes []RetentionClass, exclude []string, limit int) ([]Message, error)
	// Remove deletes the messages with these ids.
	Remove(ids []string) error
	// SetState stores the board's counters.
	SetState(st BoardState) error
	// SetFetch records f as message id's assignment fetch; it changes
	// nothing else (no revision, no fence).
	SetFetch(id string, f TodoFetch) error
}

// RetentionClass is a class of messages retention may remove, in the order
// it removes them (see [Board.Post]). The classes are disjoint, and none
// holds an open todo.
type RetentionClass int

// Retention classes.
const (
	// RetainResolved: resolved messages that are not replies to an open
	// todo.
	RetainResolved RetentionClass = iota
	// RetainLoose: open messages that are neither todos nor replies to an
	// open todo.
	RetainLoose
	// RetainTodoReplies: replies to an open todo (removing one leaves
	// that todo not completable).
	RetainTodoReplies
)

// RetentionPasses are the lists of classes retention asks Oldest for, in
// turn, until it has enough: the first two classes in one statement (the
// common case: a full board removes a resolved or loose message), then
// the replies to open todos, whose query costs more and is rarely needed.
var RetentionPasses = [][]RetentionClass{{RetainResolved, RetainLoose}, {RetainTodoReplies}}

// BoardStore persists Session-local message boards beside the ledger.
type BoardStore interface {
	// ViewBoard runs fn over one read snapshot of session id's board.
	ViewBoard(ctx context.Context, id string, fn func(BoardReader) error) error
	// UpdateBoard runs fn in one writer transaction and returns after it
	// is durably committed; an error from fn rolls everything back.
	UpdateBoard(ctx context.Context, id string, fn func(BoardWriter) error) error
	// UpdateBoardBehind queues fn to run in a writer transaction behind
	// the caller and returns once it is queued; done receives its outcome
	// (from the writer) after its batch ended. The batch commits without
	// an fsync of its own unless it carries a durable write: for analysis
	// facts only, never for a mutation a caller is told about.
	UpdateBoardBehind(ctx context.Context, id string, fn func(BoardWriter) error, done func(error)) error
	// AttentionPossible reports whether session id's board holds a
	// message a session_attention block could show for a call that began
	// at before: an open message posted before it that requires an ACK
	// or was never projected. It reads one committed state without
	// waiting for queued behind writes (those only ever make a message
	// ineligible), so false is final for that call and true only means
	// the full snapshot (ViewBoard) must decide.
	AttentionPossible(ctx context.Context, id string, before time.Time) (bool, error)
	// ObservationKey is the store's secret key of ObservationKeyBytes
	// from which the board derives, under distinct labels, the keys that
	// authenticate observation tokens and assignment fences (decisions
	// 0051, 0057). It is the same for every process serving the store and
	// across restarts, so a token or fence stays valid for as long as the
	// board state it was issued for.
	ObservationKey() []byte
}

// Board is the Session-local message board API used by the tools. Every
// mutation is durable before it returns.
type Board struct {
	store  BoardStore
	now    func() time.Time
	notify Notifier
	tokens tokenKeys
	fences fenceKeys

	mu      sync.Mutex
	flights map[flightKey]*flight // see sharedChanges
	// pending holds the ordinary messages whose projection facts are
	// queued (see Attend); factFailures counts facts writes that failed.
	pending      map[string]bool
	factFailures atomic.Int64
	// waiting counts the Observe calls in their bounded wait (Waiting).
	waiting atomic.Int64
	logger  *slog.Logger
}

// NewBoard returns a Board over store that wakes observers in this
// process ([LocalNotifier]). now may be nil (time.Now). It panics when
// the store's ObservationKey is not ObservationKeyBytes long: a store
// must not serve a board whose cursors and fences it cannot authenticate.
func NewBoard(store BoardStore, now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{store: store, now: now, notify: NewLocalNotifier(), tokens: newTokenKeys(store.ObservationKey()),
		fences: newFenceKeys(store.ObservationKey())}
}

// WithNotifier returns b waking observers through n instead.
func (b *Board) WithNotifier(n Notifier) *Board {
	b.notify = n
	return b
}

// PostParams describe a new message.
type PostParams struct {
	SessionID string
	Kind      MessageKind
	Body      string
	Tags      []string
	ReplyTo   string
	// Priority defaults to normal.
	Priority    Priority
	RequiresAck bool
	// DeliveryKey, when set, makes the post idempotent: the same key with
	// the same payload returns the original message.
	DeliveryKey string
	// Author is the verified recorder's session id, or "".
	Author string
}

func (p *PostParams) check() error {
	if p.Priority == "" {
		p.Priority = PriorityNormal
	}
	switch {
	case !p.Kind.Valid():
		return failure.New(failure.InvalidArguments, "kind must be one of note, proposal, question, answer, decision, risk, progress, guidance, todo")
	case !p.Priority.Valid():
		return failure.New(failure.InvalidArguments, "priority must be low, normal or high")
	}
	if err := checkText("message", p.Body, MessageMinChars, MessageMaxChars); err != nil {
		return err
	}
	if err := checkTags(p.Tags); err != nil {
		return err
	}
	if p.ReplyTo != "" {
		if err := ParseMessageID("reply_to", p.ReplyTo); err != nil {
			return err
		}
	}
	p.Tags = normTags(p.Tags)
	return checkKey("delivery_key", p.DeliveryKey)
}

func (p PostParams) fingerprint() string {
	return fingerprint("webcodex post v1", []any{p.Kind, p.Body, p.Tags, p.ReplyTo, p.Priority, p.RequiresAck})
}

// Post adds a message to an active session's board (a read_only session
// may post: the mode guard denies file writes and shells only). A reply
// names a retained message of the same session. A replayed delivery_key
// returns the original message with replayed=true and changes nothing.
// When the board then holds more than MaxRetainedMessages, retention
// removes, oldest first: resolved messages, then open messages that are
// neither todos nor replies to an open todo, then replies to open todos
// (which leaves that todo not completable); open todos are never removed,
// and a post that would need to is refused with conflict.
func (b *Board) Post(ctx context.Context, p PostParams) (Message, bool, error) {
	if err := p.check(); err != nil {
		return Message{}, false, err
	}
	var out Message
	var replayed bool
	err := b.store.UpdateBoard(ctx, p.SessionID, func(w BoardWriter) error {
		st, err := activeState(w, p.SessionID)
		if err != nil {
			return err
		}
		fp := p.fingerprint()
		if p.DeliveryKey != "" {
			if m, ok, err := w.ByDeliveryKey(p.DeliveryKey); err != nil {
				return err
			} else if ok {
				if m.DeliveryFingerprint != fp {
					return failure.New(failure.IdempotencyConflict, "delivery_key was already used for another message").
						WithDetail("message_id", m.ID)
				}
				out, replayed = m, true
				return nil
			}
		}
		if p.ReplyTo != "" {
			parent, ok, err := w.Message(p.ReplyTo)
			if err != nil {
				return err
			}
			if !ok {
				return failure.New(failure.UnknownMessageID, "reply_to %s is not a retained message of this session", p.ReplyTo)
			}
			if err := b.touchParent(w, parent); err != nil {
				return err
			}
		}
		m := Message{
			ID: NewMessageID(), SessionID: p.SessionID, CreatedAt: b.now().UTC(), Kind: p.Kind,
			Status: MessageOpen, Priority: p.Priority, Body: redact.String(p.Body), Tags: redactAll(p.Tags), ReplyTo: p.ReplyTo,
			AuthorSessionID: p.Author, RequiresAck: p.RequiresAck,
			DeliveryKey: p.DeliveryKey, DeliveryFingerprint: fp,
		}
		if err := b.insert(w, &st, &m, p.ReplyTo); err != nil {
			return err
		}
		out = m
		return w.SetState(st)
	})
	if err == nil && !replayed {
		b.notify.Notify(p.SessionID)
	}
	return out, replayed, err
}

// activeState reads the board state and refuses a closed session.
func activeState(r BoardReader, id string) (BoardState, error) {
	st, err := r.State()
	if err != nil {
		return st, err
	}
	if st.Lifecycle != Active {
		return st, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
	}
	return st, nil
}

// touchParent records a new direct reply on its parent: a reply is an
// assignment-local change of a todo.
func (b *Board) touchParent(w BoardWriter, parent Message) error {
	parent.RepliesPosted++
	if parent.Kind == MessageTodo {
		parent.AssignmentRevision++
	}
	return w.Save(parent)
}

// insert stores m as the next message and applies retention, which never
// removes m or the messages named in keep in this mutation.
func (b *Board) insert(w BoardWriter, st *BoardState, m *Message, keep ...string) error {
	st.Posted++
	m.Seq = st.Posted
	st.ObservationRevision++
	m.ObservationRevision = st.ObservationRevision
	if err := w.Insert(*m); err != nil {
		return err
	}
	st.Retained++
	return b.retain(w, st, append(keep, m.ID))
}

// retain removes messages while the board holds more than
// MaxRetainedMessages (see Post for the order).
func (b *Board) retain(w BoardWriter, st *BoardState, keep []string) error {
	excess := st.Retained - MaxRetainedMessages
	if excess <= 0 {
		return nil
	}
	var victims []string
	lost := map[string]int64{} // parent → its replies removed now
	for _, classes := range RetentionPasses {
		need := int(excess) - len(victims)
		if need == 0 {
			break
		}
		ms, err := w.Oldest(classes, keep, need)
		if err != nil {
			return err
		}
		for _, m := range ms {
			victims = append(victims, m.ID)
			st.ObservationLowWatermark = max(st.ObservationLowWatermark, m.ObservationRevision)
			if m.ReplyTo != "" {
				lost[m.ReplyTo]++
			}
		}
	}
	if int64(len(victims)) < excess {
		return failure.New(failure.Conflict, "the session's board is full of open todos (and this post's own messages), which retention never removes; resolve or complete some first")
	}
	for _, id := range victims {
		delete(lost, id) // a parent removed too keeps no counters
	}
	// A removed reply is an assignment-local change of its todo.
	for _, parentID := range slices.Sorted(maps.Keys(lost)) {
		full, ok, err := w.Message(parentID)
		if err != nil {
			return err
		}
		if !ok {
			continue // the parent was removed earlier
		}
		full.RepliesRemoved += lost[parentID]
		if full.Kind == MessageTodo {
			full.AssignmentRevision += lost[parentID]
		}
		if err := w.Save(full); err != nil {
			return err
		}
	}
	if err := w.Remove(victims); err != nil {
		return err
	}
	st.Retained -= int64(len(victims))
	st.Removed += int64(len(victims))
	return nil
}

// ResolveParams describe a resolution.
type ResolveParams struct {
	SessionID  string
	MessageID  string
	Resolution string
}

// Resolve marks a message resolved. Resolving a resolved message changes
// nothing and reports changed=false (the first resolution stands).
func (b *Board) Resolve(ctx context.Context, p ResolveParams) (Message, bool, error) {
	if err := ParseMessageID("message_id", p.MessageID); err != nil {
		return Message{}, false, err
	}
	if p.Resolution != "" {
		if err := checkText("resolution", p.Resolution, 0, ResolutionMaxChars); err != nil {
			return Message{}, false, err
		}
	}
	var out Message
	var changed bool
	err := b.store.UpdateBoard(ctx, p.SessionID, func(w BoardWriter) error {
		st, err := activeState(w, p.SessionID)
		if err != nil {
			return err
		}
		m, ok, err := w.Message(p.MessageID)
		if err != nil {
			return err
		}
		if !ok {
			return unknownMessage(p.MessageID)
		}
		if m.Status == MessageResolved {
			out = m
			return nil
		}
		now := b.now().UTC()
		m.Status, m.ResolvedAt, m.Resolution = MessageResolved, &now, redact.String(p.Resolution)
		if m.Kind == MessageTodo {
			m.AssignmentRevision++
		}
		st.ObservationRevision++
		m.ObservationRevision = st.ObservationRevision
		if err := w.Save(m); err != nil {
			return err
		}
		if m.ReplyTo != "" {
			// A reply's status is part of its todo's assignment.
			if parent, ok, err := w.Message(m.ReplyTo); err != nil {
				return err
			} else if ok && parent.Kind == MessageTodo {
				parent.AssignmentRevision++
				if err := w.Save(parent); err != nil {
					return err
				}
			}
		}
		out, changed = m, true
		return w.SetState(st)
	})
	if err == nil && changed {
		b.notify.Notify(p.SessionID)
	}
	return out, changed, err
}

func unknownMessage(id string) error {
	return failure.New(failure.UnknownMessageID, "message %s is not a retained message of this session", id)
}

// List returns the newest messages matching f (limit 0 means
// MessageListDefault) and whether more match. It works on closed sessions.
func (b *Board) List(ctx context.Context, id string, f MessageFilter) ([]Message, bool, error) {
	if f.Kind != "" && !f.Kind.Valid() {
		return nil, false, failure.New(failure.InvalidArguments, "unknown kind %q", truncate(string(f.Kind), 32))
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, false, failure.New(failure.InvalidArguments, "status must be open or resolved")
	}
	for field, v := range map[string]string{"message_id": f.MessageID, "reply_to": f.ReplyTo} {
		if v != "" {
			if err := ParseMessageID(field, v); err != nil {
				return nil, false, err
			}
		}
	}
	switch {
	case f.Limit == 0:
		f.Limit = MessageListDefault
	case f.Limit < 0 || f.Limit > MessageListMax:
		return nil, false, failure.New(failure.InvalidArguments, "limit must be 1-%d", MessageListMax)
	}
	var out []Message
	var more bool
	err := b.store.ViewBoard(ctx, id, func(r BoardReader) error {
		if _, err := r.State(); err != nil {
			return err
		}
		var err error
		out, more, err = r.List(f)
		return err
	})
	return out, more, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// State returns the board's durable counters for session id from one
// snapshot: its message-observation revision is the handoff snapshot
// fence's message dimension, as events_observed is its ledger dimension.
func (b *Board) State(ctx context.Context, id string) (BoardState, error) {
	var st BoardState
	err := b.store.ViewBoard(ctx, id, func(r BoardReader) error {
		var err error
		st, err = r.State()
		return err
	})
	return st, err
}

// Excerpt is a message in a discussion summary, its body bounded.
type Excerpt struct {
	ID        string        `json:"message_id"`
	Kind      MessageKind   `json:"kind"`
	Status    MessageStatus `json:"status"`
	Priority  Priority      `json:"priority"`
	Message   string        `json:"message"`
	Truncated bool          `json:"truncated,omitempty"`
	ReplyTo   string        `json:"reply_to,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
}

// Discussion is a bounded summary of a board.
type Discussion struct {
	// Counts are the retained messages by kind and status.
	Counts map[MessageKind]map[MessageStatus]int `json:"counts"`
	// Retained and Removed count the messages held and removed by
	// retention.
	Retained int64 `json:"retained"`
	Removed  int64 `json:"removed_by_retention"`
	// Open lists the newest open guidance, questions, risks and todos
	// (SummaryOpenPerKind each); Recent the newest answers, progress and
	// decisions (SummaryRecentPerKind each).
	Open   map[MessageKind][]Excerpt `json:"open"`
	Recent map[MessageKind][]Excerpt `json:"recent"`
}

// Summary returns the board's bounded discussion summary.
func (b *Board) Summary(ctx context.Context, id string) (Discussion, error) {
	d := Discussion{Open: map[MessageKind][]Excerpt{}, Recent: map[MessageKind][]Excerpt{}}
	err := b.store.ViewBoard(ctx, id, func(r BoardReader) error {
		st, err := r.State()
		if err != nil {
			return err
		}
		d.Retained, d.Removed = st.Retained, st.Removed
		if d.Counts, err = r.Counts(); err != nil {
			return err
		}
		for _, k := range []MessageKind{MessageGuidance, MessageQuestion, MessageRisk, MessageTodo} {
			ms, _, err := r.List(MessageFilter{Kind: k, Status: MessageOpen, Limit: SummaryOpenPerKind})
			if err != nil {
				return err
			}
			d.Open[k] = excerpts(ms)
		}
		for _, k := range []MessageKind{MessageAnswer, MessageProgress, MessageDecision} {
			ms, _, err := r.List(MessageFilter{Kind: k, Limit: SummaryRecentPerKind})
			if err != nil {
				return err
			}
			d.Recent[k] = excerpts(ms)
		}
		return nil
	})
	return d, err
}

func excerpts(ms []Message) []Excerpt {
	out := make([]Excerpt, 0, len(ms))
	for _, m := range ms {
		body, _ := redact.Truncate(m.Body, SummaryExcerptChars)
		out = append(out, Excerpt{ID: m.ID, Kind: m.Kind, Status: m.Status, Priority: m.Priority,
			Message: body, Truncated: body != m.Body, ReplyTo: m.ReplyTo, CreatedAt: m.CreatedAt})
	}
	return out
}

// redactAll returns tags with credential-shaped text redacted.
func redactAll(tags []string) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = redact.String(t)
	}
	return out
}
