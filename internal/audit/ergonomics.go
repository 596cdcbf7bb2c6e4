package audit

import (
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/redact"
)

// Schema versions of the telemetry objects stored in an event's summary.
const (
	// ErgonomicsSchemaVersion is summary.model_ergonomics.schema_version.
	ErgonomicsSchemaVersion = 6
	// ToolSurfaceSchemaVersion is summary.tool_surface.schema_version.
	ToolSurfaceSchemaVersion = 1
	// MaxKindChars bounds every kind-like label (tool name, category and
	// the error, failure and recovery kinds); longer labels are dropped.
	MaxKindChars = 64
)

// Summary keys of the telemetry objects.
const (
	SummaryErgonomics  = "model_ergonomics"
	SummaryToolSurface = "tool_surface"
)

// Execution states: the closed set of model_ergonomics.execution_state.
const (
	// ExecCompleted: the tool ran and succeeded.
	ExecCompleted = "completed"
	// ExecNotStarted: the call failed without any effect (a pre-result
	// rejection, or a failure the tool reports as having changed nothing
	// before it could start, such as a conflict or a missing session).
	ExecNotStarted = "not_started"
	// ExecFailed: the tool ran and failed (state may have changed).
	ExecFailed = "failed"
	// ExecOutcomeUnknown: whether the tool had its effect is unknown
	// (interrupted, cancelled, lost).
	ExecOutcomeUnknown = "outcome_unknown"
)

// Edit outcomes: the closed set of model_ergonomics.edit_outcome.
const (
	EditApplied   = "applied"   // files were changed
	EditUnchanged = "unchanged" // succeeded, every file already held the bytes
	EditDryRun    = "dry_run"   // planned only
	EditConflict  = "conflict"  // a fence or match conflict; nothing written
	EditRejected  = "rejected"  // definite rejection before any write
	EditFailed    = "failed"    // failed after starting
	EditUncertain = "uncertain" // outcome unknown
)

// Edit surfaces: the closed set of model_ergonomics.edit_surface.
const (
	SurfaceCanonical = "canonical"
	SurfaceAdvanced  = "advanced"
)

var (
	execStates   = []string{ExecCompleted, ExecNotStarted, ExecFailed, ExecOutcomeUnknown}
	editOutcomes = []string{EditApplied, EditUnchanged, EditDryRun, EditConflict, EditRejected, EditFailed, EditUncertain}
	editSurfaces = []string{SurfaceCanonical, SurfaceAdvanced}
	// EditConflictKinds is the closed allowlist of edit_conflict_kind.
	EditConflictKinds = []string{"multiple_matches", "match_not_found", "occurrence_out_of_range", "overlapping_edits", "sha256_mismatch"}
)

// ModelErgonomics is summary.model_ergonomics: low-cardinality facts about
// one model-visible tool call, finalized by the transport from the final
// ToolResult. It holds no arguments, paths, commands, contents, prose or
// identities — only names from closed sets and numbers.
type ModelErgonomics struct {
	SchemaVersion int    `json:"schema_version"`
	ToolName      string `json:"tool_name"`
	ToolCategory  string `json:"tool_category"`
	Success       bool   `json:"success"`
	DurationMS    int64  `json:"duration_ms"`
	// SerializedResultBytes is the exact UTF-8 length of the final
	// {success, output, error} JSON; nil for a pre-result rejection.
	SerializedResultBytes *int64 `json:"serialized_result_bytes"`
	ErrorKind             string `json:"error_kind,omitempty"`
	FailureKind           string `json:"failure_kind,omitempty"`
	RecoveryKind          string `json:"recovery_kind,omitempty"`
	ExecutionState        string `json:"execution_state"`
	EditSurface           string `json:"edit_surface,omitempty"`
	EditOutcome           string `json:"edit_outcome,omitempty"`
	EditConflictKind      string `json:"edit_conflict_kind,omitempty"`
}

// Normalized returns m with its schema version set and every label outside
// its closed set or label shape removed (an unknown execution state
// becomes failed): nothing arbitrary reaches the durable record.
func (m ModelErgonomics) Normalized() ModelErgonomics {
	m.SchemaVersion = ErgonomicsSchemaVersion
	for _, p := range []*string{&m.ToolName, &m.ToolCategory, &m.ErrorKind, &m.FailureKind, &m.RecoveryKind} {
		if !isLabel(*p) {
			*p = ""
		}
	}
	if !slices.Contains(execStates, m.ExecutionState) {
		m.ExecutionState = ExecFailed
	}
	if !slices.Contains(editSurfaces, m.EditSurface) {
		m.EditSurface, m.EditOutcome, m.EditConflictKind = "", "", ""
	}
	if !slices.Contains(editOutcomes, m.EditOutcome) {
		m.EditOutcome = ""
	}
	if !slices.Contains(EditConflictKinds, m.EditConflictKind) {
		m.EditConflictKind = ""
	}
	if m.DurationMS < 0 {
		m.DurationMS = 0
	}
	return m
}

// sanitized is the write-time form of m: normalized (closed sets and
// label shapes only) and every string redacted, like any summary string.
// Its keys are fixed, so the generic key checks are not needed.
func (m ModelErgonomics) sanitized() ModelErgonomics {
	m = m.Normalized()
	for _, p := range []*string{&m.ToolName, &m.ToolCategory, &m.ErrorKind, &m.FailureKind, &m.RecoveryKind} {
		*p = redact.String(*p)
	}
	if !closedSetsClean {
		for _, p := range []*string{&m.ExecutionState, &m.EditSurface, &m.EditOutcome, &m.EditConflictKind} {
			*p = redact.String(*p)
		}
	}
	return m
}

// closedSetsClean is true when redaction leaves every member of the closed
// sets unchanged; Normalized keeps only members (or ""), so redacting them
// again is then a no-op that sanitized skips.
var closedSetsClean = func() bool {
	for _, set := range [][]string{execStates, editOutcomes, editSurfaces, EditConflictKinds} {
		for _, v := range set {
			if redact.String(v) != v {
				return false
			}
		}
	}
	return true
}()

// sanitized is the write-time form of s (its one string redacted).
func (s ToolSurface) sanitized() ToolSurface {
	s.SchemaVersion = ToolSurfaceSchemaVersion
	s.ProtocolEra = redact.Bounded(s.ProtocolEra, MaxKindChars)
	return s
}

// ToolSurface is summary.tool_surface of an MCP tools/list row: the size
// of what the caller was shown, never the tools themselves.
type ToolSurface struct {
	SchemaVersion int `json:"schema_version"`
	// ProtocolEra is legacy or stateless_2026.
	ProtocolEra    string `json:"protocol_era"`
	CompactSchemas bool   `json:"compact_schemas"`
	ToolCount      int    `json:"tool_count"`
	// SerializedToolsBytes is the exact JSON length of result.tools;
	// SerializedResultBytes of the whole result object (no JSON-RPC
	// envelope).
	SerializedToolsBytes  int64 `json:"serialized_tools_bytes"`
	SerializedResultBytes int64 `json:"serialized_result_bytes"`
	GatewayToolIncluded   bool  `json:"gateway_tool_included"`
}

// isLabel reports whether s is a snake_case label (lower-case letters,
// digits, '_', '-' and '.'; at most MaxKindChars): the shape of every
// tool name and kind, and never the shape of prose.
func isLabel(s string) bool {
	if s == "" || len(s) > MaxKindChars {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
}
