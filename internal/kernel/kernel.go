package kernel

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/telemetry"
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
	// SourceConsole is a person's action in the Runtime Console.
	SourceConsole Source = "console"
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
	// AckMessageIDs are the ids the caller echoes in ack_session_message_ids,
	// as sent; the ambient projections judge them (an ACK never gates the
	// call).
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
	// Refusal, when set, is why the transport refused the call's envelope
	// (a duplicate key, a malformed wrapper member): the kernel runs
	// nothing, and records the refusal like any other.
	Refusal error
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
// Success, Output, Error, Warnings and Projections are the wire shape; the other fields are facts
// the kernel observed for the transport (telemetry) and never serialized.
type Result struct {
	Success bool       `json:"success"`
	Output  any        `json:"output"`
	Error   *ErrorBody `json:"error,omitempty"`

	// Warnings are facts about the call the model must not miss that are
	// not the tool's own result, such as an evidence gap.
	Warnings []Warning `json:"warnings,omitempty"`
	// Projections are the ambient blocks added after the effect (see
	// Ambient); their members are part of the wire shape, not of Body.
	Projections

	// The fields below are facts the kernel decided about the call, typed,
	// for transports and telemetry; they are never serialized, and no layer
	// needs to parse the wire shape to recover them.

	// Refused is true when the call was rejected before the tool's handler
	// ran (unknown tool, invalid arguments, scope, project, session
	// authorization, recorder claim, shutdown): a pre-result rejection.
	Refused bool `json:"-"`
	// FailureKind and RecoveryKind are output.failure_kind and
	// output.recovery_kind of a failed result ("" on success), and
	// StateChanged is output.state_changed.
	FailureKind  string `json:"-"`
	RecoveryKind string `json:"-"`
	StateChanged bool   `json:"-"`
	// ConflictKind is the conflict_kind of an edit_conflict failure.
	ConflictKind string `json:"-"`
	// ChangedPaths are the project-relative paths the tool reported
	// changing (also on failure: what it managed to change).
	ChangedPaths []string `json:"-"`
	// DryRun is true when the tool reported the call as a dry run.
	DryRun bool `json:"-"`
	// ReplayOf is the original effect a successful idempotent replay
	// returned (see Replayer), "" when the call was no replay.
	ReplayOf string `json:"-"`
	// Tool is the registered tool that was called ("" when the name is not
	// registered); Project is the project the call resolved ("" when none).
	Tool    string `json:"-"`
	Project string `json:"-"`
	// Recorder is the verified recording_session_id ("" when none was
	// claimed or the claim was refused); BusinessSession is the
	// authorized business session, or the session the call created
	// (work_on_project), "" when none.
	Recorder        string `json:"-"`
	BusinessSession string `json:"-"`
	// Body is the JSON of {success, output, error} exactly as the evidence
	// record's result digest covers it: no HTML escaping, no insignificant
	// whitespace, no trailing newline, members in that order. Transports
	// send these bytes so that a client can check the digest. It is nil
	// when the result could not be encoded.
	Body []byte `json:"-"`
	// Duration is the kernel's own timing of the call, from its admission
	// to its decided outcome (the finish's commit, which carries the
	// evidence record with this duration, is not in it).
	Duration time.Duration `json:"-"`
	// Evidence is where the call's evidence record was journaled, when
	// that happened before the result was returned (see Appended).
	Evidence Appended `json:"-"`
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
	// Outbox, when set, carries the record of a call recorded in a
	// session in the transaction of its tool_call_finished event instead
	// (Evidence receives it only when that write fails, and the records
	// of calls recorded in no session).
	Outbox Outbox
	Logger *slog.Logger
	Now    func() time.Time

	// Ambient are the projections added to model-facing results after
	// the effect, in order (see Ambient).
	Ambient []Ambient
	// Observe, when set, is told of every call once its outcome is
	// decided (window activity); it must not block on a commit.
	Observe func(ctx context.Context, c Call, res Result)
	// Tracing, when set, gets a span per call (execute_tool, a child of
	// the transport's request span in ctx); nil is tracing off.
	Tracing *telemetry.Tracing
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
	outbox   Outbox
	ambient  []Ambient
	log      *slog.Logger
	now      func() time.Time
	observe  func(context.Context, Call, Result)
	tracing  *telemetry.Tracing

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
		o.Evidence = func(context.Context, Record) (Appended, error) { return Appended{}, nil }
	}
	stop, stopFn := context.WithCancel(context.Background())
	return &Kernel{
		reg: o.Registry, projects: o.Projects, sessions: o.Sessions,
		evidence: o.Evidence, outbox: o.Outbox, ambient: o.Ambient, log: o.Logger, now: o.Now, observe: o.Observe, tracing: o.Tracing, stop: stop, stopFn: stopFn,
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

// Dispatch runs one call through the pipeline and returns its Result. It
// never returns a Go error: every failure is a Result with success=false.
func (k *Kernel) Dispatch(ctx context.Context, c Call) Result {
	// The call's principal is the one every service judges it by,
	// whatever the transport put in ctx (the project resolver reads it).
	ctx = auth.WithPrincipal(ctx, c.Principal)
	start := k.now()
	k.calls.Add(1)
	rec := Record{
		InvocationID:  newID("inv_"),
		At:            start.UTC(),
		Tool:          redact.String(truncate(c.Tool, MaxRecordingSessionIDBytes)),
		Source:        c.Source,
		ProtocolEra:   c.ProtocolEra,
		PrincipalKind: string(c.Principal.Kind),
		ClientWindow:  c.ClientWindow,
		ClientName:    c.ClientName,
		UserAgent:     c.UserAgent,
		ArgsSHA256:    argsDigest(c.Arguments),
		Binding:       notChecked,
	}
	if c.RecordingSessionID != "" {
		rec.Binding.ClaimedSessionID = boundedClaim(c.RecordingSessionID)
	}
	ctx, span := k.startSpan(ctx, c.Tool)
	res, recorded := k.dispatch(ctx, c, &rec)
	if !res.Success {
		k.failures.Add(1)
	}
	if !recorded {
		k.seal(&res, &rec)
		k.writeEvidence(ctx, rec, &res)
	}
	span.EndTool(toolCall(c, rec, res))
	if k.observe != nil {
		k.observe(ctx, c, res)
	}
	return res
}

// startSpan starts the call's execute_tool span, named after the
// registered tool (an unknown name is not recorded); nothing when tracing
// is off.
func (k *Kernel) startSpan(ctx context.Context, name string) (context.Context, telemetry.Span) {
	if k.tracing == nil {
		return ctx, telemetry.Span{}
	}
	registered := ""
	if t, ok := k.reg.Lookup(name); ok {
		registered = t.Name
	}
	return k.tracing.StartTool(ctx, registered)
}

// toolCall is what the call's span records: the kernel's own decisions
// (the registered tool, the binding, the verified recorder), never what
// the caller claimed.
func toolCall(c Call, rec Record, res Result) telemetry.ToolCall {
	tc := telemetry.ToolCall{Tool: res.Tool, Source: string(c.Source), InvocationID: rec.InvocationID,
		Binding: string(rec.Binding.State), VerifiedRecorder: res.Recorder,
		LeafIndex: res.Evidence.Index, HasLeaf: res.Evidence.Known}
	if rec.Binding.State != evidence.BindingVerified {
		tc.VerifiedRecorder = ""
	}
	if res.Error != nil {
		tc.ErrorKind = string(res.Error.Kind)
	}
	return tc
}

// Failure returns the ToolResult of a call refused before it reached a
// tool (for transports that validate their own envelope), in the same
// shape the kernel uses for its own failures, marked Refused.
func Failure(err error) Result {
	res := failed(err, false)
	res.Refused = true
	res.Body = encodeBody(res)
	return res
}
