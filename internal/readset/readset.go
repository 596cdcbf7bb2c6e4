// Package readset keeps each Workflow Session's read set: the whole-file
// SHA-256 of every project file the session last read (or wrote) through
// the tools, and the notices owed to a session whose recorded read was
// followed by a different digest of the same file, observed by a read or
// an edit of another session, or of a call with no session (issue 28,
// item 5; decision 0080). Only paths and hex digests are kept, never file
// contents. It is advisory: it never gates or changes a call.
//
// The domain knows neither the kernel nor a transport: the composition
// root turns a call's observed digests into Observations, hands them to a
// Tracker behind the response, and projects what Tracker.Take returns as
// the result's changed_since_read member.
package readset

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project/filerev"
)

// Bounds of the read set and its notices.
const (
	// MaxReadsPerSession bounds the paths one session's read set holds;
	// recording one more evicts the least recently read (with any notice
	// still pending for it).
	MaxReadsPerSession = 512
	// MaxNoticesPerResult bounds the notices one result carries; the rest
	// stay pending for the session's next result (Notices.Total counts
	// them all).
	MaxNoticesPerResult = 20
	// MaxObservationsPerCall bounds the digests one call contributes; a
	// call that observed more is recorded up to the bound (the rest are
	// counted as dropped).
	MaxObservationsPerCall = 64
	// MaxCleanScopes bounds the sessions (per project) a Tracker
	// remembers as having nothing pending; past it the memory is cleared
	// and each session's next call reads the store once again.
	MaxCleanScopes = 4096
	// QueueCalls bounds the calls whose observations wait for the
	// Tracker's writer; a call arriving at a full queue is dropped and
	// counted, never waited for.
	QueueCalls = 1024
	// ReadRefresh is how old a read's time must be for a re-read of the
	// same digest to refresh it: eviction orders reads by that time, and
	// repeated reads of an unchanged file within it write nothing.
	ReadRefresh = time.Minute
)

// Unknown is Notice.ChangedBy when the change was not a write through the
// tools by a session of the reader's authority group (another process, a
// call without a session, or another group's session).
const Unknown = "unknown"

// An Observation is one file digest a call saw on a project: a whole-file
// read, or the content an edit left.
type Observation struct {
	// Owner is the calling principal's authority-group fingerprint.
	Owner   string
	Project string
	// Session is the call's session (verified recorder, else authorized
	// business session), "" for a call with none: its observation is
	// compared with others' reads but recorded in no read set.
	Session string
	// Path is the canonical project-relative path.
	Path string
	// SHA256 is the hex whole-file digest; "" when the file is gone (a
	// delete) or the call changed it without reporting the new digest.
	SHA256 string
	// Wrote is true when the call changed the file (then a notice names
	// Session as its author), false for a read.
	Wrote bool
	// At is when the call observed it.
	At time.Time
}

// A Read is one entry of a session's read set.
type Read struct {
	Path   string
	SHA256 string
	At     time.Time
}

// A Notice says that a file a session read has changed since.
type Notice struct {
	Path string `json:"path"`
	// ReadSHA256 is the digest the session read.
	ReadSHA256 string `json:"read_sha256"`
	// SHA256 is the digest observed since; "" (omitted) when the file was
	// deleted or its new digest is not known.
	SHA256 string `json:"sha256,omitempty"`
	// ChangedBy is the session whose write through the tools changed it,
	// or Unknown.
	ChangedBy  string    `json:"changed_by"`
	ObservedAt time.Time `json:"observed_at"`
}

// Notices is the changed_since_read member of a session's result: the
// notices delivered now (at most MaxNoticesPerResult, oldest first),
// each delivered once.
type Notices struct {
	Files []Notice `json:"files"`
	// Total counts the notices pending before this delivery; Truncated
	// says some of them wait for the next result.
	Total     int    `json:"total"`
	Truncated bool   `json:"truncated,omitempty"`
	Hint      string `json:"hint"`
}

// NoticeHint is Notices.Hint.
const NoticeHint = "these files changed since you read them; re-read them before editing"

// Store keeps read sets and pending notices. Both methods are safe for
// concurrent use by several processes on the same database.
type Store interface {
	// Record applies obs in order in one transaction. For each: every
	// other session whose read of (Project, Path) has another digest gets
	// a pending notice (kept as it is when it already names this digest;
	// ChangedBy is Session when Wrote and Session is of the reader's
	// Owner, else Unknown); then Session's own read of the path becomes
	// SHA256 (removed when SHA256 is ""), its pending notice for the path
	// is cleared, and its read set is cut to MaxReadsPerSession. notified
	// reports whether it made or changed a pending notice.
	Record(ctx context.Context, obs []Observation) (notified bool, err error)
	// Pending reports whether session has a pending notice on project
	// (one indexed read).
	Pending(ctx context.Context, session, project string) (bool, error)
	// Take removes and returns at most limit of session's pending notices
	// on project, oldest first, and how many were pending in all. The
	// session's read of a path it is told about is forgotten (unless it
	// was read again meanwhile), so the change is told once; its next read
	// records the new digest. Two concurrent Takes never return the same
	// notice.
	Take(ctx context.Context, session, project string, limit int) ([]Notice, int, error)
	// Reads returns session's read set on project, most recent first.
	Reads(ctx context.Context, session, project string) ([]Read, error)
	// Forget removes every read and pending notice of the sessions (on
	// any project), in one transaction: a closed session reads no more.
	Forget(ctx context.Context, sessions []string) error
}

// Validate reports whether o can be recorded: a project, a path and an
// owner, and a SHA256 that is empty or 64 lowercase hex digits. Errors:
// invalid_arguments.
func (o Observation) Validate() error {
	switch {
	case o.Project == "" || o.Path == "" || o.Owner == "":
		return failure.New(failure.InvalidArguments, "an observation needs a project, a path and an owner")
	case o.SHA256 != "" && !filerev.IsSHA256(o.SHA256):
		return failure.New(failure.InvalidArguments, "sha256 of %q must be 64 lowercase hex digits", o.Path)
	}
	return nil
}
