package auditmw

import (
	"context"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

// report is what the transport serving an audited request tells the
// middleware about it, through the request context. The middleware never
// reads the request body or the response to learn these facts.
type report struct {
	start time.Time

	mu sync.Mutex
	// method is the MCP method the SDK dispatched (methodSeen when the SDK
	// reported one); rpcFailed is true when it answered a JSON-RPC error.
	method     string
	methodSeen bool
	rpcFailed  bool
	// name is the tool name as the transport dispatched it.
	name string
	// tool facts from the kernel's Result (toolSeen when reported).
	toolSeen   bool
	success    bool
	project    string
	ergonomics *audit.ModelErgonomics
	surface    *audit.ToolSurface
	window     *audit.WindowFacts
}

type reportKey struct{}

func withReport(ctx context.Context, start time.Time) (context.Context, *report) {
	r := &report{start: start}
	return context.WithValue(ctx, reportKey{}, r), r
}

func reportFrom(ctx context.Context) *report {
	r, _ := ctx.Value(reportKey{}).(*report)
	return r
}

// ReportMethod records the MCP method the SDK dispatched for the audited
// request (from a receiving middleware, after the method returned), the
// tool name it dispatched for a tools/call ("" otherwise), and whether the
// answer was a JSON-RPC error. A method named notifications/... is a
// notification: it executes nothing and gets no audit row. A request that
// is not audited ignores it.
func ReportMethod(ctx context.Context, method, tool string, rpcFailed bool) {
	r := reportFrom(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.method, r.methodSeen, r.rpcFailed = method, true, rpcFailed
	if tool != "" {
		r.name = tool
	}
}

// ReportName records the tool name a REST request dispatched (from the
// transport's own decoding of its envelope).
func ReportName(ctx context.Context, tool string) {
	r := reportFrom(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	r.name = tool
	r.mu.Unlock()
}

// ReportTool records the outcome of the audited request's tool call from
// res, the kernel's Result (or kernel.Failure for the transport's own
// envelope check): success, the project it resolved (res.Project) and,
// when t (the registered tool) is known, its model_ergonomics, whose
// serialized_result_bytes is len(res.Body). A request that is not audited
// ignores it. The last report of a request wins.
func ReportTool(ctx context.Context, t *kernel.Tool, res kernel.Result) {
	r := reportFrom(ctx)
	if r == nil {
		return
	}
	var m *audit.ModelErgonomics
	if t != nil {
		e := Ergonomics(t, res)
		if res.Duration == 0 {
			// Rejected before the kernel's timer: the transport's own.
			e.DurationMS = time.Since(r.start).Milliseconds()
		}
		m = &e
	}
	r.mu.Lock()
	r.toolSeen, r.success, r.project, r.ergonomics = true, res.Success, res.Project, m
	if t != nil {
		r.name = t.Name
	}
	r.mu.Unlock()
}

// ReportToolsList records the surface of the audited request's MCP
// tools/list result. A request that is not audited ignores it.
func ReportToolsList(ctx context.Context, s audit.ToolSurface) {
	r := reportFrom(ctx)
	if r == nil {
		return
	}
	s.SchemaVersion = audit.ToolSurfaceSchemaVersion
	r.mu.Lock()
	r.surface = &s
	r.mu.Unlock()
}

// ReportWindow records the window facts of the audited request's MCP tool
// call (the middleware adds the request's millisecond times). A request
// that is not audited ignores it. The last report of a request wins.
func ReportWindow(ctx context.Context, w audit.WindowFacts) {
	r := reportFrom(ctx)
	if r == nil {
		return
	}
	r.mu.Lock()
	r.window = &w
	r.mu.Unlock()
}

// facts is a copy of a report, read after the handler returned.
type facts struct {
	method              string
	methodSeen, failed  bool
	name, project       string
	toolSeen, succeeded bool
	ergonomics          *audit.ModelErgonomics
	surface             *audit.ToolSurface
	window              *audit.WindowFacts
}

func (r *report) get() facts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return facts{
		method: r.method, methodSeen: r.methodSeen, failed: r.rpcFailed,
		name: r.name, project: r.project, toolSeen: r.toolSeen, succeeded: r.success,
		ergonomics: r.ergonomics, surface: r.surface, window: r.window,
	}
}

// Ergonomics classifies one tool call from the kernel's typed Result facts
// only (never from error prose or the serialized result).
// SerializedResultBytes is len(res.Body), the {success, output, error}
// bytes the model receives, or null when the call was refused before a
// result existed.
func Ergonomics(t *kernel.Tool, res kernel.Result) audit.ModelErgonomics {
	m := audit.ModelErgonomics{
		ToolName: t.Name, ToolCategory: t.Category, Success: res.Success,
		DurationMS: res.Duration.Milliseconds(), EditSurface: t.EditSurface,
	}
	if !res.Refused {
		n := int64(len(res.Body))
		m.SerializedResultBytes = &n
	}
	if res.Error != nil {
		m.ErrorKind = string(res.Error.Kind)
		m.FailureKind, m.RecoveryKind = res.FailureKind, res.RecoveryKind
	}
	switch {
	case res.Success:
		m.ExecutionState = audit.ExecCompleted
	case res.FailureKind == "outcome_unknown":
		m.ExecutionState = audit.ExecOutcomeUnknown
	case res.Refused || !res.StateChanged && noEffect(res.FailureKind):
		m.ExecutionState = audit.ExecNotStarted
	default:
		m.ExecutionState = audit.ExecFailed
	}
	if t.EditSurface != "" {
		m.EditOutcome = editOutcome(res, m.ExecutionState, res.DryRun, len(res.ChangedPaths) > 0)
		if m.ErrorKind == string(failure.EditConflict) {
			m.EditConflictKind = res.ConflictKind
		}
	}
	return m.Normalized()
}

// noEffect reports whether a failure of this failure_kind is, by the
// kernel's contract, reported only when nothing was changed.
func noEffect(failureKind string) bool {
	switch failureKind {
	case "invalid_arguments", "permission_denied", "not_started", "stale_precondition", "capability_unavailable":
		return true
	}
	return false
}

func editOutcome(res kernel.Result, state string, dryRun, changed bool) string {
	switch {
	case res.Success && dryRun:
		return audit.EditDryRun
	case res.Success && changed:
		return audit.EditApplied
	case res.Success:
		return audit.EditUnchanged
	case res.Error != nil && res.Error.Kind == failure.EditConflict:
		return audit.EditConflict
	case state == audit.ExecOutcomeUnknown:
		return audit.EditUncertain
	case state == audit.ExecNotStarted:
		return audit.EditRejected
	}
	return audit.EditFailed
}
