package workflow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of the Session-local message board.
const (
	// MessageIDPrefix starts every message id (wc_msg_ + 32 hex).
	MessageIDPrefix = "wc_msg_"
	// CompletionIDPrefix starts every completion id (wc_cmp_ + 32 hex).
	CompletionIDPrefix = "wc_cmp_"
	// MaxRetainedMessages is the number of messages one session's board
	// retains; see [Board.Post] for the order in which retention removes.
	MaxRetainedMessages = 200
	// MessageMinChars and MessageMaxChars bound a message body (and a
	// completion answer), in Unicode characters; the body must hold a
	// non-space character.
	MessageMinChars = 1
	MessageMaxChars = 8000
	// MaxMessageTags bounds the tags of one message; each tag is 1 to
	// MaxTagChars characters.
	MaxMessageTags = 16
	MaxTagChars    = 64
	// ResolutionMaxChars bounds a resolution note.
	ResolutionMaxChars = 2000
	// MaxIdempotencyKeyChars bounds a delivery_key or completion_key
	// (1 to this many characters).
	MaxIdempotencyKeyChars = 128
	// MessageListDefault and MessageListMax bound one list page.
	MessageListDefault = 50
	MessageListMax     = 100
	// MaxAssignmentReplies is the most direct replies one assignment
	// snapshot holds; a todo with more is not completable.
	MaxAssignmentReplies = 50
	// SummaryOpenPerKind and SummaryRecentPerKind bound the open and
	// recent lists of a discussion summary; SummaryExcerptChars bounds
	// each body there.
	SummaryOpenPerKind   = 10
	SummaryRecentPerKind = 5
	SummaryExcerptChars  = 240
)

// MessageKind is what a message is for.
type MessageKind string

// Message kinds.
const (
	MessageNote     MessageKind = "note"
	MessageProposal MessageKind = "proposal"
	MessageQuestion MessageKind = "question"
	MessageAnswer   MessageKind = "answer"
	MessageDecision MessageKind = "decision"
	MessageRisk     MessageKind = "risk"
	MessageProgress MessageKind = "progress"
	MessageGuidance MessageKind = "guidance"
	MessageTodo     MessageKind = "todo"
)

// MessageKinds lists every kind, in a fixed order.
var MessageKinds = []MessageKind{MessageNote, MessageProposal, MessageQuestion, MessageAnswer,
	MessageDecision, MessageRisk, MessageProgress, MessageGuidance, MessageTodo}

// Valid reports whether k is a known kind.
func (k MessageKind) Valid() bool {
	for _, v := range MessageKinds {
		if k == v {
			return true
		}
	}
	return false
}

// MessageStatus is open or resolved.
type MessageStatus string

// Message statuses.
const (
	MessageOpen     MessageStatus = "open"
	MessageResolved MessageStatus = "resolved"
)

// Valid reports whether s is a known status.
func (s MessageStatus) Valid() bool { return s == MessageOpen || s == MessageResolved }

// Priority is low, normal or high.
type Priority string

// Priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
)

// Valid reports whether p is a known priority.
func (p Priority) Valid() bool { return p == PriorityLow || p == PriorityNormal || p == PriorityHigh }

// A Message is one Session-local board message. The fields marked
// internal are tracking state the store keeps and tools never show.
type Message struct {
	ID        string        `json:"message_id"`
	SessionID string        `json:"session_id"`
	CreatedAt time.Time     `json:"created_at"`
	Kind      MessageKind   `json:"kind"`
	Status    MessageStatus `json:"status"`
	Priority  Priority      `json:"priority"`
	Body      string        `json:"message"`
	Tags      []string      `json:"tags"`
	ReplyTo   string        `json:"reply_to,omitempty"`
	// AuthorSessionID is the verified recorder of the posting call; empty
	// when the call had none (never taken from the caller).
	AuthorSessionID     string     `json:"author_session_id,omitempty"`
	RequiresAck         bool       `json:"requires_ack"`
	ResolvedAt          *time.Time `json:"resolved_at,omitempty"`
	Resolution          string     `json:"resolution,omitempty"`
	ResolvedByMessageID string     `json:"resolved_by_message_id,omitempty"`
	CompletionID        string     `json:"completion_id,omitempty"`
	// FirstAckObservedAt is when an ACK echo of this message was first
	// accepted (an analysis fact, not a read receipt).
	FirstAckObservedAt *time.Time `json:"first_ack_observed_at,omitempty"`
	// FirstProjectedAt, LastProjectedAt and ProjectionCount are when and
	// how often a session_attention block showed this message (analysis
	// facts: a projection is not delivery or reading).
	FirstProjectedAt *time.Time `json:"first_projected_at,omitempty"`
	LastProjectedAt  *time.Time `json:"last_projected_at,omitempty"`
	ProjectionCount  int64      `json:"projection_count,omitempty"`
	// AssigneeRecentActivity is the stale assignment diagnostic of an
	// open todo (AssigneeNoneWithin10m or ""), set by the tools per call,
	// never stored.
	AssigneeRecentActivity string `json:"assignee_recent_activity,omitempty"`

	// Seq is the message's post order in its session (internal).
	Seq int64 `json:"-"`
	// DeliveryKey and DeliveryFingerprint identify the post for replay
	// (internal).
	DeliveryKey         string `json:"-"`
	DeliveryFingerprint string `json:"-"`
	// CompletionKey and CompletionFingerprint identify the completion of a
	// todo for replay (internal).
	CompletionKey         string `json:"-"`
	CompletionFingerprint string `json:"-"`
	// ObservationRevision is the board's message-observation revision at
	// this message's latest observable change (internal).
	ObservationRevision int64 `json:"-"`
	// AssignmentRevision counts the assignment-local semantic changes of
	// a todo: its own status and its direct replies (internal).
	AssignmentRevision int64 `json:"-"`
	// RepliesPosted and RepliesRemoved count a message's direct replies
	// ever posted and removed by retention (internal).
	RepliesPosted  int64 `json:"-"`
	RepliesRemoved int64 `json:"-"`
}

// BoardState is a session board's durable counters.
type BoardState struct {
	SessionID string
	// Lifecycle is the session's lifecycle at the snapshot.
	Lifecycle Lifecycle
	// Generation identifies this incarnation of the board: a board
	// restored under the same session id gets another, so that earlier
	// observation tokens fail closed.
	Generation int64
	// Posted counts the messages ever posted (the last Seq).
	Posted int64
	// Retained is the number of messages the board holds.
	Retained int64
	// Removed counts the messages retention removed.
	Removed int64
	// ObservationRevision is the monotonic message-observation revision:
	// it advances with every observable message change.
	ObservationRevision int64
	// ObservationLowWatermark is the highest observation revision of any
	// removed message: a cursor below it predates lost state.
	ObservationLowWatermark int64
}

// MessageFilter selects messages for a list (all set fields must match).
type MessageFilter struct {
	Kind      MessageKind
	Status    MessageStatus
	MessageID string
	ReplyTo   string
	// Limit is the page size; List also reports whether more match.
	Limit int
}

var messageIDRE = regexp.MustCompile(`^wc_msg_[0-9a-f]{32}$`)

// NewMessageID returns a fresh wc_msg_ id carrying 128 random bits.
func NewMessageID() string { return MessageIDPrefix + randomHex() }

func newCompletionID() string { return CompletionIDPrefix + randomHex() }

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("workflow: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// ParseMessageID validates the form of a message id (invalid_arguments
// for anything but wc_msg_ followed by 32 lowercase hex digits).
func ParseMessageID(field, id string) error {
	if !messageIDRE.MatchString(id) {
		return failure.New(failure.InvalidArguments, "%s must be of the form wc_msg_<32 lowercase hex>", field)
	}
	return nil
}

// checkText checks a bounded text: minChars..maxChars characters, with a
// non-space character when minChars > 0.
func checkText(field, s string, minChars, maxChars int) error {
	n := utf8.RuneCountInString(s)
	if !utf8.ValidString(s) || n > maxChars || (minChars > 0 && strings.TrimSpace(s) == "") || n < minChars {
		return failure.New(failure.InvalidArguments, "%s must be %d-%d characters", field, minChars, maxChars)
	}
	return nil
}

// checkTags checks tags: at most MaxMessageTags distinct tags of 1 to
// MaxTagChars characters, none with a control character.
func checkTags(tags []string) error {
	if len(tags) > MaxMessageTags {
		return failure.New(failure.InvalidArguments, "at most %d tags", MaxMessageTags)
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if err := checkText("a tag", t, 1, MaxTagChars); err != nil {
			return err
		}
		for _, r := range t {
			if r < 0x20 || r == 0x7f {
				return failure.New(failure.InvalidArguments, "a tag contains a control character")
			}
		}
		if seen[t] {
			return failure.New(failure.InvalidArguments, "tag %q is repeated", t)
		}
		seen[t] = true
	}
	return nil
}

func checkKey(field, key string) error {
	if key == "" {
		return nil
	}
	return checkText(field, key, 1, MaxIdempotencyKeyChars)
}

// digest is the domain-separated SHA-256 of v's JSON.
func digest(domain string, v any) [32]byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only marshalable values
	}
	return sha256.Sum256(append([]byte(domain+"\x00"), b...))
}

// fingerprint is digest in hex.
func fingerprint(domain string, v any) string {
	d := digest(domain, v)
	return hex.EncodeToString(d[:])
}

func normTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}
