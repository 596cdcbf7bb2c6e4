package workflow

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/redact"
)

// A LedgerBoard is a session's message board in a ledger row: the board's
// durable counters and every retained message with its tracking state
// (assignment history, completion and delivery keys, observation
// revisions), exactly as stored. The board's generation is not carried: a
// restored board always gets a new one ([NewBoardGeneration]).
type LedgerBoard struct {
	Posted                  int64           `json:"posted"`
	Retained                int64           `json:"retained"`
	Removed                 int64           `json:"removed"`
	ObservationRevision     int64           `json:"observation_revision"`
	ObservationLowWatermark int64           `json:"observation_low_watermark"`
	Messages                []LedgerMessage `json:"messages"`
}

// A LedgerMessage is one retained message with its tracking state. Digest
// is the SHA-256 of every other member (see [messageDigest]): a row edited
// by hand without recomputing it cannot prove its shape and is discarded
// on import. It is an integrity check, not a signature: it holds no
// secret, and grants nothing.
type LedgerMessage struct {
	ID                    string        `json:"message_id"`
	Seq                   int64         `json:"seq"`
	CreatedAt             time.Time     `json:"created_at"`
	Kind                  MessageKind   `json:"kind"`
	Status                MessageStatus `json:"status"`
	Priority              Priority      `json:"priority"`
	Body                  string        `json:"message"`
	Tags                  []string      `json:"tags"`
	ReplyTo               string        `json:"reply_to"`
	AuthorSessionID       string        `json:"author_session_id"`
	RequiresAck           bool          `json:"requires_ack"`
	ResolvedAt            *time.Time    `json:"resolved_at,omitempty"`
	Resolution            string        `json:"resolution"`
	ResolvedByMessageID   string        `json:"resolved_by_message_id"`
	CompletionID          string        `json:"completion_id"`
	FirstAckObservedAt    *time.Time    `json:"first_ack_observed_at,omitempty"`
	DeliveryKey           string        `json:"delivery_key"`
	DeliveryFingerprint   string        `json:"delivery_fingerprint"`
	CompletionKey         string        `json:"completion_key"`
	CompletionFingerprint string        `json:"completion_fingerprint"`
	ObservationRevision   int64         `json:"observation_revision"`
	AssignmentRevision    int64         `json:"assignment_revision"`
	RepliesPosted         int64         `json:"replies_posted"`
	RepliesRemoved        int64         `json:"replies_removed"`
	Digest                string        `json:"digest"`
}

// ledgerMessageMembers are the members every ledger message must have
// (all but the two optional times).
var ledgerMessageMembers = []string{"message_id", "seq", "created_at", "kind", "status", "priority", "message", "tags",
	"reply_to", "author_session_id", "requires_ack", "resolution", "resolved_by_message_id", "completion_id",
	"delivery_key", "delivery_fingerprint", "completion_key", "completion_fingerprint", "observation_revision",
	"assignment_revision", "replies_posted", "replies_removed", "digest"}

// messageDigest is the digest of m's members other than Digest.
func messageDigest(m LedgerMessage) string {
	m.Digest = ""
	if m.CreatedAt.Location() != time.UTC {
		m.CreatedAt = m.CreatedAt.UTC()
	}
	for _, t := range []**time.Time{&m.ResolvedAt, &m.FirstAckObservedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return fingerprint("webcodex ledger message v1", m)
}

func ledgerMessage(m Message) LedgerMessage {
	lm := LedgerMessage{ID: m.ID, Seq: m.Seq, CreatedAt: m.CreatedAt.UTC(), Kind: m.Kind, Status: m.Status, Priority: m.Priority,
		Body: m.Body, Tags: normTags(m.Tags), ReplyTo: m.ReplyTo, AuthorSessionID: m.AuthorSessionID, RequiresAck: m.RequiresAck,
		ResolvedAt: m.ResolvedAt, Resolution: m.Resolution, ResolvedByMessageID: m.ResolvedByMessageID,
		CompletionID: m.CompletionID, FirstAckObservedAt: m.FirstAckObservedAt, DeliveryKey: m.DeliveryKey,
		DeliveryFingerprint: m.DeliveryFingerprint, CompletionKey: m.CompletionKey, CompletionFingerprint: m.CompletionFingerprint,
		ObservationRevision: m.ObservationRevision, AssignmentRevision: m.AssignmentRevision,
		RepliesPosted: m.RepliesPosted, RepliesRemoved: m.RepliesRemoved}
	lm.Digest = messageDigest(lm)
	return lm
}

func (lm LedgerMessage) message(session string) Message {
	return Message{ID: lm.ID, SessionID: session, CreatedAt: lm.CreatedAt.UTC(), Kind: lm.Kind, Status: lm.Status,
		Priority: lm.Priority, Body: redact.String(lm.Body), Tags: redactAll(normTags(lm.Tags)), ReplyTo: lm.ReplyTo,
		AuthorSessionID: lm.AuthorSessionID, RequiresAck: lm.RequiresAck, ResolvedAt: utcPtr(lm.ResolvedAt),
		Resolution: redact.String(lm.Resolution), ResolvedByMessageID: lm.ResolvedByMessageID, CompletionID: lm.CompletionID,
		FirstAckObservedAt: utcPtr(lm.FirstAckObservedAt), Seq: lm.Seq, DeliveryKey: lm.DeliveryKey,
		DeliveryFingerprint: lm.DeliveryFingerprint, CompletionKey: lm.CompletionKey, CompletionFingerprint: lm.CompletionFingerprint,
		ObservationRevision: lm.ObservationRevision, AssignmentRevision: lm.AssignmentRevision,
		RepliesPosted: lm.RepliesPosted, RepliesRemoved: lm.RepliesRemoved}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// exportBoard reads session id's board in one snapshot; nil when the
// session has never had a message.
func exportBoard(ctx context.Context, bs BoardStore, id string) (*LedgerBoard, error) {
	var out *LedgerBoard
	err := bs.ViewBoard(ctx, id, func(r BoardReader) error {
		st, err := r.State()
		if err != nil {
			return err
		}
		if st.Posted == 0 {
			return nil
		}
		ms, more, err := r.List(MessageFilter{Limit: MaxRetainedMessages})
		if err != nil {
			return err
		}
		if more {
			return fmt.Errorf("session %s board holds more than %d messages", id, MaxRetainedMessages)
		}
		b := &LedgerBoard{Posted: st.Posted, Retained: st.Retained, Removed: st.Removed,
			ObservationRevision: st.ObservationRevision, ObservationLowWatermark: st.ObservationLowWatermark,
			Messages: make([]LedgerMessage, 0, len(ms))}
		for i := len(ms) - 1; i >= 0; i-- { // List is newest first; the ledger is in post order
			b.Messages = append(b.Messages, ledgerMessage(ms[i]))
		}
		out = b
		return nil
	})
	return out, err
}

// A RestoredBoard is a ledger row's board as import stores it: the
// messages that proved their shape, the counters adjusted for those that
// did not, and a new generation.
type RestoredBoard struct {
	State    BoardState
	Messages []Message
	// Discarded lists the message rows that could not prove their shape
	// and were left out.
	Discarded []DiscardedMessage
}

// A DiscardedMessage is a ledger message row left out of an import.
type DiscardedMessage struct {
	// Index is the row's 1-based position in the board's messages; ID is
	// its message_id when it could be read.
	Index  int    `json:"index"`
	ID     string `json:"message_id,omitempty"`
	Reason string `json:"reason"`
}

// NewBoardGeneration returns a fresh, non-zero board generation for a
// restored board, so that observation tokens of the board it was exported
// from (whose generation is another) fail closed on it.
func NewBoardGeneration() int64 {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic("workflow: crypto/rand failed: " + err.Error())
		}
		if g := int64(binary.BigEndian.Uint64(b[:]) >> 1); g != 0 {
			return g
		}
	}
}

// ledgerBoardWire is the board member as read: messages stay raw so that
// each is checked, and discarded, on its own.
type ledgerBoardWire struct {
	Posted                  *int64            `json:"posted"`
	Retained                *int64            `json:"retained"`
	Removed                 *int64            `json:"removed"`
	ObservationRevision     *int64            `json:"observation_revision"`
	ObservationLowWatermark *int64            `json:"observation_low_watermark"`
	Messages                []json.RawMessage `json:"messages"`
}

var hexDigestRE = regexp.MustCompile(`^([0-9a-f]{64})?$`)
var completionIDRE = regexp.MustCompile(`^(wc_cmp_[0-9a-f]{32})?$`)

// restoreBoard checks a row's board member. Counters that contradict each
// other refuse the row (an error); a message row that cannot prove its
// shape (unknown or missing members, invalid values, a digest that does
// not match, a duplicate identity, tracking that contradicts the
// counters) is discarded and counted, and the board is adjusted as
// retention would have left it: removed and the low-watermark raised, its
// parent's reply counters moved. No fence, key or revision is invented.
func restoreBoard(session string, raw json.RawMessage) (*RestoredBoard, error) {
	var w ledgerBoardWire
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return nil, fmt.Errorf("board: %v", err)
	}
	for _, m := range []struct {
		name string
		v    *int64
	}{{"posted", w.Posted}, {"retained", w.Retained}, {"removed", w.Removed},
		{"observation_revision", w.ObservationRevision}, {"observation_low_watermark", w.ObservationLowWatermark}} {
		if m.v == nil {
			return nil, fmt.Errorf("board: missing member %q", m.name)
		}
		if *m.v < 0 {
			return nil, fmt.Errorf("board: %s is negative", m.name)
		}
	}
	if w.Messages == nil {
		return nil, fmt.Errorf("board: missing member \"messages\"")
	}
	st := BoardState{SessionID: session, Generation: NewBoardGeneration(), Posted: *w.Posted, Retained: *w.Retained,
		Removed: *w.Removed, ObservationRevision: *w.ObservationRevision, ObservationLowWatermark: *w.ObservationLowWatermark}
	switch {
	case int64(len(w.Messages)) != st.Retained:
		return nil, fmt.Errorf("board: retained is %d but it holds %d messages", st.Retained, len(w.Messages))
	case st.Retained > MaxRetainedMessages:
		return nil, fmt.Errorf("board: more than %d messages", MaxRetainedMessages)
	case st.Posted != st.Retained+st.Removed:
		return nil, fmt.Errorf("board: posted %d is not retained %d + removed %d", st.Posted, st.Retained, st.Removed)
	case st.ObservationLowWatermark > st.ObservationRevision:
		return nil, fmt.Errorf("board: observation_low_watermark is above observation_revision")
	}
	out := &RestoredBoard{State: st}
	type entry struct {
		i  int // index in the row's messages
		lm LedgerMessage
	}
	var kept []entry
	ids, seqs, revs, keys := map[string]bool{}, map[int64]bool{}, map[int64]bool{}, map[string]bool{}
	discard := func(i int, lm LedgerMessage, reason string) {
		out.Discarded = append(out.Discarded, DiscardedMessage{Index: i + 1, ID: lm.ID, Reason: reason})
		rev := lm.ObservationRevision
		if rev <= 0 || rev > st.ObservationRevision {
			rev = st.ObservationRevision // its revision is unknown: every cursor of this board lost history
		}
		out.State.ObservationLowWatermark = max(out.State.ObservationLowWatermark, rev)
	}
	for i, r := range w.Messages {
		lm, err := decodeLedgerMessage(r)
		if err == nil {
			err = checkLedgerMessage(lm, st)
		}
		if err == nil {
			switch {
			case ids[lm.ID]:
				err = fmt.Errorf("message_id is repeated")
			case seqs[lm.Seq]:
				err = fmt.Errorf("seq is repeated")
			case revs[lm.ObservationRevision]:
				err = fmt.Errorf("observation_revision is repeated")
			case lm.DeliveryKey != "" && keys[lm.DeliveryKey]:
				err = fmt.Errorf("delivery_key is repeated")
			}
		}
		if err != nil {
			if !messageIDRE.MatchString(lm.ID) {
				lm.ID = ""
			}
			discard(i, lm, err.Error())
			continue
		}
		ids[lm.ID], seqs[lm.Seq], revs[lm.ObservationRevision] = true, true, true
		if lm.DeliveryKey != "" {
			keys[lm.DeliveryKey] = true
		}
		kept = append(kept, entry{i, lm})
	}
	// Reply counters: on a live board a retained message's retained
	// direct replies number exactly replies_posted - replies_removed. One
	// with more cannot prove its shape; one with fewer can only have lost
	// them to a discard (when there was one), and counts them as removed,
	// as retention would have. Discarding a message can take a reply from
	// its parent, so this runs until nothing more is discarded.
	replies := map[string]int64{}
	for {
		clear(replies)
		for _, e := range kept {
			if e.lm.ReplyTo != "" {
				replies[e.lm.ReplyTo]++
			}
		}
		next := kept[:0:0]
		for _, e := range kept {
			have, want := replies[e.lm.ID], e.lm.RepliesPosted-e.lm.RepliesRemoved
			switch {
			case have > want:
				discard(e.i, e.lm, fmt.Sprintf("holds %d retained direct replies, but its reply counters allow %d", have, want))
			case have < want && len(out.Discarded) == 0:
				discard(e.i, e.lm, fmt.Sprintf("holds %d retained direct replies, but its reply counters say %d", have, want))
			default:
				next = append(next, e)
			}
		}
		if len(next) == len(kept) {
			break
		}
		kept = next
	}
	for _, e := range kept {
		m := e.lm.message(session)
		if lost := m.RepliesPosted - m.RepliesRemoved - replies[m.ID]; lost > 0 {
			m.RepliesRemoved += lost
			if m.Kind == MessageTodo {
				m.AssignmentRevision += lost // a removed reply is an assignment-local change
			}
		}
		out.Messages = append(out.Messages, m)
	}
	n := int64(len(out.Discarded))
	out.State.Retained -= n
	out.State.Removed += n
	slices.SortFunc(out.Discarded, func(a, b DiscardedMessage) int { return a.Index - b.Index })
	return out, nil
}

// decodeLedgerMessage decodes one message row strictly: unknown members
// and missing required members are refused. The returned message's ID is
// set whenever the row names one.
func decodeLedgerMessage(raw json.RawMessage) (LedgerMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return LedgerMessage{}, fmt.Errorf("not an object")
	}
	var lm LedgerMessage
	json.Unmarshal(members["message_id"], &lm.ID)
	id := lm.ID
	for _, name := range ledgerMessageMembers {
		if _, ok := members[name]; !ok {
			return LedgerMessage{ID: id}, fmt.Errorf("missing member %q", name)
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&lm); err != nil {
		return LedgerMessage{ID: id}, fmt.Errorf("%v", err)
	}
	return lm, nil
}

// checkLedgerMessage checks one decoded message against its digest, the
// board's bounds and the live board's invariants.
func checkLedgerMessage(lm LedgerMessage, st BoardState) error {
	if lm.Digest != messageDigest(lm) {
		return fmt.Errorf("digest does not match the row (edited?)")
	}
	if err := ParseMessageID("message_id", lm.ID); err != nil {
		return err
	}
	switch {
	case !lm.Kind.Valid():
		return fmt.Errorf("unknown kind")
	case !lm.Status.Valid():
		return fmt.Errorf("unknown status")
	case !lm.Priority.Valid():
		return fmt.Errorf("unknown priority")
	case lm.Seq < 1 || lm.Seq > st.Posted:
		return fmt.Errorf("seq %d is not within 1..posted", lm.Seq)
	case lm.ObservationRevision < 1 || lm.ObservationRevision > st.ObservationRevision:
		return fmt.Errorf("observation_revision %d is not within 1..the board's", lm.ObservationRevision)
	case lm.AssignmentRevision < 0 || lm.RepliesPosted < 0 || lm.RepliesRemoved < 0 || lm.RepliesRemoved > lm.RepliesPosted:
		return fmt.Errorf("assignment or reply counters are out of range")
	case lm.ReplyTo == lm.ID:
		return fmt.Errorf("replies to itself")
	case (lm.Status == MessageResolved) != (lm.ResolvedAt != nil):
		return fmt.Errorf("resolved_at does not match status")
	case !hexDigestRE.MatchString(lm.DeliveryFingerprint) || !hexDigestRE.MatchString(lm.CompletionFingerprint):
		return fmt.Errorf("a fingerprint is not 64 lowercase hex")
	case lm.DeliveryKey != "" && lm.DeliveryFingerprint == "":
		return fmt.Errorf("delivery_key without its fingerprint")
	case !completionIDRE.MatchString(lm.CompletionID):
		return fmt.Errorf("completion_id is malformed")
	case lm.CompletionID != "" && (lm.Kind != MessageTodo || lm.Status != MessageResolved || lm.CompletionKey == "" ||
		lm.CompletionFingerprint == "" || lm.ResolvedByMessageID == ""):
		return fmt.Errorf("a completion needs a resolved todo, its key, fingerprint and answer")
	case lm.CompletionID == "" && (lm.CompletionKey != "" || lm.CompletionFingerprint != ""):
		return fmt.Errorf("completion tracking without a completion")
	}
	if lm.ReplyTo != "" {
		if err := ParseMessageID("reply_to", lm.ReplyTo); err != nil {
			return err
		}
	}
	if lm.ResolvedByMessageID != "" {
		if err := ParseMessageID("resolved_by_message_id", lm.ResolvedByMessageID); err != nil {
			return err
		}
	}
	if lm.AuthorSessionID != "" {
		if _, err := ParseSessionID(lm.AuthorSessionID); err != nil {
			return fmt.Errorf("author_session_id is malformed")
		}
	}
	if err := checkText("message", lm.Body, MessageMinChars, MessageMaxChars); err != nil {
		return err
	}
	if err := checkText("resolution", lm.Resolution, 0, ResolutionMaxChars); err != nil {
		return err
	}
	if err := checkTags(lm.Tags); err != nil {
		return err
	}
	if err := checkKey("delivery_key", lm.DeliveryKey); err != nil {
		return err
	}
	return checkKey("completion_key", lm.CompletionKey)
}
