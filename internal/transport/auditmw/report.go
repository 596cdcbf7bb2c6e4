package auditmw

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

// report is what the transport serving an audited request tells the
// middleware about it, through the request context: the final ToolResult
// facts of a tool call, or the surface of an MCP tools/list.
type report struct {
	start time.Time

	mu         sync.Mutex
	ergonomics *audit.ModelErgonomics
	surface    *audit.ToolSurface
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

// ReportTool finalizes the model_ergonomics of the audited request's tool
// call from its final ToolResult: res as the kernel (or the transport's
// own envelope check) returned it, and final, the exact JSON of the
// {success, output, error} object the model receives. A request that is
// not audited ignores it. The last report of a request wins.
func ReportTool(ctx context.Context, t *kernel.Tool, res kernel.Result, final []byte) {
	r := reportFrom(ctx)
	if r == nil || t == nil {
		return
	}
	m := Ergonomics(t, res, final)
	if res.Duration == 0 {
		// Rejected before the kernel's timer: the transport's own.
		m.DurationMS = time.Since(r.start).Milliseconds()
	}
	r.mu.Lock()
	r.ergonomics = &m
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

func (r *report) get() (*audit.ModelErgonomics, *audit.ToolSurface) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ergonomics, r.surface
}

// resultFacts are the structured ToolResult members classification reads.
type resultFacts struct {
	Output struct {
		FailureKind  string `json:"failure_kind"`
		RecoveryKind string `json:"recovery_kind"`
		StateChanged bool   `json:"state_changed"`
		ConflictKind string `json:"conflict_kind"`
		DryRun       bool   `json:"dry_run"`
		ChangedPaths []any  `json:"changed_paths"`
		Changed      *bool  `json:"changed"`
	} `json:"output"`
}

// Ergonomics classifies one tool call from structured ToolResult fields
// only (never from error prose). SerializedResultBytes is len(final), or
// null when the call was refused before a result existed.
func Ergonomics(t *kernel.Tool, res kernel.Result, final []byte) audit.ModelErgonomics {
	m := audit.ModelErgonomics{
		ToolName: t.Name, ToolCategory: t.Category, Success: res.Success,
		DurationMS: res.Duration.Milliseconds(), EditSurface: t.EditSurface,
	}
	if !res.Refused {
		n := int64(len(final))
		m.SerializedResultBytes = &n
	}
	var facts resultFacts
	if !res.Success || t.EditSurface != "" {
		if final == nil {
			final, _ = json.Marshal(res)
		}
		json.Unmarshal(final, &facts) // absent members stay zero
	}
	out := facts.Output
	if res.Error != nil {
		m.ErrorKind = string(res.Error.Kind)
		m.FailureKind, m.RecoveryKind = out.FailureKind, out.RecoveryKind
	}
	switch {
	case res.Success:
		m.ExecutionState = audit.ExecCompleted
	case out.FailureKind == "outcome_unknown":
		m.ExecutionState = audit.ExecOutcomeUnknown
	case res.Refused || !out.StateChanged && noEffect(out.FailureKind):
		m.ExecutionState = audit.ExecNotStarted
	default:
		m.ExecutionState = audit.ExecFailed
	}
	if t.EditSurface != "" {
		m.EditOutcome = editOutcome(res, m.ExecutionState, out.DryRun, len(out.ChangedPaths) > 0 || out.Changed != nil && *out.Changed)
		if m.ErrorKind == string(failure.EditConflict) {
			m.EditConflictKind = out.ConflictKind
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

// MaxSurfaceCapture bounds the response bytes kept to measure an MCP
// tools/list result; a larger result keeps the sizes the MCP server
// measured before the SDK added its response metadata.
const MaxSurfaceCapture = 4 << 20

// measureSurface finalizes s from the tools/list response as sent: the
// JSON-RPC result object of body (application/json, or the data lines of
// an event stream). It reports false when body holds no such result.
func measureSurface(s *audit.ToolSurface, contentType string, body []byte) bool {
	result, ok := rpcResult(contentType, body)
	if !ok {
		return false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil {
		return false
	}
	var tools []json.RawMessage
	if json.Unmarshal(members["tools"], &tools) != nil {
		return false
	}
	s.ToolCount = len(tools)
	s.SerializedToolsBytes = int64(len(members["tools"]))
	s.SerializedResultBytes = int64(len(result))
	return true
}

// rpcResult returns the raw result member of the one JSON-RPC response in
// body.
func rpcResult(contentType string, body []byte) (json.RawMessage, bool) {
	var msgs [][]byte
	if strings.HasPrefix(contentType, "text/event-stream") {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				msgs = append(msgs, bytes.TrimSpace(data))
			}
		}
	} else {
		msgs = [][]byte{body}
	}
	for _, m := range msgs {
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &msg) == nil && len(msg.Result) > 0 {
			return msg.Result, true
		}
	}
	return nil, false
}
