package kernel

import (
	"context"
	"sync"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow"
)

// A Replayer is a tool output that may be the idempotent replay of an
// earlier call: its domain decided, under an idempotency key, that the
// call repeated that call and returned its result, changing nothing
// (workflow.Replay). The kernel records a successful replay as one call
// whose tool_call_finished events say replayed and name the original,
// and whose evidence record says the same; a tool never records it
// itself.
type Replayer interface {
	Replay() workflow.Replay
}

// An Invocation is what a tool handler knows about its call: the verified
// caller, the resolved project, the authorized business session, and
// collectors for the effect evidence the kernel records.
type Invocation struct {
	// ID is the runtime-generated invocation correlation id.
	ID        string
	Tool      string
	Principal auth.Principal
	// Project is the resolved project; HasProject reports whether the call
	// resolved one.
	Project    project.Project
	HasProject bool
	// Session is the authorized business session, or nil.
	Session *workflow.Session
	// Window is the call's principal-bound ClientWindow hash ("" when
	// none): observational, never a session selector or authority.
	Window string

	progress ProgressFunc

	// started is closed when the tool_call_started commit of a tool that
	// prepares before its effect has ended, with startErr its error; nil
	// when the handler has nothing to wait for.
	started  chan struct{}
	startErr error

	// recordIn lists the sessions this call is recorded in (verified
	// recorder and authorized active business session), set before the
	// handler runs.
	recordIn []string
	// recorder is the verified recorder's session id ("" without one).
	recorder string
	// claimed is the remembered header the claims on session claimedIn
	// were judged on (workflow.Claim.Remembered), which its started
	// commit must find stored; "" when the claims read the store.
	claimed, claimedIn string

	mu       sync.Mutex
	attached map[string][]workflow.Event
	observed []string
	changed  []string
	digests  []Digest
	facts    map[string]string
	adopted  *workflow.Session
	dryRun   bool
}

// Observe records project-relative paths a successful read or search
// observed. Only paths are kept, never contents or patterns.
func (inv *Invocation) Observe(paths ...string) {
	inv.mu.Lock()
	inv.observed = append(inv.observed, paths...)
	inv.mu.Unlock()
}

// Change records project-relative paths the tool changed.
func (inv *Invocation) Change(paths ...string) {
	inv.mu.Lock()
	inv.changed = append(inv.changed, paths...)
	inv.mu.Unlock()
}

// A Digest is the whole-file SHA-256 of a project file as a call saw it:
// read (the digest read_files reports) or left by the call's write (""
// for a delete). Only the path and the hex digest, never contents.
type Digest struct {
	Path   string
	SHA256 string
	Wrote  bool
}

// Saw records whole-file digests the call observed, for the ambient
// projections (the read set's changed_since_read). A tool reports a
// write's digest only for a change it made; a dry run reports none.
func (inv *Invocation) Saw(ds ...Digest) {
	inv.mu.Lock()
	inv.digests = append(inv.digests, ds...)
	inv.mu.Unlock()
}

func (inv *Invocation) sawDigests() []Digest {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.digests
}

// Fact records a bounded key/value fact for the finished event (it is
// redacted and truncated before it is stored).
func (inv *Invocation) Fact(key, value string) {
	inv.mu.Lock()
	if inv.facts == nil {
		inv.facts = map[string]string{}
	}
	inv.facts[key] = value
	inv.mu.Unlock()
}

// Progress reports progress to a caller that asked for it; it is a no-op
// otherwise. progress must increase between calls; total is 0 when unknown.
func (inv *Invocation) Progress(progress, total float64, message string) {
	if inv.progress != nil {
		inv.progress(progress, total, message)
	}
}

// RecordedIn returns the ids of the sessions this call is recorded in: the
// verified recorder and the authorized active business session (each once).
// A tool that leaves session-specific evidence computes it per session.
func (inv *Invocation) RecordedIn() []string { return inv.recordIn }

// Recorder returns the id of the call's verified recorder
// (recording_session_id, authorized like a business session), or "" when
// the call named none. It is the only trusted provenance of a call's
// author; it grants nothing on the business session.
func (inv *Invocation) Recorder() string { return inv.recorder }

// Attach adds an event (for example validation evidence) to be appended
// to session id right after the call's tool_call_finished, in the same
// commit. Events for sessions the call is not recorded in are ignored.
func (inv *Invocation) Attach(id string, e workflow.Event) {
	inv.mu.Lock()
	if inv.attached == nil {
		inv.attached = map[string][]workflow.Event{}
	}
	inv.attached[id] = append(inv.attached[id], e)
	inv.mu.Unlock()
}

func (inv *Invocation) attachedTo(id string) []workflow.Event {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.attached[id]
}

// Adopt tells the kernel that the handler created session s, so that the
// call's business event pair is recorded there.
func (inv *Invocation) Adopt(s workflow.Session) {
	inv.mu.Lock()
	inv.adopted = &s
	inv.mu.Unlock()
}

func (inv *Invocation) effects() (observed, changed []string, facts map[string]string, adopted *workflow.Session) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.observed, inv.changed, inv.facts, inv.adopted
}

// MarkDryRun tells the kernel that the call planned but changed nothing
// (an edit tool's dry_run); it is a typed fact of the Result.
func (inv *Invocation) MarkDryRun() {
	inv.mu.Lock()
	inv.dryRun = true
	inv.mu.Unlock()
}

func (inv *Invocation) isDryRun() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.dryRun
}

// BeforeEffect returns nil once the call's tool_call_started events are
// durable, and at once when there is nothing to wait for (a read-only
// tool, a call recorded in no session, or a tool without
// Spec.PreparesBeforeEffect, which runs only after that commit). A tool
// with PreparesBeforeEffect calls it before its first effect (anything a
// crash could leave without a record: a visible file, a directory, a
// process) and, when it returns an error, returns that error having
// changed nothing. A ctx done first is failure.Interrupted.
func (inv *Invocation) BeforeEffect(ctx context.Context) error {
	if inv.started == nil {
		return nil
	}
	select {
	case <-inv.started:
		return inv.startErr
	case <-ctx.Done():
		return failure.Wrap(failure.Interrupted, ctx.Err(), "call was cancelled before anything was changed")
	}
}
