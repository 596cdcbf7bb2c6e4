package workflow

import (
	"context"
	"log/slog"
	"time"

	"github.com/webcodex/webcodex/internal/redact"
)

// Bounds of a session_attention block.
const (
	// MaxAttentionMessages bounds the messages one block shows; the rest
	// are counted in Attention.Omitted (ACK-required ones come first).
	MaxAttentionMessages = 8
	// AttentionExcerptChars bounds each shown body, in characters.
	AttentionExcerptChars = 1000
	// MaxAckIDs is the number of ack_session_message_ids one request may
	// carry; ids past it are rejected as over_limit, never judged.
	MaxAckIDs = 8
	// MaxAckRejections bounds Attention.AckRejected; further rejections
	// are counted in AckRejectedOmitted.
	MaxAckRejections = 16
	// maxAckIDEcho bounds a rejected id as the block echoes it.
	maxAckIDEcho = 64
)

// AckRejection reasons: why an id of ack_session_message_ids was not
// accepted. A rejection never changes the call, which ran regardless.
const (
	AckMalformed    = "malformed"                // not wc_msg_ + 32 lowercase hex
	AckOverLimit    = "over_limit"               // past the MaxAckIDs-th id
	AckDuplicate    = "duplicate"                // repeated in the request
	AckNoRecorder   = "no_recording_session"     // the call has no verified recorder
	AckNotInSession = "not_in_recording_session" // not a retained message of the recorder's board
	AckNotRequired  = "not_ack_required"         // the message does not require an ACK
	AckResolved     = "resolved"                 // the message is resolved
)

// AttentionMessage is a message as a session_attention block shows it.
type AttentionMessage struct {
	ID              string      `json:"message_id"`
	Kind            MessageKind `json:"kind"`
	Priority        Priority    `json:"priority"`
	RequiresAck     bool        `json:"requires_ack"`
	Message         string      `json:"message"`
	Truncated       bool        `json:"truncated,omitempty"`
	ReplyTo         string      `json:"reply_to,omitempty"`
	AuthorSessionID string      `json:"author_session_id,omitempty"`
	CreatedAt       time.Time   `json:"created_at"`
}

// AckRejection is one id of ack_session_message_ids that was not accepted.
type AckRejection struct {
	MessageID string `json:"message_id"`
	Reason    string `json:"reason"`
}

// Attention is the session_attention block of one ToolResult: what this
// response projects from the recording session's board, and how it judged
// the request's ACK ids. It states what this response does, nothing more:
// a shown message is not delivered or read, an accepted ACK resolves
// nothing and grants nothing.
type Attention struct {
	// SessionID is the recording session whose board is projected; empty
	// when the call had no verified recorder (the block then only judges
	// ACK ids).
	SessionID string `json:"session_id,omitempty"`
	// Messages are the unresolved ACK-required messages (every call until
	// ACKed in that call, or resolved) and the open ordinary messages
	// never projected before, posted before this call began, ACK-required
	// first, each oldest first.
	Messages []AttentionMessage `json:"messages,omitempty"`
	// Omitted counts the messages that qualified but did not fit.
	Omitted int `json:"omitted,omitempty"`
	// AckAccepted are the ids this request acknowledged: unresolved
	// ACK-required messages of the recording session, whose bodies this
	// response therefore leaves out.
	AckAccepted []string `json:"ack_accepted,omitempty"`
	// AckRejected are the ids not accepted, with why (at most
	// MaxAckRejections; AckRejectedOmitted counts the rest).
	AckRejected        []AckRejection `json:"ack_rejected,omitempty"`
	AckRejectedOmitted int            `json:"ack_rejected_omitted,omitempty"`
}

// Empty reports whether a has nothing to say (no block is shown).
func (a *Attention) Empty() bool {
	return a == nil || (len(a.Messages) == 0 && a.Omitted == 0 && len(a.AckAccepted) == 0 && len(a.AckRejected) == 0 && a.AckRejectedOmitted == 0)
}

func (a *Attention) reject(id, reason string) {
	if len(a.AckRejected) >= MaxAckRejections {
		a.AckRejectedOmitted++
		return
	}
	if len(id) > maxAckIDEcho {
		id = id[:maxAckIDEcho] + "..."
	}
	a.AckRejected = append(a.AckRejected, AckRejection{MessageID: redact.String(id), Reason: reason})
}

// AttendParams describe one call's attention projection.
type AttendParams struct {
	// SessionID is the call's verified recorder, or "".
	SessionID string
	// Acks are the request's ack_session_message_ids, as sent.
	Acks []string
	// Before is when the call began: messages posted since (by the call
	// itself, or concurrently) wait for a later call.
	Before time.Time
	// Claimed are ids another judge already judged (a window's peer
	// messages): they are neither accepted nor rejected here.
	Claimed map[string]bool
}

// AttentionStats count the projection facts' behind writes that failed
// (each is logged; the blocks already sent stay true).
type AttentionStats struct {
	FactWriteFailures int64 `json:"fact_write_failures"`
}

// Attend builds the session_attention block of one call and queues its
// analysis facts behind the response: each shown message's
// first_projected_at, last_projected_at and projection_count, and each
// accepted ACK's first_ack_observed_at (the first one advances the
// message-observation revision and wakes observers; repeats change
// nothing). The caller never waits for those writes. When one fails it is
// logged and counted ([Board.AttentionStats]) and the block stays true:
// it says what the response shows and how it judged the ids, never that
// anything was stored. An ordinary message shown by a call whose facts
// were lost may be shown once more. A board that cannot be read yields a
// block judging only the ids' form (nil when there is nothing to say);
// the tool's own result is never affected.
func (b *Board) Attend(ctx context.Context, p AttendParams) *Attention {
	a := &Attention{SessionID: p.SessionID}
	// Each id's reason, in request order ("" once accepted or to judge).
	reasons := make([]string, len(p.Acks))
	var judge []int
	seen := map[string]bool{}
	for i, id := range p.Acks {
		switch {
		case i >= MaxAckIDs:
			reasons[i] = AckOverLimit
		case p.Claimed[id]:
		case ParseMessageID("", id) != nil:
			reasons[i] = AckMalformed
		case seen[id]:
			reasons[i] = AckDuplicate
		case p.SessionID == "":
			reasons[i] = AckNoRecorder
		default:
			seen[id] = true
			judge = append(judge, i)
		}
	}
	finish := func() *Attention {
		for i, id := range p.Acks {
			if reasons[i] != "" {
				a.reject(id, reasons[i])
			}
		}
		if a.Empty() {
			return nil
		}
		return a
	}
	if p.SessionID == "" {
		return finish()
	}
	if len(judge) == 0 {
		// No id to judge: a board without a message this block could show
		// needs no snapshot. An error here leaves it to the full read.
		if possible, err := b.store.AttentionPossible(ctx, p.SessionID, p.Before); err == nil && !possible {
			return finish()
		}
	}
	before := b.pendingSnapshot(p.SessionID)
	var shown []Message
	// The recorder was verified by the kernel: no lifecycle check here.
	err := b.store.ViewBoard(ctx, p.SessionID, func(r BoardReader) error {
		accepted := map[string]bool{}
		for _, i := range judge {
			id := p.Acks[i]
			m, ok, err := r.Message(id)
			switch {
			case err != nil:
				return err
			case !ok:
				reasons[i] = AckNotInSession
			case !m.RequiresAck:
				reasons[i] = AckNotRequired
			case m.Status != MessageOpen:
				reasons[i] = AckResolved
			default:
				accepted[id] = true
				a.AckAccepted = append(a.AckAccepted, id)
			}
		}
		ms, total, err := r.Attention(p.Before, MaxAttentionMessages+len(accepted))
		if err != nil {
			return err
		}
		total -= len(accepted)
		for _, m := range ms {
			if !accepted[m.ID] && len(shown) < MaxAttentionMessages {
				shown = append(shown, m)
			}
		}
		a.Omitted = total - len(shown)
		return nil
	})
	if err != nil {
		// Nothing of the board is claimed: the ids that needed it are
		// left unjudged (not listed), the rest keep their reasons.
		b.log().Warn("session attention not projected", "session", p.SessionID, "err", err)
		a = &Attention{}
		for _, i := range judge {
			reasons[i] = ""
		}
		return finish()
	}
	shown = b.claimOrdinary(p.SessionID, shown, before)
	for _, m := range shown {
		body, _ := redact.Truncate(m.Body, AttentionExcerptChars)
		a.Messages = append(a.Messages, AttentionMessage{ID: m.ID, Kind: m.Kind, Priority: m.Priority,
			RequiresAck: m.RequiresAck, Message: body, Truncated: body != m.Body, ReplyTo: m.ReplyTo,
			AuthorSessionID: m.AuthorSessionID, CreatedAt: m.CreatedAt})
	}
	if len(shown) > 0 || len(a.AckAccepted) > 0 {
		b.recordFacts(ctx, p.SessionID, shown, a.AckAccepted)
	}
	return finish()
}

// pendingKey names an ordinary message whose projection facts are queued.
func pendingKey(session, id string) string { return session + "\x00" + id }

// pendingSnapshot returns the ordinary messages of session whose
// projection is queued but maybe not committed yet.
func (b *Board) pendingSnapshot(session string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]bool{}
	for k := range b.pending {
		out[k] = true
	}
	return out
}

// claimOrdinary drops from ms the ordinary messages another call is
// projecting (queued before this call's read, or since), and claims the
// rest until their facts commit. A message queued before the read may be
// committed after the read's snapshot began, so both are checked.
func (b *Board) claimOrdinary(session string, ms []Message, before map[string]bool) []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = map[string]bool{}
	}
	out := ms[:0:0]
	for _, m := range ms {
		k := pendingKey(session, m.ID)
		if !m.RequiresAck {
			if before[k] || b.pending[k] {
				continue
			}
			b.pending[k] = true
		}
		out = append(out, m)
	}
	return out
}

// recordFacts queues the projection and ACK facts of one block.
func (b *Board) recordFacts(ctx context.Context, session string, shown []Message, acked []string) {
	at := b.now().UTC()
	var advanced bool
	release := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, m := range shown {
			if !m.RequiresAck {
				delete(b.pending, pendingKey(session, m.ID))
			}
		}
	}
	done := func(err error) {
		release()
		if err != nil {
			b.factFailures.Add(1)
			b.log().Warn("session attention facts not stored", "session", session, "err", err)
			return
		}
		if advanced {
			b.notify.Notify(session)
		}
	}
	err := b.store.UpdateBoardBehind(context.WithoutCancel(ctx), session, func(w BoardWriter) error {
		advanced = false
		st, err := w.State()
		if err != nil {
			return err
		}
		for _, s := range shown {
			m, ok, err := w.Message(s.ID)
			if err != nil {
				return err
			}
			if !ok {
				continue // removed by retention since: nothing to note
			}
			if m.FirstProjectedAt == nil {
				m.FirstProjectedAt = &at
			}
			m.LastProjectedAt = &at
			m.ProjectionCount++
			if err := w.Save(m); err != nil {
				return err
			}
		}
		for _, id := range acked {
			m, ok, err := w.Message(id)
			if err != nil {
				return err
			}
			if !ok || !m.RequiresAck || m.FirstAckObservedAt != nil {
				continue // only the first accepted ACK is a change
			}
			m.FirstAckObservedAt = &at
			st.ObservationRevision++
			m.ObservationRevision = st.ObservationRevision
			if err := w.Save(m); err != nil {
				return err
			}
			advanced = true
		}
		if advanced {
			return w.SetState(st)
		}
		return nil
	}, done)
	if err != nil {
		done(err)
	}
}

// AttentionStats returns the board's attention counters.
func (b *Board) AttentionStats() AttentionStats {
	return AttentionStats{FactWriteFailures: b.factFailures.Load()}
}

// WithLogger returns b logging through l.
func (b *Board) WithLogger(l *slog.Logger) *Board {
	b.logger = l
	return b
}

func (b *Board) log() *slog.Logger {
	if b.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.logger
}
