package window

import (
	"context"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/redact"
)

// Why an ack id naming one of this window's peer messages was not
// accepted: the board's reasons of the same name (session_attention),
// which the kernel keeps equal.
const (
	AckDuplicate   = "duplicate"
	AckNotRequired = "not_ack_required"
)

// AckRejection is one ack id not accepted, shaped as session_attention's.
type AckRejection struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// Bounds of a peer_messages block (docs/tools.md, decision 0034).
const (
	// MaxDeliveredMessages bounds the messages one block shows; the rest
	// are counted in Delivery.Omitted (ACK-required ones come first).
	MaxDeliveredMessages = 8
	// DeliveryExcerptChars bounds each shown body, in characters.
	DeliveryExcerptChars = 1000
	// maxQuietWindows bounds the in-memory set of windows known to have
	// nothing to deliver; past it the set is forgotten (a forgotten
	// window costs one read on its next call, nothing else).
	maxQuietWindows = 4096
)

// DeliveredMessage is a peer message as a peer_messages block shows it:
// the bounded message and safe metadata only.
type DeliveredMessage struct {
	ID          string    `json:"message_id"`
	FromPeer    string    `json:"from_peer_id"`
	Priority    Priority  `json:"priority"`
	RequiresAck bool      `json:"requires_ack"`
	Message     string    `json:"message"`
	Truncated   bool      `json:"truncated,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// Delivery is the peer_messages block of one ToolResult: what this
// response projects of the peer messages addressed to the caller's window,
// and how it judged the request's ACK ids that name such messages. It
// states what this response shows, nothing more: a shown message is not
// read, an accepted ACK grants nothing.
type Delivery struct {
	// Messages are the retained ACK-required messages this request does
	// not acknowledge (every call that omits the id from
	// ack_session_message_ids, for as long as the message is retained:
	// an earlier ACK says nothing of the current model context) and the
	// ordinary ones never projected before, posted before this call
	// began, ACK-required first, each oldest first.
	Messages []DeliveredMessage `json:"messages,omitempty"`
	// Omitted counts the messages that qualified but did not fit.
	Omitted int `json:"omitted,omitempty"`
	// AckAccepted are the ids this request acknowledged: ACK-required
	// peer messages addressed to this window.
	AckAccepted []string `json:"ack_accepted,omitempty"`
	// AckRejected are ids of this window's peer messages not accepted
	// (not_ack_required, duplicate). An id that names no message of this
	// window is not judged here (session_attention judges it).
	AckRejected []AckRejection `json:"ack_rejected,omitempty"`
}

// Empty reports whether d has nothing to say.
func (d *Delivery) Empty() bool {
	return d == nil || (len(d.Messages) == 0 && d.Omitted == 0 && len(d.AckAccepted) == 0 && len(d.AckRejected) == 0)
}

// deliveryState is what delivery keeps in memory: the ordinary messages
// whose projection facts are queued (so that two concurrent calls do not
// both show one), and the windows known to have nothing to deliver since
// their last post (so that their calls cost no read). A window with a
// retained ACK-required message is never quiet.
type deliveryState struct {
	mu      sync.Mutex
	pending map[string]bool   // window key + message id
	gen     map[string]uint64 // window key -> posts seen
	quiet   map[string]uint64 // window key -> gen when found quiet
}

func windowKey(principal, window string) string { return principal + "\x00" + window }

// changed notes a post to a window.
func (d *deliveryState) changed(principal, window string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen == nil {
		d.gen = map[string]uint64{}
	}
	k := windowKey(principal, window)
	d.gen[k]++
	delete(d.quiet, k)
}

// isQuiet reports whether the window is known to have nothing to
// deliver, and the generation a read now would see.
func (d *deliveryState) isQuiet(k string) (bool, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.gen[k]
	q, ok := d.quiet[k]
	return ok && q == g, g
}

// setQuiet notes the window had nothing to deliver as of generation g,
// unless a post came since.
func (d *deliveryState) setQuiet(k string, g uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen[k] != g {
		return
	}
	if d.quiet == nil || len(d.quiet) >= maxQuietWindows {
		d.quiet = map[string]uint64{}
	}
	if len(d.gen) >= maxQuietWindows {
		// Dropping generations could make a stale quiet mark match
		// again: forget both.
		d.gen, d.quiet = map[string]uint64{}, map[string]uint64{}
		return
	}
	d.quiet[k] = g
}

func (d *deliveryState) snapshot() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]bool, len(d.pending))
	for k := range d.pending {
		out[k] = true
	}
	return out
}

// claim drops from ms the ordinary messages another call is projecting
// (queued before this call's read, or since) and claims the rest.
// ACK-required messages are never claimed: every call that does not
// acknowledge them shows them.
func (d *deliveryState) claim(k string, ms []Message, before map[string]bool) []Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[string]bool{}
	}
	out := ms[:0:0]
	for _, m := range ms {
		if !m.RequiresAck {
			pk := k + "\x00" + m.ID
			if before[pk] || d.pending[pk] {
				continue
			}
			d.pending[pk] = true
		}
		out = append(out, m)
	}
	return out
}

func (d *deliveryState) release(k string, ms []Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range ms {
		delete(d.pending, k+"\x00"+m.ID)
	}
}

// DeliverParams describe one call's peer delivery.
type DeliverParams struct {
	Principal auth.Principal
	// Window is the call's hashed ClientWindow ("" none: nothing to do).
	Window string
	// Acks are the request's ack_session_message_ids that may be judged
	// (the first workflow.MaxAckIDs, as the kernel passes them).
	Acks []string
	// Before is when the call began: messages posted since wait for a
	// later call.
	Before time.Time
}

// Deliver builds the peer_messages block of one model-facing call (nil
// when there is nothing to say) and returns the ack ids it judged (ids of
// peer messages addressed to this window), which no other judge may
// reject. Its facts
// (first/last projection, count, first ACK observed) are queued behind the
// response, never waited for; when their write fails it is logged, and an
// ordinary message may be shown once more. A store that cannot be read
// yields no block and judges nothing.
func (s *Service) Deliver(ctx context.Context, p DeliverParams) (*Delivery, map[string]bool) {
	if s == nil || p.Window == "" {
		return nil, nil
	}
	pr := PrincipalOf(p.Principal)
	k := windowKey(pr, p.Window)
	quiet, gen := s.deliver.isQuiet(k)
	if quiet && len(p.Acks) == 0 {
		return nil, nil
	}
	before := s.deliver.snapshot()
	all, err := s.store.Waiting(ctx, pr, p.Window, s.now().Add(-MessageRetention), MaxMessagesPerWindow)
	if err != nil {
		s.log.Warn("peer messages not projected", "err", err)
		return nil, nil
	}
	byID := make(map[string]Message, len(all))
	for _, m := range all {
		byID[m.ID] = m
	}
	d := &Delivery{}
	claimed := map[string]bool{}
	accepted := map[string]bool{}
	for _, id := range p.Acks {
		m, ok := byID[id]
		if !ok {
			continue
		}
		switch {
		case claimed[id]:
			d.AckRejected = append(d.AckRejected, AckRejection{MessageID: id, Reason: AckDuplicate})
		case !m.RequiresAck:
			d.AckRejected = append(d.AckRejected, AckRejection{MessageID: id, Reason: AckNotRequired})
		default:
			accepted[id] = true
			d.AckAccepted = append(d.AckAccepted, id)
		}
		claimed[id] = true
	}
	var ack, ordinary []Message
	for _, m := range all {
		switch {
		case !m.CreatedAt.Before(p.Before) || accepted[m.ID]:
		case m.RequiresAck:
			ack = append(ack, m)
		case !m.Projected:
			ordinary = append(ordinary, m)
		}
	}
	if len(ack)+len(ordinary) == 0 && len(accepted) == 0 {
		s.deliver.setQuiet(k, gen)
	}
	// Ordinary messages another call is showing are neither shown nor
	// omitted here.
	shown := s.deliver.claim(k, append(ack, ordinary...), before)
	if len(shown) > MaxDeliveredMessages {
		d.Omitted = len(shown) - MaxDeliveredMessages
		s.deliver.release(k, shown[MaxDeliveredMessages:])
		shown = shown[:MaxDeliveredMessages]
	}
	for _, m := range shown {
		body, _ := redact.Truncate(m.Body, DeliveryExcerptChars)
		d.Messages = append(d.Messages, DeliveredMessage{ID: m.ID, FromPeer: m.FromPeer, Priority: m.Priority,
			RequiresAck: m.RequiresAck, Message: body, Truncated: body != m.Body, CreatedAt: m.CreatedAt})
	}
	if len(shown) > 0 || len(d.AckAccepted) > 0 {
		s.record(ctx, pr, p.Window, k, shown, d.AckAccepted)
	}
	if d.Empty() {
		return nil, claimed
	}
	return d, claimed
}

// record queues the facts of one block behind the response.
func (s *Service) record(ctx context.Context, pr, win, k string, shown []Message, acked []string) {
	ids := make([]string, 0, len(shown))
	var ordinary []Message
	for _, m := range shown {
		ids = append(ids, m.ID)
		if !m.RequiresAck {
			ordinary = append(ordinary, m)
		}
	}
	done := func(err error) {
		s.deliver.release(k, ordinary)
		if err != nil {
			s.log.Warn("peer message facts not stored", "err", err)
		}
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TouchQueueWait)
	defer cancel()
	if err := s.store.Delivered(qctx, pr, win, ids, acked, s.now().UTC(), done); err != nil {
		done(err)
	}
}
