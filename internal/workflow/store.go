package workflow

import (
	"context"
	"errors"
	"time"
)

// ListFilter selects sessions for List.
type ListFilter struct {
	// Project, when set, keeps only sessions bound to that project.
	Project string
	// Fingerprint, when set, keeps only sessions created by that authority
	// group.
	Fingerprint string
	// Lifecycle, when set, keeps only sessions in that state.
	Lifecycle Lifecycle
	Limit     int
	Offset    int
}

// StoreStatus reports store-wide counts for operators.
type StoreStatus struct {
	Sessions       int64 `json:"sessions"`
	ActiveSessions int64 `json:"active_sessions"`
	Events         int64 `json:"events"`
	// DiscardedRows counts malformed session or event rows found at restore
	// and moved aside; they never reach a caller.
	DiscardedRows int64 `json:"discarded_rows"`
	// UnrecordedReads counts read-only calls that processes which died
	// (kill -9, power loss) had acknowledged but whose events (or, for a
	// call recorded in no session, evidence outbox row) never reached a
	// commit, found when this process opened the store.
	UnrecordedReads int64 `json:"unrecorded_reads_at_start"`
}

// CallWrite says how [Store.AppendCall] writes a tool call's events.
type CallWrite struct {
	// Outbox, when not nil, is stored in the same transaction as the
	// events, in the store's evidence outbox (opaque bytes).
	Outbox []byte
	// Behind queues the write behind the caller: AppendCall returns once
	// it is queued, in order after every earlier write, without waiting
	// for its commit; Done (which may be nil) then receives its outcome,
	// from the store's writer (it must not block or write). Readers of
	// the session (Get, Events) wait for it. A behind write commits
	// without its own fsync and is durable with the next durable commit
	// (it survives the process being killed; see docs/ledger-format.md).
	Behind bool
	Done   func(error)
	// Claimed, when not empty, is the stored header (its JSON) a claim on
	// the session was judged on without reading it (Service.RememberedClaim):
	// the write fails with ErrClaimChanged, writing nothing, unless the
	// session's stored header is still exactly it.
	Claimed string
}

// ErrClaimChanged is the error of a write whose CallWrite.Claimed is no
// longer the session's stored header: the claim must be judged again on
// a read of the session.
var ErrClaimChanged = errors.New("workflow: the session changed after its claim was judged")

// UpdateFunc inspects and may change a session header, returning events to
// append. Returning an error aborts the update with nothing written.
type UpdateFunc func(s *Session) ([]Event, error)

// Store persists Workflow Sessions. Every mutating method returns only after
// its change is durably committed; a returned error means nothing changed.
// Implementations apply [Sanitize] to every event and [Apply] to the header,
// and keep at most [TailLimit] events per session.
type Store interface {
	// Create inserts s with its initial events. failure.Conflict when the
	// id exists.
	Create(ctx context.Context, s Session, events []Event) (Session, []Event, error)
	// Get returns the session header; failure.UnknownSessionID when absent.
	Get(ctx context.Context, id string) (Session, error)
	// List returns sessions matching f, newest first, and the total number
	// that match.
	List(ctx context.Context, f ListFilter) ([]Session, int, error)
	// Update atomically loads a session, runs fn, appends the events it
	// returns and stores the header. failure.UnknownSessionID when absent.
	Update(ctx context.Context, id string, fn UpdateFunc) (Session, []Event, error)
	// Events returns the newest limit retained events of a session in
	// ascending seq order (all retained events when limit <= 0).
	Events(ctx context.Context, id string, limit int) ([]Event, error)
	// Import inserts, in one transaction, every row next returns until it
	// returns io.EOF: each session with its retained events and its
	// restored board (LedgerRow.Restored) exactly as given (seq, counters,
	// revisions and timestamps included; [ImportLedger] has already
	// checked, redacted and bounded them). Any error (one next returns, an
	// invalid row, failure.Conflict for a session id that exists, also
	// earlier in the same import) rolls back the whole import: nothing is
	// written. It returns how many sessions it imported.
	Import(ctx context.Context, next func() (LedgerRow, error)) (int, error)
	// AppendCall is Update for the events of a tool call, written as w
	// says. Unless w.Behind, it returns after the durable commit. fn may
	// run more than once (on the header the store last saw, then on the
	// one stored, when they differ): it must change nothing but *s.
	AppendCall(ctx context.Context, id string, fn UpdateFunc, w CallWrite) error
	// Status reports store-wide counts.
	Status(ctx context.Context) (StoreStatus, error)
	// OpenCalls returns at most limit open calls (a tool_call_started
	// with no tool_call_finished of the same call_id in its session),
	// ordered by invocation, session and call id. Open calls are tracked
	// apart from the event tail, so a call whose started event retention
	// removed is still returned; a finished event appended by any method
	// closes its call. Calls started by a process that still has the
	// store open (this one included) are running and never returned.
	OpenCalls(ctx context.Context, limit int) ([]OpenCall, error)
}

// Apply advances s by appended events: it assigns each event the next seq,
// fills a missing time with now, updates counters, events_observed and
// updated_at, and returns the sanitized events. retained is the number of
// events the session holds before the append; Apply reports how many of the
// oldest must be dropped to respect TailLimit.
func Apply(s *Session, events []Event, now time.Time, retained int) (out []Event, drop int) {
	out = make([]Event, len(events))
	synthetic := len(events) > 0
	var latest time.Time
	for i, e := range events {
		if !e.Synthetic || e.At.IsZero() {
			synthetic = false
		} else if e.At.After(latest) {
			latest = e.At
		}
		e = Sanitize(e)
		s.EventsObserved++
		e.Seq = s.EventsObserved
		if e.At.IsZero() {
			e.At = now
		}
		switch e.Kind {
		case EventToolCallStarted:
			s.Counters.ToolCalls++
		case EventToolCallFinished:
			if e.Outcome != OutcomeOK {
				s.Counters.ToolFailures++
			}
			if e.Replayed {
				s.Counters.Replays++
			}
		case EventTaskInstruction:
			s.Counters.Instructions++
		case EventGuardDenied:
			s.Counters.GuardDenials++
		}
		out[i] = e
	}
	switch {
	case synthetic:
		// Materialized evidence keeps its own time: activity never
		// advances to the moment it was observed.
		if latest.After(s.UpdatedAt) {
			s.UpdatedAt = latest
		}
	case len(events) > 0:
		s.UpdatedAt = now
	}
	if total := retained + len(out); total > TailLimit {
		drop = total - TailLimit
		s.RetentionTruncated = true
	}
	return out, drop
}
