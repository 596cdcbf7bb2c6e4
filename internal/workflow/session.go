// Package workflow is the Workflow Session domain: explicit, per-task ledgers
// (wc_sess_*) created or continued only by exact id, with a bounded, redacted
// event tail, execution defaults and a creation-time authority fingerprint.
//
// Workflow Sessions are never inferred from a credential, a window, a project
// or a connection, and they are a different system from Action Audit
// Sessions: they share no ids, storage or lifecycle.
//
// The package holds the domain types, the bounds of DESIGN.md §5, the
// authorization checks, the [Service] that tools call, and the [Store]
// interface that workflow/workflowdb implements.
package workflow

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of the Workflow Session ledger (DESIGN.md §5).
const (
	// SessionIDPrefix starts every Workflow Session id.
	SessionIDPrefix = "wc_sess_"
	// TailLimit is the number of events retained per session.
	TailLimit = 2000
	// SummaryDefault is the number of events a summary returns by default.
	SummaryDefault = 50
	// SummaryMax is the most events one summary returns.
	SummaryMax = 200
	// InstructionMinChars and InstructionMaxChars bound a work_on_project
	// instruction, in Unicode characters.
	InstructionMinChars = 1
	InstructionMaxChars = 4000
	// TitleMaxChars bounds a session title.
	TitleMaxChars = 120
	// FactMaxChars bounds each string value in an event's facts.
	FactMaxChars = 240
	// MaxFacts bounds the number of facts on one event.
	MaxFacts = 16
	// MaxEventPaths bounds the observed or changed paths kept on one event.
	MaxEventPaths = 64
	// MaxCwdBytes bounds an execution-context default_cwd.
	MaxCwdBytes = 1024
	// ListMax bounds one list_sessions page.
	ListMax = 50
	// MaxJobMarkers bounds Session.JobMarkers: the Runner's authoritative
	// terminal inventory limit (the terminal-candidate snapshot of one
	// session holds at most this many jobs).
	MaxJobMarkers = 64
)

// isSessionID reports whether id is wc_sess_ followed by 32 lowercase hex
// digits (every claim check validates a header: no regexp on that path).
func isSessionID(id string) bool {
	hex, ok := strings.CutPrefix(id, SessionIDPrefix)
	return ok && len(hex) == 32 && lowerHex(hex)
}

// NewSessionID returns a fresh wc_sess_ id carrying 128 random bits.
func NewSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("workflow: crypto/rand failed: " + err.Error())
	}
	return SessionIDPrefix + hex.EncodeToString(b[:])
}

// ParseSessionID validates the form of a session id. It returns
// failure.InvalidSessionID for anything but wc_sess_ followed by 32
// lowercase hex digits.
func ParseSessionID(id string) (string, error) {
	if !isSessionID(id) {
		if len(id) > 64 {
			id = id[:64] + "..."
		}
		return "", failure.New(failure.InvalidSessionID, "session id %q is not of the form wc_sess_<32 lowercase hex>", id)
	}
	return id, nil
}

// Mode restricts what a session may be used for.
type Mode string

// Session modes.
const (
	ModeNormal   Mode = "normal"
	ModeReadOnly Mode = "read_only"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == ModeNormal || m == ModeReadOnly }

// Lifecycle is the state of a session. The only transition is active → closed.
type Lifecycle string

// Lifecycle states.
const (
	Active Lifecycle = "active"
	Closed Lifecycle = "closed"
)

// Shell names a default shell dialect.
type Shell string

// Shells a session may default to.
const (
	ShellSh   Shell = "sh"
	ShellBash Shell = "bash"
)

// ExecutionContext holds a session's persistent execution defaults. It never
// contains environment, credentials or shell input.
type ExecutionContext struct {
	// DefaultCwd is a validated project-relative directory; with a
	// Resource, a bounded remote path instead.
	DefaultCwd string `json:"default_cwd,omitempty"`
	// DefaultShell is sh or bash.
	DefaultShell Shell `json:"default_shell,omitempty"`
	// Resource names an SSH resource of the runner serving the session's
	// project: run_shell and run_job run through it. Only the name is
	// ever stored.
	Resource string `json:"resource,omitempty"`
}

// Counters are cumulative per-session facts; they count every event ever
// appended, including those later removed by retention.
type Counters struct {
	ToolCalls    int64 `json:"tool_calls"`
	ToolFailures int64 `json:"tool_failures"`
	Instructions int64 `json:"instructions"`
	GuardDenials int64 `json:"guard_denials"`
	// Replays counts the calls (among ToolCalls) that were idempotent
	// replays (Event.Replayed): each returned an earlier call's result
	// and changed nothing. Absent (zero) in headers and ledgers written
	// before replays were recorded.
	Replays int64 `json:"replays,omitempty"`
}

// A Session is one Workflow Session's header.
type Session struct {
	ID        string    `json:"session_id"`
	Project   string    `json:"project"`
	Title     string    `json:"title"`
	Mode      Mode      `json:"mode"`
	Lifecycle Lifecycle `json:"lifecycle"`
	// OwnerFingerprint is the creation-time authority-group fingerprint.
	OwnerFingerprint string           `json:"owner_authority_fingerprint"`
	ExecutionContext ExecutionContext `json:"execution_context"`
	CreatedAt        time.Time        `json:"created_at"`
	UpdatedAt        time.Time        `json:"updated_at"`
	ClosedAt         *time.Time       `json:"closed_at,omitempty"`
	// EventsObserved counts every event ever appended.
	EventsObserved int64 `json:"events_observed"`
	// RetentionTruncated is true once an event has been dropped from the tail.
	RetentionTruncated bool `json:"retention_truncated"`
	// EventsPurged counts the events the retention policy removed after
	// the session closed ([PurgedEvents]); RetentionTruncated is then
	// true too. The counters still count them. Absent (zero) in headers
	// and ledgers of sessions never purged.
	EventsPurged int64    `json:"events_purged,omitempty"`
	Counters     Counters `json:"counters"`
	// JobMarkers are the exact ids of the terminal validation Jobs whose
	// evidence was materialized in this session (at most MaxJobMarkers).
	// It is checked and extended in the same store mutation that appends
	// the evidence event, so a Job becomes evidence at most once here,
	// independently of the event tail's retention. Optional: older headers
	// and ledgers without it restore it empty.
	JobMarkers []string `json:"job_markers,omitempty"`
}

// Mutable reports whether the session accepts mutations.
func (s Session) Mutable() bool { return s.Lifecycle == Active }
