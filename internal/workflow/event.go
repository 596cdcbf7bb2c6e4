package workflow

import (
	"sort"
	"time"

	"github.com/webcodex/webcodex/internal/redact"
)

// EventKind names what an event records.
type EventKind string

// Event kinds.
const (
	EventSessionCreated          EventKind = "session_created"
	EventTaskInstruction         EventKind = "task_instruction"
	EventToolCallStarted         EventKind = "tool_call_started"
	EventToolCallFinished        EventKind = "tool_call_finished"
	EventExecutionContextChanged EventKind = "execution_context_changed"
	EventGuardDenied             EventKind = "guard_denied"
	EventSessionClosed           EventKind = "session_closed"
	// EventValidationRecorded carries structured validation evidence.
	EventValidationRecorded EventKind = "validation_recorded"
)

var eventKinds = map[EventKind]bool{
	EventSessionCreated: true, EventTaskInstruction: true, EventToolCallStarted: true,
	EventToolCallFinished: true, EventExecutionContextChanged: true, EventGuardDenied: true,
	EventSessionClosed: true, EventValidationRecorded: true,
}

// Valid reports whether k is a known event kind.
func (k EventKind) Valid() bool { return eventKinds[k] }

// Role says whether a tool-call event pair was written for the session as
// recorder (recording_session_id) or as the tool's business session.
type Role string

// Roles.
const (
	RoleRecorder Role = "recorder"
	RoleBusiness Role = "business"
)

// Outcome is the result recorded by a tool_call_finished event.
type Outcome string

// Outcomes.
const (
	OutcomeOK     Outcome = "ok"
	OutcomeFailed Outcome = "failed"
	OutcomeDenied Outcome = "denied"
	// OutcomeInterrupted marks a call cut short by server shutdown.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomeCancelled marks a call whose caller cancelled it or went
	// away; what the tool did is unknown to the caller.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeUnknown marks a call found started but never finished when
	// the server started again (a crash cut it off): whatever it did is
	// unknown. It is appended by [Service.RecoverOpenCalls], never by a
	// running call.
	OutcomeUnknown Outcome = "outcome_unknown"
)

// Unknown reports whether o leaves what the call did unknown: it was
// interrupted by a shutdown, cancelled by its caller, or recovered after a
// crash. A mutating call with such an outcome may have made changes that
// no event records.
func (o Outcome) Unknown() bool {
	return o == OutcomeInterrupted || o == OutcomeCancelled || o == OutcomeUnknown
}

// An Event is one bounded, redacted entry of a session's ledger. It never
// holds file contents, command output, search patterns or secrets.
type Event struct {
	// Seq is the event's 1-based position among all events ever appended.
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Kind EventKind `json:"kind"`
	Tool string    `json:"tool,omitempty"`
	// CallID identifies one started/finished pair.
	CallID string `json:"call_id,omitempty"`
	// InvocationID correlates every pair written by one kernel invocation.
	InvocationID string  `json:"invocation_id,omitempty"`
	Role         Role    `json:"role,omitempty"`
	Outcome      Outcome `json:"outcome,omitempty"`
	ErrorKind    string  `json:"error_kind,omitempty"`
	DurationMS   int64   `json:"duration_ms,omitempty"`
	// Text is the redacted body of a task_instruction.
	Text string `json:"text,omitempty"`
	// ObservedPaths are project-relative paths a successful read or search
	// observed (the exploration workset).
	ObservedPaths []string `json:"observed_paths,omitempty"`
	// ChangedPaths are project-relative paths a write changed.
	ChangedPaths []string `json:"changed_paths,omitempty"`
	// Facts are bounded key/value facts (at most MaxFacts, values at most
	// FactMaxChars, redacted).
	Facts map[string]string `json:"facts,omitempty"`
	// Validation is the evidence of a validation_recorded event.
	Validation *Validation `json:"validation,omitempty"`
	// Replayed marks the tool_call_finished of an idempotent replay (see
	// [Replay]): the call returned an earlier call's result and changed
	// nothing. ReplayOf is then the id of the original effect (Replay.Of).
	// Both are set together or not at all, and only with outcome ok.
	Replayed bool   `json:"replayed,omitempty"`
	ReplayOf string `json:"replay_of,omitempty"`
	// Synthetic marks evidence materialized after the fact with its own
	// time (At): appending only synthetic events advances the session's
	// updated_at to at most their time, never to the wall clock. Not
	// stored.
	Synthetic bool `json:"-"`
}

// Sanitize returns e with every bound and redaction applied. Stores call it
// before anything is written.
func Sanitize(e Event) Event {
	e.Tool, _ = redact.Truncate(e.Tool, 64)
	e.ErrorKind, _ = redact.Truncate(e.ErrorKind, 64)
	e.Text = redact.Bounded(e.Text, InstructionMaxChars)
	e.ObservedPaths = boundPaths(e.ObservedPaths)
	e.Validation = sanitizeValidation(e.Validation)
	e.ChangedPaths = boundPaths(e.ChangedPaths)
	if len(e.Facts) > 0 {
		keys := make([]string, 0, len(e.Facts))
		for k := range e.Facts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > MaxFacts {
			keys = keys[:MaxFacts]
		}
		out := make(map[string]string, len(keys))
		for _, k := range keys {
			kk, _ := redact.Truncate(k, 64)
			out[kk] = redact.Bounded(e.Facts[k], FactMaxChars)
		}
		e.Facts = out
	} else {
		e.Facts = nil
	}
	return e
}

func boundPaths(ps []string) []string {
	if len(ps) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(ps))
	out := make([]string, 0, min(len(ps), MaxEventPaths))
	for _, p := range ps {
		if seen[p] || p == "" {
			continue
		}
		seen[p] = true
		p = redact.Bounded(p, 512)
		out = append(out, p)
		if len(out) == MaxEventPaths {
			break
		}
	}
	return out
}
