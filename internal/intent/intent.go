// Package intent is the declared edit intent domain (issue 28 item 4,
// decision 0079): a Workflow Session declares the project files it plans
// to change as globs; an intent that overlaps another live session's
// intent on the same project (of the same authority group) leaves an
// overlap notice for both sessions, and a write to a path another
// session declared is named the same way.
//
// Intents are advisory: they grant nothing, never block or change a
// write, and expire with their TTL or their session's closing (both
// judged when they are read; nothing needs a background loop). A session
// has at most one intent: declaring again replaces it. The package reads
// no session store (the caller supplies whether a session is still open)
// and imports no transport.
package intent

import (
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds.
const (
	// MaxGlobs bounds the globs of one intent (1-64).
	MaxGlobs = 64
	// GlobMaxChars bounds one glob.
	GlobMaxChars = 256
	// NoteMaxChars bounds an intent's note.
	NoteMaxChars = 500
	// DefaultTTL is an intent's lifetime when the caller names none;
	// MinTTL and MaxTTL bound a named one.
	DefaultTTL = time.Hour
	MinTTL     = time.Minute
	MaxTTL     = 24 * time.Hour
	// MaxProjectIntents bounds the live intents of one authority group on
	// one project: a declaration past it is refused (conflict), so every
	// list and overlap check reads at most this many.
	MaxProjectIntents = 100
	// MaxNoticeOverlaps bounds the overlaps one notice names (the rest
	// are counted in omitted); MaxNoticeGlobs bounds the globs or paths of
	// one overlap.
	MaxNoticeOverlaps = 8
	MaxNoticeGlobs    = 8
	// MaxPendingNotices bounds the undelivered notices kept for one
	// session: one per other session, the newest replacing the older.
	MaxPendingNotices = 16
	// NoticeRetention is how long an undelivered notice is kept (a
	// session that never calls again never takes it).
	NoticeRetention = MaxTTL
)

// Overlap kinds.
const (
	// KindIntent: another session's live intent overlaps this session's.
	KindIntent = "intent"
	// KindWrite: this call changed a path another session's live intent
	// declares.
	KindWrite = "write"
)

// An Intent is one session's declared edit intent on its project.
type Intent struct {
	SessionID string `json:"session_id"`
	// Owner is the authority-group fingerprint of the declaring caller:
	// intents of other groups are never listed nor compared.
	Owner   string   `json:"-"`
	Project string   `json:"project"`
	Globs   []string `json:"globs"`
	// Note is redacted before it is stored; list_intents shows it, an
	// overlap notice never carries it.
	Note       string    `json:"note,omitempty"`
	DeclaredAt time.Time `json:"declared_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// Live reports whether i has not expired at now.
func (i Intent) Live(now time.Time) bool { return now.Before(i.ExpiresAt) }

// An Overlap names another session whose live intent meets this one.
type Overlap struct {
	// SessionID is the other session.
	SessionID string `json:"session_id"`
	// Kind is KindIntent or KindWrite.
	Kind string `json:"kind"`
	// Globs are the other session's globs that overlap (bounded).
	Globs []string `json:"globs"`
	// Paths are this session's overlapping globs (KindIntent) or the
	// paths this call changed that the other session declared (KindWrite),
	// bounded.
	Paths []string `json:"paths"`
}

// A Notice is the overlap block of a model-facing result.
type Notice struct {
	Overlaps []Overlap `json:"overlaps"`
	// Omitted counts overlaps past MaxNoticeOverlaps.
	Omitted int    `json:"omitted,omitempty"`
	Hint    string `json:"hint"`
}

// Empty reports whether n holds no overlap (nil is empty).
func (n *Notice) Empty() bool { return n == nil || len(n.Overlaps) == 0 }

const noticeHint = "advisory: other sessions declared these paths (list_intents); coordinate before editing, nothing is blocked"

// notice bounds overlaps into a Notice, or nil for none.
func notice(overlaps []Overlap) *Notice {
	if len(overlaps) == 0 {
		return nil
	}
	n := &Notice{Hint: noticeHint}
	if len(overlaps) > MaxNoticeOverlaps {
		n.Omitted = len(overlaps) - MaxNoticeOverlaps
		overlaps = overlaps[:MaxNoticeOverlaps]
	}
	n.Overlaps = overlaps
	return n
}

// A StoredNotice is an overlap kept for Recipient until one of its calls
// takes it.
type StoredNotice struct {
	Recipient string
	Owner     string
	Project   string
	Overlap   Overlap
	CreatedAt time.Time
}

func shown(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func errorf(format string, args ...any) error {
	return failure.New(failure.InvalidArguments, "%s", fmt.Sprintf(format, args...))
}
