package kernel

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow"
)

// Source names the transport a call arrived on.
type Source string

// Call sources.
const (
	SourceREST     Source = "rest"
	SourceMCP      Source = "mcp"
	SourceCLI      Source = "cli"
	SourceInternal Source = "internal"
)

// MaxRecordingSessionIDBytes bounds the recorder claim kept as evidence.
const MaxRecordingSessionIDBytes = 128

// A Call is one tool invocation as a transport hands it to the kernel.
// Wrapper metadata has already been removed from Arguments.
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// RecordingSessionID is the recorder claim; empty when none was sent.
	RecordingSessionID string
	// AckMessageIDs are opaque wc_msg_ ids (message board, later issue).
	AckMessageIDs []string
	Principal     auth.Principal
	Source        Source
	ProtocolEra   string
	// ClientWindow is the already-hashed host window; never a raw value.
	ClientWindow string
	// ClientName and UserAgent are the caller's self-reported client
	// identity, for display and audit only (never authority).
	ClientName string
	UserAgent  string
	// Progress, when set, receives the tool's progress reports (the
	// transport forwards them to a client that asked for progress).
	Progress ProgressFunc
}

// ProgressFunc receives a progress report: progress increases, total is 0
// when unknown.
type ProgressFunc func(progress, total float64, message string)

// ErrorBody is the error member of a failed Result.
type ErrorBody struct {
	Kind    failure.Kind `json:"kind"`
	Message string       `json:"message"`
}

// Warning is one entry of Result.Warnings.
type Warning struct {
	Kind    failure.Kind `json:"kind"`
	Message string       `json:"message"`
}

// Result is the ToolResult envelope every transport returns. Only
// Success, Output, Error and Warnings are the wire shape; the other fields are facts
// the kernel observed for the transport (telemetry) and never serialized.
type Result struct {
	Success bool       `json:"success"`
	Output  any        `json:"output"`
	Error   *ErrorBody `json:"error,omitempty"`

	// Warnings are facts about the call the model must not miss that are
	// not the tool's own result, such as an evidence gap.
	Warnings []Warning `json:"warnings,omitempty"`

	// Refused is true when the call was rejected before the tool's handler
	// ran (unknown tool, invalid arguments, scope, project, session
	// authorization, recorder claim, shutdown): a pre-result rejection.
	Refused bool `json:"-"`
	// Duration is the kernel's own timing of the call.
	Duration time.Duration `json:"-"`
}

// ProjectResolver finds a registered project by id
// (failure.UnknownProject when absent).
type ProjectResolver interface {
	Get(ctx context.Context, id string) (project.Project, error)
}

// Options configure a Kernel.
type Options struct {
	Registry *Registry
	Projects ProjectResolver
	Sessions *workflow.Service
	// Evidence receives one record per invocation; nil discards.
	Evidence EvidenceSink
	Logger   *slog.Logger
	Now      func() time.Time
}

// Stats are the kernel's cumulative counters, exposed by /api/status.
type Stats struct {
	Calls          int64 `json:"calls"`
	Failures       int64 `json:"failures"`
	InvalidClaims  int64 `json:"invalid_recorder_claims"`
	RecordFailures int64 `json:"record_failures"`
	// EvidenceGaps counts records the evidence sink reported as not
	// written (mutating calls carry an evidence_gap warning).
	EvidenceGaps int64 `json:"evidence_gaps"`
	Interrupted  int64 `json:"interrupted"`
	InFlight     int64 `json:"in_flight"`
}

// Kernel dispatches calls to registered tools.
type Kernel struct {
	reg      *Registry
	projects ProjectResolver
	sessions *workflow.Service
	evidence EvidenceSink
	log      *slog.Logger
	now      func() time.Time

	calls, failures, invalidClaims, recordFailures, evidenceFailures, interrupted, inflight atomic.Int64

	mu       sync.Mutex
	draining bool
	wg       sync.WaitGroup
	stop     context.Context
	stopFn   context.CancelFunc
}

// New returns a Kernel.
func New(o Options) *Kernel {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Evidence == nil {
		o.Evidence = func(context.Context, Record) error { return nil }
	}
	stop, stopFn := context.WithCancel(context.Background())
	return &Kernel{
		reg: o.Registry, projects: o.Projects, sessions: o.Sessions,
		evidence: o.Evidence, log: o.Logger, now: o.Now, stop: stop, stopFn: stopFn,
	}
}

// Registry returns the kernel's tool registry.
func (k *Kernel) Registry() *Registry { return k.reg }

// Stats returns the kernel's counters.
func (k *Kernel) Stats() Stats {
	return Stats{
		Calls: k.calls.Load(), Failures: k.failures.Load(),
		InvalidClaims: k.invalidClaims.Load(), RecordFailures: k.recordFailures.Load(),
		EvidenceGaps: k.evidenceFailures.Load(), Interrupted: k.interrupted.Load(), InFlight: k.inflight.Load(),
	}
}

// Drain stops admitting calls and waits for in-flight ones. When ctx ends
// first, in-flight handlers are cancelled and their calls are recorded as
// interrupted; Drain then waits for that recording to finish.
func (k *Kernel) Drain(ctx context.Context) {
	k.mu.Lock()
	k.draining = true
	k.mu.Unlock()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		k.stopFn()
		<-done
	}
}

func (k *Kernel) admit() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.draining {
		return false
	}
	k.wg.Add(1)
	return true
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// argsDigest digests the arguments in compact JSON form (insignificant
// whitespace removed), or as received when they are not valid JSON.
func argsDigest(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return digest(buf.Bytes())
	}
	return digest(raw)
}

// Dispatch runs one call through the pipeline and returns its Result. It
// never returns a Go error: every failure is a Result with success=false.
func (k *Kernel) Dispatch(ctx context.Context, c Call) Result {
	start := k.now()
	k.calls.Add(1)
	rec := Record{
		InvocationID:  newID("inv_"),
		At:            start.UTC(),
		Tool:          c.Tool,
		Source:        c.Source,
		ProtocolEra:   c.ProtocolEra,
		PrincipalKind: string(c.Principal.Kind),
		ClientWindow:  c.ClientWindow,
		ClientName:    c.ClientName,
		UserAgent:     c.UserAgent,
		ArgsSHA256:    argsDigest(c.Arguments),
		Binding:       Binding{State: Sessionless, Reasons: []string{ReasonNoRecorderRequested}},
	}
	if c.RecordingSessionID != "" {
		claim := c.RecordingSessionID
		if len(claim) > MaxRecordingSessionIDBytes {
			claim = claim[:MaxRecordingSessionIDBytes]
		}
		rec.Binding = Binding{State: InvalidClaim, ClaimedSessionID: claim}
	}
	res := k.dispatch(ctx, c, &rec)
	if !res.Success {
		k.failures.Add(1)
	}
	rec.Duration = k.now().Sub(start)
	res.Duration = rec.Duration
	if b, err := json.Marshal(res); err == nil {
		rec.ResultSHA256 = digest(b)
	}
	if res.Error != nil {
		rec.ErrorKind = string(res.Error.Kind)
	}
	if err := k.evidence(context.WithoutCancel(ctx), rec); err != nil {
		k.evidenceFailures.Add(1)
		k.log.Warn("evidence record not written", "tool", rec.Tool, "invocation", rec.InvocationID, "err", err)
		if rec.Mutates {
			res.Warnings = append(res.Warnings, Warning{Kind: failure.EvidenceGap,
				Message: "the evidence journal could not record this call (" + rec.InvocationID + "); its result above stands"})
		}
	}
	return res
}

func (k *Kernel) refuse(rec *Record, err error) Result {
	rec.Outcome = OutcomeRefused
	res := failed(err, false)
	res.Refused = true
	return res
}

// Failure returns the ToolResult of a call refused before it reached a
// tool (for transports that validate their own envelope), in the same
// shape the kernel uses for its own failures, marked Refused.
func Failure(err error) Result {
	res := failed(err, false)
	res.Refused = true
	return res
}

func failed(err error, stateChanged bool) Result {
	kind := failure.KindOf(err)
	out := map[string]any{
		"failure_kind":  failureKind(kind),
		"recovery_kind": recoveryKind(kind),
		"state_changed": stateChanged,
	}
	for key, v := range failure.DetailOf(err) {
		out[key] = v
	}
	return Result{Success: false, Output: out, Error: &ErrorBody{Kind: kind, Message: failure.MessageOf(err)}}
}

func failureKind(k failure.Kind) string {
	switch k {
	case failure.InvalidArguments, failure.UnknownTool, failure.RequestTooLarge, failure.InvalidSessionID,
		failure.InvalidExecutionContext, failure.InvalidCodingInstruction, failure.UnknownProject:
		return "invalid_arguments"
	case failure.InsufficientScope, failure.PermissionDenied, failure.SessionAuthorityDenied,
		failure.SessionGuardDenied, failure.Unauthenticated, failure.JobAuthorityDenied:
		return "permission_denied"
	case failure.EditConflict, failure.StalePrecondition, failure.Conflict:
		return "stale_precondition"
	case failure.OutcomeUnknown, failure.Interrupted, failure.Cancelled:
		return "outcome_unknown"
	case failure.UnknownSessionID, failure.SessionClosed, failure.SessionProjectMismatch, failure.NotFound,
		failure.JobNotFound, failure.JobProjectMismatch:
		return "not_started"
	case failure.Unavailable, failure.ShellBusy:
		return "capability_unavailable"
	case failure.NotStarted:
		return "not_started"
	case failure.CommandFailed:
		return "command_failed"
	case failure.ValidationFailed:
		return "validation_failed"
	case failure.EvidenceGap:
		return "evidence_gap"
	case failure.TimedOut:
		return "timeout"
	case failure.ShellResetRequired, failure.ShellClosed:
		return "reset_required"
	}
	return "operation_failed"
}

func recoveryKind(k failure.Kind) string {
	switch failureKind(k) {
	case "invalid_arguments", "not_started":
		return "fix_input"
	case "permission_denied":
		return "request_permission"
	case "stale_precondition":
		return "reread_and_retry"
	case "outcome_unknown":
		return "inspect_state"
	case "capability_unavailable":
		return "retry_later"
	case "command_failed", "timeout", "validation_failed":
		return "inspect_output"
	case "evidence_gap":
		return "rerun_with_complete_output"
	case "reset_required":
		return "reopen_shell"
	}
	return "inspect_error"
}

func (k *Kernel) dispatch(ctx context.Context, c Call, rec *Record) Result {
	if !k.admit() {
		return k.refuse(rec, failure.New(failure.Unavailable, "server is shutting down"))
	}
	defer k.wg.Done()
	k.inflight.Add(1)
	defer k.inflight.Add(-1)

	// 1. Lookup.
	tool, ok := k.reg.Lookup(c.Tool)
	if !ok {
		return k.refuse(rec, failure.New(failure.UnknownTool, "no tool named %q", truncate(c.Tool, 64)))
	}
	rec.Mutates = tool.Mutates
	// 2. Strict decoding.
	in, err := tool.decode(c.Arguments)
	if err != nil {
		return k.refuse(rec, err)
	}
	// 3. Scopes.
	for _, s := range tool.Scopes {
		if !c.Principal.Has(s) {
			return k.refuse(rec, failure.New(failure.InsufficientScope, "tool %s requires scope %s", tool.Name, s))
		}
	}
	inv := &Invocation{ID: rec.InvocationID, Tool: tool.Name, Principal: c.Principal, progress: c.Progress}
	fp := c.Principal.AuthorityFingerprint()

	// 4. Project resolution; 5. business session authorization.
	var projectID, businessID string
	if ps, ok := in.(ProjectScoped); ok {
		projectID = ps.ProjectID()
	}
	if ss, ok := in.(SessionScoped); ok {
		businessID = ss.BusinessSessionID()
		rec.BusinessSessionID = truncate(businessID, MaxRecordingSessionIDBytes)
	}
	if tool.Session == SessionRequired && businessID == "" {
		return k.refuse(rec, failure.New(failure.InvalidArguments, "session_id is required"))
	}
	if projectID == "" && businessID != "" {
		if _, err := workflow.ParseSessionID(businessID); err != nil {
			return k.refuse(rec, err)
		}
		s, err := k.sessions.Get(ctx, businessID)
		if err != nil {
			return k.refuse(rec, err)
		}
		if s.OwnerFingerprint != fp {
			return k.refuse(rec, failure.New(failure.SessionAuthorityDenied, "session %s belongs to another authority group", businessID))
		}
		projectID = s.Project
	}
	if projectID != "" {
		p, err := k.projects.Get(ctx, projectID)
		if err != nil {
			return k.refuse(rec, err)
		}
		inv.Project, inv.HasProject = p, true
		rec.Project = p.ID
	}
	if businessID != "" {
		s, err := k.sessions.Authorize(ctx, businessID, workflow.Check{
			Fingerprint: fp, Project: projectID, Mutate: tool.Mutates, Write: tool.Writes,
		})
		if err != nil {
			if failure.Is(err, failure.SessionGuardDenied) {
				// The denial is itself evidence in the guarded session.
				if rerr := k.sessions.RecordDenial(context.WithoutCancel(ctx), businessID, workflow.Event{
					Kind: workflow.EventGuardDenied, Tool: tool.Name, InvocationID: inv.ID,
					Role: workflow.RoleBusiness, Outcome: workflow.OutcomeDenied,
					ErrorKind: string(failure.SessionGuardDenied),
				}); rerr != nil {
					k.recordFailures.Add(1)
					k.log.Warn("record guard denial", "tool", tool.Name, "err", rerr)
				}
			}
			return k.refuse(rec, err)
		}
		inv.Session = &s
	}

	// 6. Recorder verification.
	var recorder *workflow.Session
	if c.RecordingSessionID != "" {
		s, reasons, verr := k.sessions.Verify(ctx, c.RecordingSessionID, workflow.Check{
			Fingerprint: fp, Project: projectID, Mutate: true,
		})
		rec.Binding.CheckedKeys, rec.Binding.SkippedKeys = checkedKeys(reasons, projectID != "")
		if s.ID != "" {
			rec.Binding.SessionDigest = sessionDigest(s)
		}
		if len(reasons) > 0 {
			rec.Binding.Reasons = reasonsOf(reasons)
			k.invalidClaims.Add(1)
			k.log.Warn("invalid recorder claim", "tool", tool.Name, "invocation", inv.ID,
				"reasons", rec.Binding.Reasons, "err", verr)
			kind := workflow.KindFor(reasons)
			ferr := failure.New(kind, "recording_session_id was refused: %s", rec.Binding.Reasons[0]).
				WithDetail("session_binding", string(InvalidClaim)).
				WithDetail("binding_reasons", rec.Binding.Reasons)
			return k.refuse(rec, ferr)
		}
		rec.Binding.State, rec.Binding.Reasons = Verified, []string{string(workflow.ReasonStoreMatch)}
		rec.Binding.VerifiedSessionID, rec.Binding.VerifiedProject = s.ID, s.Project
		rec.Binding.VerifiedAuthority, rec.Binding.VerifiedLifecycle = s.OwnerFingerprint, string(s.Lifecycle)
		recorder = &s
	}

	// 7. Started events.
	pairs := k.pairs(inv, recorder)
	for _, p := range pairs {
		if !slices.Contains(inv.recordIn, p.session) {
			inv.recordIn = append(inv.recordIn, p.session)
		}
	}
	if tool.Mutates && len(pairs) > 0 {
		if err := k.appendStarted(context.WithoutCancel(ctx), inv, pairs, rec.At); err != nil {
			k.recordFailures.Add(1)
			return k.refuse(rec, failure.Wrap(failure.Unavailable, err, "could not record tool_call_started; the tool did not run"))
		}
		for i := range pairs {
			pairs[i].started = true
		}
	}

	// 8. Execute, cancelled if the kernel is force-stopped.
	runCtx, cancel := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(k.stop, cancel)
	out, runErr := k.run(runCtx, tool, inv, in)
	stopWatch()
	cancel()
	interrupted := runErr != nil && k.stop.Err() != nil
	if interrupted {
		k.interrupted.Add(1)
		runErr = failure.Wrap(failure.Interrupted, runErr, "server shut down while the call was running; its outcome is unknown")
	}
	// A call whose caller went away (client disconnect, cancellation) is
	// never recorded as a success: its outcome as the caller sees it is
	// unknown, whatever the tool managed to do (changed paths are kept).
	cancelled := !interrupted && ctx.Err() != nil

	// 9. Finished events.
	observed, changed, facts, adopted := inv.effects()
	if adopted != nil {
		pairs = append(pairs, pair{session: adopted.ID, role: workflow.RoleBusiness, callID: newID("call_")})
	}
	finished := workflow.Event{
		Tool: tool.Name, InvocationID: inv.ID, Outcome: workflow.OutcomeOK,
		DurationMS: k.now().Sub(rec.At).Milliseconds(), Facts: facts, ChangedPaths: changed,
	}
	switch {
	case cancelled:
		finished.Outcome = workflow.OutcomeCancelled
		finished.ErrorKind = string(failure.Cancelled)
	case runErr == nil:
		finished.ObservedPaths = observed
	default:
		finished.Outcome = workflow.OutcomeFailed
		if interrupted {
			finished.Outcome = workflow.OutcomeInterrupted
		}
		finished.ErrorKind = string(failure.KindOf(runErr))
	}
	if len(pairs) > 0 {
		if err := k.appendFinished(context.WithoutCancel(ctx), inv, pairs, finished, rec.At); err != nil {
			k.recordFailures.Add(1)
			k.log.Warn("record tool_call_finished", "tool", tool.Name, "invocation", inv.ID, "err", err)
		}
	}

	// 10/11. Outcome and envelope.
	switch {
	case cancelled:
		rec.Outcome = OutcomeUnknown
		return failed(failure.New(failure.Cancelled, "the call was cancelled by its caller; its outcome is unknown"), tool.Mutates)
	case runErr == nil:
		rec.Outcome = OutcomeOK
		return Result{Success: true, Output: out}
	case interrupted:
		rec.Outcome = OutcomeUnknown
		return failed(runErr, tool.Mutates)
	default:
		rec.Outcome = OutcomeFailed
		if failure.KindOf(runErr) == failure.Internal {
			k.log.Error("tool failed", "tool", tool.Name, "invocation", inv.ID, "err", runErr)
		}
		return failed(runErr, false)
	}
}

func (k *Kernel) run(ctx context.Context, t *Tool, inv *Invocation, in any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			k.log.Error("tool panicked", "tool", t.Name, "panic", p)
			err = errors.New("tool panicked")
		}
	}()
	return t.run(ctx, inv, in)
}

type pair struct {
	session string
	role    workflow.Role
	callID  string
	// started is true once tool_call_started is durable for this pair.
	started bool
}

func (k *Kernel) pairs(inv *Invocation, recorder *workflow.Session) []pair {
	var ps []pair
	if recorder != nil {
		ps = append(ps, pair{session: recorder.ID, role: workflow.RoleRecorder, callID: newID("call_")})
	}
	if inv.Session != nil && inv.Session.Mutable() {
		ps = append(ps, pair{session: inv.Session.ID, role: workflow.RoleBusiness, callID: newID("call_")})
	}
	return ps
}

func (k *Kernel) startedEvent(p pair, inv *Invocation, at time.Time) workflow.Event {
	return workflow.Event{
		Kind: workflow.EventToolCallStarted, At: at, Tool: inv.Tool, CallID: p.callID,
		InvocationID: inv.ID, Role: p.role,
	}
}

// appendStarted makes each session's tool_call_started durable before a
// mutating tool runs. The sessions are independent ledgers, so they are
// appended concurrently and share group commits.
func (k *Kernel) appendStarted(ctx context.Context, inv *Invocation, ps []pair, at time.Time) error {
	return forEachPair(ps, func(p pair) error {
		_, _, err := k.sessions.Append(ctx, p.session, k.startedEvent(p, inv, at))
		return err
	})
}

// appendFinished records each session's tool_call_finished, preceded in the
// same commit by its tool_call_started when that was not written before the
// call (read-only tools, whose effect a crash cannot leave unexplained, and
// sessions the call itself created).
func (k *Kernel) appendFinished(ctx context.Context, inv *Invocation, ps []pair, fin workflow.Event, at time.Time) error {
	return forEachPair(ps, func(p pair) error {
		e := fin
		e.Kind = workflow.EventToolCallFinished
		e.CallID = p.callID
		e.Role = p.role
		evs := []workflow.Event{e}
		if !p.started {
			evs = []workflow.Event{k.startedEvent(p, inv, at), e}
		}
		if firstFor(ps, p) {
			for _, a := range inv.attachedTo(p.session) {
				a.InvocationID = inv.ID
				evs = append(evs, a)
			}
		}
		return k.sessions.AppendFinished(ctx, p.session, at, evs...)
	})
}

// firstFor reports whether p is the first pair recorded in its session
// (recorder and business may share one; attachments go in once).
func firstFor(ps []pair, p pair) bool {
	for _, q := range ps {
		if q.session == p.session {
			return q.callID == p.callID
		}
	}
	return false
}

func forEachPair(ps []pair, fn func(pair) error) error {
	if len(ps) == 1 {
		return fn(ps[0])
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(p) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
