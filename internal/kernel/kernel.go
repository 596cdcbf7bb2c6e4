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
	"sync"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/redact"
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
		evidence: o.Evidence, outbox: o.Outbox, ambient: o.Ambient, log: o.Logger, now: o.Now, observe: o.Observe, stop: stop, stopFn: stopFn,
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

// newID is prefix followed by 24 random hex digits (one allocation: the
// string, for a prefix of at most 32 bytes).
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	if len(prefix) > 32 {
		return prefix + hex.EncodeToString(b[:])
	}
	var out [32 + 2*len(b)]byte
	n := copy(out[:], prefix)
	hex.Encode(out[n:], b[:])
	return string(out[:n+2*len(b)])
}

// digest is the lower-case hex SHA-256 of b.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], s[:])
	return string(out[:])
}

// argsDigest digests the arguments in compact JSON form (insignificant
// whitespace removed), or as received when they are not valid JSON.
func argsDigest(raw json.RawMessage) string {
	var small [1024]byte
	buf := bytes.NewBuffer(small[:0])
	if json.Compact(buf, raw) == nil {
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
	res, recorded := k.dispatch(ctx, c, &rec)
	if !res.Success {
		k.failures.Add(1)
	}
	if !recorded {
		k.seal(&res, &rec)
		k.writeEvidence(ctx, rec, &res)
	}
	if k.observe != nil {
		k.observe(ctx, c, res)
	}
	return res
}

// seal completes the result and the record once the outcome is decided:
// the duration, the body exactly as sent and its digest, the error kind.
func (k *Kernel) seal(res *Result, rec *Record) {
	rec.Duration = k.now().Sub(rec.At)
	res.Duration = rec.Duration
	res.Project = rec.Project
	res.Body = encodeBody(*res)
	if res.Body != nil {
		rec.ResultSHA256 = digest(res.Body)
	}
	if res.Error != nil {
		rec.ErrorKind = string(res.Error.Kind)
	}
}

// writeEvidence gives rec to the evidence sink; a mutating call whose
// record was not written carries an evidence_gap warning.
func (k *Kernel) writeEvidence(ctx context.Context, rec Record, res *Result) {
	if err := k.evidence(context.WithoutCancel(ctx), rec); err != nil {
		k.evidenceFailures.Add(1)
		k.log.Warn("evidence record not written", "tool", rec.Tool, "invocation", rec.InvocationID, "err", err)
		if rec.Mutates && res != nil {
			res.Warnings = append(res.Warnings, Warning{Kind: failure.EvidenceGap,
				Message: "the evidence journal could not record this call (" + rec.InvocationID + "); its result above stands"})
		}
	}
}

// boundedClaim is a claimed session id as evidence and logs keep it:
// bounded, and with anything shaped like a credential redacted.
func boundedClaim(id string) string {
	if len(id) > MaxRecordingSessionIDBytes {
		id = id[:MaxRecordingSessionIDBytes]
	}
	return redact.String(id)
}

func (k *Kernel) refuse(rec *Record, err error) Result {
	rec.Outcome = evidence.OutcomeRefused
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
	res.Body = encodeBody(res)
	return res
}

// encodeBody returns the Body of res: {success, output, error} as compact
// JSON without HTML escaping, or nil when it cannot be encoded.
func encodeBody(res Result) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Success bool       `json:"success"`
		Output  any        `json:"output"`
		Error   *ErrorBody `json:"error,omitempty"`
	}{res.Success, res.Output, res.Error}); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func failed(err error, stateChanged bool) Result {
	kind := failure.KindOf(err)
	class := failure.ClassOf(kind)
	out := map[string]any{
		"failure_kind":  class.FailureKind,
		"recovery_kind": class.RecoveryKind,
		"state_changed": stateChanged,
	}
	detail := failure.DetailOf(err)
	for key, v := range detail {
		out[key] = v
	}
	res := Result{
		Success: false, Output: out, Error: &ErrorBody{Kind: kind, Message: failure.MessageOf(err)},
		FailureKind: class.FailureKind, RecoveryKind: class.RecoveryKind, StateChanged: stateChanged,
	}
	if kind == failure.EditConflict {
		res.ConflictKind, _ = detail["conflict_kind"].(string)
	}
	return res
}

// dispatch runs the pipeline's steps: admission, lookup and decoding,
// scopes, claims (project, business session and recorder, each session read
// and judged once), durable started events, execution, finished events and
// the outcome.
// It reports whether the call's evidence record was sealed and handed on
// with its finished events (the outbox); otherwise Dispatch writes it.
func (k *Kernel) dispatch(ctx context.Context, c Call, rec *Record) (Result, bool) {
	tool, _ := k.reg.Lookup(c.Tool)
	if tool != nil {
		rec.Mutates = tool.Mutates
	}
	res, recorded := k.steps(ctx, c, tool, rec)
	return res, recorded
}

// steps runs the pipeline for tool (nil when c.Tool is not registered).
func (k *Kernel) steps(ctx context.Context, c Call, tool *Tool, rec *Record) (Result, bool) {
	res, recorded := k.stepsOf(ctx, c, tool, rec)
	if tool != nil {
		res.Tool = tool.Name
	}
	return res, recorded
}

func (k *Kernel) stepsOf(ctx context.Context, c Call, tool *Tool, rec *Record) (Result, bool) {
	if !k.admit() {
		return k.refuse(rec, failure.New(failure.Unavailable, "server is shutting down")), false
	}
	defer k.wg.Done()
	k.inflight.Add(1)
	defer k.inflight.Add(-1)

	if c.Refusal != nil {
		return k.refuse(rec, c.Refusal), false
	}
	in, err := k.admitCall(c, tool)
	if err != nil {
		return k.refuse(rec, err), false
	}
	inv, recorder, pairs, err := k.judgeAndBegin(ctx, c, tool, in, rec, true)
	if errors.Is(err, errJudgeAgain) {
		// What the claims were judged on, the remembered header, is not
		// the stored one (nothing was decided or written): judge them on
		// a read.
		inv, recorder, pairs, err = k.judgeAndBegin(ctx, c, tool, in, rec, false)
	}
	if err != nil {
		return k.refuse(rec, err), false
	}
	out, runErr, interrupted := k.execute(ctx, tool, inv, in)
	if err := k.startedWait(inv, pairs); err != nil {
		if _, changed, _, _ := inv.effects(); len(changed) > 0 {
			// A handler that changed files without durable started events
			// broke BeforeEffect's contract: say so, never hide it.
			k.log.Error("tool changed files although its tool_call_started was not recorded", "tool", tool.Name, "invocation", inv.ID, "changed", changed)
		}
		return k.refuse(rec, err), false
	}
	// A call whose caller went away (client disconnect, cancellation) is
	// never recorded as a success: its outcome as the caller sees it is
	// unknown, whatever the tool managed to do (changed paths are kept).
	cancelled := !interrupted && ctx.Err() != nil
	res := k.outcome(tool, inv, out, runErr, interrupted, cancelled, rec)
	res.Tool = tool.Name
	res.Recorder = inv.recorder
	if inv.Session != nil {
		res.BusinessSession = inv.Session.ID
	}
	if _, _, _, adopted := inv.effects(); adopted != nil {
		res.BusinessSession = adopted.ID
	}
	k.seal(&res, rec)
	k.finish(ctx, tool, inv, pairs, runErr, interrupted, cancelled, rec, &res)
	k.project(ctx, c, inv, recorder, rec.At, &res)
	return res, true
}

// admitCall checks that the tool is registered, decodes its arguments
// strictly and checks the caller's scopes.
func (k *Kernel) admitCall(c Call, tool *Tool) (any, error) {
	if tool == nil {
		return nil, failure.New(failure.UnknownTool, "no tool named %q", truncate(c.Tool, 64))
	}
	in, err := tool.decode(c.Arguments)
	if err != nil {
		return nil, err
	}
	for _, s := range tool.Scopes {
		if !c.Principal.Has(s) {
			return nil, failure.New(failure.InsufficientScope, "tool %s requires scope %s", tool.Name, s)
		}
	}
	return in, nil
}

// judgeAndBegin judges the call's claims (checkClaims, with remember) and
// begins it (begin): the invocation, its verified recorder and the
// sessions it records in, or the first of the two errors.
func (k *Kernel) judgeAndBegin(ctx context.Context, c Call, tool *Tool, in any, rec *Record, remember bool) (*Invocation, *workflow.Session, []pair, error) {
	inv, recorder, err := k.checkClaims(ctx, c, tool, in, rec, remember)
	if err != nil {
		return nil, nil, nil, err
	}
	pairs, err := k.begin(ctx, tool, inv, recorder, rec)
	if err != nil {
		return nil, nil, nil, err
	}
	return inv, recorder, pairs, nil
}

// errJudgeAgain is checkClaims' and begin's error when claims judged on a
// remembered header (see checkClaims) do not stand as judged: nothing was
// decided or written, and the claims are judged again on a read.
var errJudgeAgain = errors.New("kernel: judge the claims again on a read")

// checkClaims resolves the call's project and judges every session it
// names, reading each distinct id once: the business session_id (which
// authorizes the call and may supply the project) and the
// recording_session_id (provenance only). It sets the record's project and
// binding and returns the invocation and the verified recorder.
//
// With remember, a mutating call naming one session, whose started event
// commits before its handler runs, is judged on the header the ledger
// last read or wrote for it, without a read (workflow.RememberedClaim);
// its started commit then fails unless that header is still the stored
// one, and begin returns errJudgeAgain. A refusal is never decided on a
// remembered header: checkClaims returns errJudgeAgain instead.
func (k *Kernel) checkClaims(ctx context.Context, c Call, tool *Tool, in any, rec *Record, remember bool) (*Invocation, *workflow.Session, error) {
	inv := &Invocation{ID: rec.InvocationID, Tool: tool.Name, Principal: c.Principal, Window: c.ClientWindow, progress: c.Progress}
	fp := c.Principal.AuthorityFingerprint()
	var projectID, businessID string
	if ps, ok := in.(ProjectScoped); ok {
		projectID = ps.ProjectID()
	}
	if ss, ok := in.(SessionScoped); ok {
		businessID = ss.BusinessSessionID()
		rec.BusinessSessionID = boundedClaim(businessID)
	}
	if tool.Session == SessionRequired && businessID == "" {
		return nil, nil, failure.New(failure.InvalidArguments, "session_id is required")
	}

	// Each distinct id is read once; every check of it judges that read.
	remember = remember && tool.Mutates && !tool.PreparesBeforeEffect &&
		(businessID == "" || c.RecordingSessionID == "" || businessID == c.RecordingSessionID)
	readClaim := func(id string) workflow.Claim {
		// A caller already gone is told so by the read, as without one.
		if remember && ctx.Err() == nil {
			if cl, ok := k.sessions.RememberedClaim(id); ok {
				inv.claimed, inv.claimedIn = cl.Remembered(), id
				return cl
			}
		}
		return k.sessions.ReadClaim(ctx, id)
	}
	var business, recorder workflow.Claim
	if businessID != "" {
		business = readClaim(businessID)
	}
	switch {
	case c.RecordingSessionID == "":
	case c.RecordingSessionID == businessID:
		recorder = business
	default:
		recorder = readClaim(c.RecordingSessionID)
	}
	if (business.Err() != nil || recorder.Err() != nil) && ctx.Err() != nil {
		// The caller went away during the read: that says nothing about
		// the claim, which stays unchecked.
		return nil, nil, failure.New(failure.NotStarted, "the call was cancelled by its caller before it ran; nothing was done")
	}
	if businessID == "" && c.RecordingSessionID == "" {
		rec.Binding = sessionless
	}

	resolve := func(id string) error {
		p, err := k.projects.Get(ctx, id)
		if err != nil {
			return err
		}
		if p.Runner != "" && !tool.Runners {
			return failure.New(failure.Unavailable, "project %s is served by runner %s: %s does not run through runners yet", p.ID, p.Runner, tool.Name)
		}
		inv.Project, inv.HasProject = p, true
		rec.Project = p.ID
		return nil
	}
	if projectID != "" {
		if err := resolve(projectID); err != nil {
			return nil, nil, err
		}
	}
	var subject workflow.ClaimVerdict
	if businessID != "" {
		v := business.Check(workflow.Check{Fingerprint: fp, Project: projectID, Mutate: tool.Mutates, Write: tool.Writes})
		subject = v
		if !v.Verified() && business.Remembered() != "" {
			return nil, nil, errJudgeAgain
		}
		if !v.Verified() {
			rec.Binding = k.bind(rec, v)
			err := v.Error()
			if failure.Is(err, failure.SessionGuardDenied) {
				k.recordDenial(ctx, inv, businessID)
			}
			return nil, nil, err
		}
		s := v.Claim.Session
		inv.Session = &s
		if projectID == "" {
			projectID = s.Project
			if err := resolve(projectID); err != nil {
				return nil, nil, err
			}
		}
	}
	var verified *workflow.Session
	if c.RecordingSessionID != "" {
		v := recorder.Check(workflow.Check{Fingerprint: fp, Project: projectID, Mutate: true})
		subject = v
		if !v.Verified() && recorder.Remembered() != "" {
			return nil, nil, errJudgeAgain
		}
		if !v.Verified() {
			rec.Binding = k.bind(rec, v)
			k.invalidClaims.Add(1)
			k.log.Warn("invalid recorder claim", "tool", tool.Name, "invocation", inv.ID,
				"claimed_session_id", rec.Binding.ClaimedSessionID, "reasons", v.Reasons, "err", recorder.Err())
			return nil, nil, failure.New(v.Kind(), "recording_session_id was refused: %s", v.Reasons[0]).
				WithDetail("session_binding", string(evidence.BindingInvalidClaim)).
				WithDetail("binding_reasons", v.Reasons)
		}
		s := v.Claim.Session
		verified = &s
	}
	if businessID != "" || verified != nil {
		rec.Binding = k.bind(rec, subject)
	}
	return inv, verified, nil
}

// bind is the record's binding for verdict v, keeping the recorder claim.
func (k *Kernel) bind(rec *Record, v workflow.ClaimVerdict) Binding {
	b := bindingOf(v)
	b.ClaimedSessionID = rec.Binding.ClaimedSessionID
	return b
}

// recordDenial records a guard denial as evidence in the guarded session.
func (k *Kernel) recordDenial(ctx context.Context, inv *Invocation, id string) {
	if err := k.sessions.RecordDenial(context.WithoutCancel(ctx), id, workflow.Event{
		Kind: workflow.EventGuardDenied, Tool: inv.Tool, InvocationID: inv.ID,
		Role: workflow.RoleBusiness, Outcome: workflow.OutcomeDenied,
		ErrorKind: string(failure.SessionGuardDenied),
	}); err != nil {
		k.recordFailures.Add(1)
		k.log.Warn("record guard denial", "tool", inv.Tool, "err", err)
	}
}

// begin chooses the sessions the call is recorded in and, for a mutating
// tool, makes each one's tool_call_started durable before the tool runs.
func (k *Kernel) begin(ctx context.Context, tool *Tool, inv *Invocation, recorder *workflow.Session, rec *Record) ([]pair, error) {
	if recorder != nil {
		inv.recorder = recorder.ID
	}
	pairs := k.pairs(inv, recorder)
	claimedPair := false
	for _, p := range pairs {
		inv.recordIn = append(inv.recordIn, p.session)
		claimedPair = claimedPair || p.session == inv.claimedIn
	}
	if inv.claimed != "" && (!claimedPair || !tool.Mutates || tool.PreparesBeforeEffect) {
		// No started commit of that session would confirm the
		// remembered header the claims were judged on.
		return nil, errJudgeAgain
	}
	if tool.Mutates && len(pairs) > 0 {
		if tool.PreparesBeforeEffect {
			// The handler prepares while the started events commit, and
			// waits for them in BeforeEffect; startedWait waits after it.
			inv.started = make(chan struct{})
			go func() {
				if err := k.appendStarted(context.WithoutCancel(ctx), inv, pairs, rec.At); err != nil {
					inv.startErr = errStartedNotRecorded(err)
				}
				close(inv.started)
			}()
			return pairs, nil
		}
		if err := k.appendStarted(context.WithoutCancel(ctx), inv, pairs, rec.At); err != nil {
			if errors.Is(err, workflow.ErrClaimChanged) {
				return nil, errJudgeAgain
			}
			k.recordFailures.Add(1)
			return nil, errStartedNotRecorded(err)
		}
		for i := range pairs {
			pairs[i].started = true
		}
	}
	return pairs, nil
}

func errStartedNotRecorded(err error) error {
	return failure.Wrap(failure.Unavailable, err, "could not record tool_call_started; the tool did not run")
}

// startedWait waits, after the handler of a tool that prepares before its
// effect returned, for its started commit, and returns that commit's
// error (the handler, told the same by BeforeEffect, changed nothing).
func (k *Kernel) startedWait(inv *Invocation, pairs []pair) error {
	if inv.started == nil {
		return nil
	}
	<-inv.started
	if inv.startErr != nil {
		k.recordFailures.Add(1)
		return inv.startErr
	}
	for i := range pairs {
		pairs[i].started = true
	}
	return nil
}

// execute runs the handler, cancelled if the kernel is force-stopped; an
// error of a call cut off that way is Interrupted.
func (k *Kernel) execute(ctx context.Context, tool *Tool, inv *Invocation, in any) (out any, runErr error, interrupted bool) {
	runCtx, cancel := context.WithCancel(ctx)
	stopWatch := context.AfterFunc(k.stop, cancel)
	out, runErr = k.run(runCtx, tool, inv, in)
	stopWatch()
	cancel()
	if runErr != nil && k.stop.Err() != nil {
		k.interrupted.Add(1)
		return out, failure.Wrap(failure.Interrupted, runErr, "server shut down while the call was running; its outcome is unknown"), true
	}
	return out, runErr, false
}

// finish records each session's tool_call_finished (and the session the
// call itself created, if any) and the call's evidence record: in the
// transaction of the first session's finish when an Outbox is set, else
// (or when that write fails) through the evidence sink. A mutating call's
// finish is durable when finish returns; a read-only call's is queued
// behind the response (workflow.CallWrite.Behind).
func (k *Kernel) finish(ctx context.Context, tool *Tool, inv *Invocation, pairs []pair, runErr error, interrupted, cancelled bool, rec *Record, res *Result) {
	observed, changed, facts, adopted := inv.effects()
	if adopted != nil {
		pairs = append(pairs, pair{session: adopted.ID, role: workflow.RoleBusiness, callID: newID("call_")})
	}
	// The event's duration is the record's, sealed once (seal runs first).
	finished := workflow.Event{
		Tool: tool.Name, InvocationID: inv.ID, Outcome: workflow.OutcomeOK,
		DurationMS: rec.Duration.Milliseconds(), Facts: facts, ChangedPaths: changed,
	}
	switch {
	case cancelled:
		finished.Outcome = workflow.OutcomeCancelled
		finished.ErrorKind = string(failure.Cancelled)
	case runErr == nil:
		finished.ObservedPaths = observed
		finished.Replayed, finished.ReplayOf = rec.ReplayOf != "", rec.ReplayOf
	default:
		finished.Outcome = workflow.OutcomeFailed
		if interrupted {
			finished.Outcome = workflow.OutcomeInterrupted
		}
		finished.ErrorKind = string(failure.KindOf(runErr))
	}
	if len(pairs) == 0 {
		k.writeEvidence(ctx, *rec, res)
		return
	}
	var outbox []byte
	if k.outbox != nil {
		b, err := k.outbox.Encode(*rec)
		if err != nil {
			k.log.Warn("evidence record not encoded for the outbox", "tool", tool.Name, "invocation", inv.ID, "err", err)
		} else {
			outbox = b
		}
	}
	// The record goes with the first pair's events; when that write fails
	// it goes to the evidence sink instead, so it is never lost nor
	// written twice.
	if !tool.Mutates {
		r := *rec
		k.appendBehind(ctx, inv, pairs, finished, rec.At, outbox, func(first bool, err error) {
			k.finishFailed(inv, err)
			if first && outbox != nil {
				// From the writer's goroutine, which must not wait on
				// another write.
				go k.writeEvidence(context.WithoutCancel(ctx), r, nil)
			}
		})
		if outbox == nil {
			k.writeEvidence(ctx, r, res)
		}
		return
	}
	errs := k.appendFinished(context.WithoutCancel(ctx), inv, pairs, finished, rec.At, outbox)
	for i, err := range errs {
		if err != nil {
			k.finishFailed(inv, err)
		}
		if i == 0 && outbox != nil && err != nil {
			k.writeEvidence(ctx, *rec, res)
		}
	}
	if outbox == nil {
		k.writeEvidence(ctx, *rec, res)
	} else if errs[0] == nil {
		k.outbox.Stored()
	}
}

// finishFailed counts and logs a tool_call_finished write that failed.
func (k *Kernel) finishFailed(inv *Invocation, err error) {
	k.recordFailures.Add(1)
	k.log.Warn("record tool_call_finished", "tool", inv.Tool, "invocation", inv.ID, "err", err)
}

// outcome is the call's Result and the record's outcome.
func (k *Kernel) outcome(tool *Tool, inv *Invocation, out any, runErr error, interrupted, cancelled bool, rec *Record) Result {
	var res Result
	switch {
	case cancelled:
		rec.Outcome = evidence.OutcomeUnknown
		res = failed(failure.New(failure.Cancelled, "the call was cancelled by its caller; its outcome is unknown"), tool.Mutates)
	case runErr == nil:
		rec.Outcome = evidence.OutcomeOK
		res = Result{Success: true, Output: out}
		if r, ok := out.(Replayer); ok {
			if rep := r.Replay(); rep.Replayed() {
				rec.ReplayOf, res.ReplayOf = rep.Of, rep.Of
			}
		}
	case interrupted:
		rec.Outcome = evidence.OutcomeUnknown
		res = failed(runErr, tool.Mutates)
	default:
		rec.Outcome = evidence.OutcomeFailed
		if failure.KindOf(runErr) == failure.Internal {
			k.log.Error("tool failed", "tool", tool.Name, "invocation", inv.ID, "err", runErr)
		}
		res = failed(runErr, false)
	}
	_, res.ChangedPaths, _, _ = inv.effects()
	res.DryRun = inv.isDryRun()
	return res
}

func (k *Kernel) run(ctx context.Context, t *Tool, inv *Invocation, in any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			k.log.Error("tool panicked", "tool", t.Name, "panic", p)
			err = errors.New("tool panicked")
		}
	}()
	out, err = t.run(ctx, inv, in)
	if r, ok := out.(Replayer); ok && err == nil {
		// A replay the ledger could not store as it is fails the call (a
		// replay changed nothing) rather than being recorded as a new
		// effect or with a cut pointer.
		if cerr := r.Replay().Check(); cerr != nil {
			err = failure.Wrap(failure.Internal, cerr, "the call's replay could not be recorded")
		}
	}
	return out, err
}

type pair struct {
	session string
	role    workflow.Role
	callID  string
	// started is true once tool_call_started is durable for this pair.
	started bool
}

// pairs are the event pairs of a call: the verified recorder's and the
// authorized active business session's. When both name the same session
// the call is one invocation there, recorded once by its business pair.
func (k *Kernel) pairs(inv *Invocation, recorder *workflow.Session) []pair {
	var ps []pair
	business := inv.Session != nil && inv.Session.Mutable()
	if recorder != nil && !(business && recorder.ID == inv.Session.ID) {
		ps = append(ps, pair{session: recorder.ID, role: workflow.RoleRecorder, callID: newID("call_")})
	}
	if business {
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
	return forEachPair(ps, func(_ int, p pair) error {
		claimed := ""
		if p.session == inv.claimedIn {
			claimed = inv.claimed
		}
		return k.sessions.StartCall(ctx, p.session, claimed, k.startedEvent(p, inv, at))
	})
}

// finishedEvents are the events session p records at the end of the
// call: its tool_call_finished, preceded by its tool_call_started when that
// was not written before the call (read-only tools, whose effect a crash
// cannot leave unexplained, and sessions the call itself created), and
// followed by the call's attachments for that session.
func (k *Kernel) finishedEvents(inv *Invocation, ps []pair, p pair, fin workflow.Event, at time.Time) []workflow.Event {
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
	return evs
}

// appendFinished durably records each session's finished events, the
// first one's with the outbox row (nil: none), and returns each pair's
// error.
func (k *Kernel) appendFinished(ctx context.Context, inv *Invocation, ps []pair, fin workflow.Event, at time.Time, outbox []byte) []error {
	errs := make([]error, len(ps))
	forEachPair(ps, func(i int, p pair) error {
		w := workflow.CallWrite{}
		if i == 0 {
			w.Outbox = outbox
		}
		errs[i] = k.sessions.FinishCall(ctx, p.session, at, w, k.finishedEvents(inv, ps, p, fin, at)...)
		return errs[i]
	})
	return errs
}

// appendBehind queues each session's finished events of a read-only call
// behind the response, in order, the first with the outbox row (the
// journal's pump is woken once it commits); failed is called (from the
// store's writer when the commit fails) for each write that fails, first
// true for the first pair's.
func (k *Kernel) appendBehind(ctx context.Context, inv *Invocation, ps []pair, fin workflow.Event, at time.Time, outbox []byte, failed func(first bool, err error)) {
	for i, p := range ps {
		w := workflow.CallWrite{Behind: true}
		if i == 0 {
			w.Outbox = outbox
		}
		w.Done = func(err error) {
			switch {
			case err != nil:
				failed(i == 0, err)
			case w.Outbox != nil:
				k.outbox.Stored() // committed: the journal's pump can take it
			}
		}
		if err := k.sessions.FinishCall(context.WithoutCancel(ctx), p.session, at, w, k.finishedEvents(inv, ps, p, fin, at)...); err != nil {
			failed(i == 0, err)
		}
	}
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

func forEachPair(ps []pair, fn func(int, pair) error) error {
	if len(ps) == 1 {
		return fn(0, ps[0])
	}
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(i, p) }()
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
