package auditmw

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

func TestErgonomicsClassification(t *testing.T) {
	plain := &kernel.Tool{Name: "run_process", Category: "exec"}
	edit := &kernel.Tool{Name: "apply_text_edits", Category: "edit", EditSurface: kernel.EditCanonical}
	failedWith := func(err *failure.Error, changed bool) kernel.Result {
		r := kernel.Failure(err)
		r.Refused = false
		r.StateChanged = changed
		return r
	}
	ok := func(out any) kernel.Result {
		r := kernel.Result{Success: true, Output: out, Duration: 1500 * time.Millisecond, Body: []byte(`{"success":true,"output":{}}`)}
		if m, isMap := out.(map[string]any); isMap {
			// The typed facts the kernel keeps beside the output.
			r.DryRun, _ = m["dry_run"].(bool)
			r.ChangedPaths, _ = m["changed_paths"].([]string)
		}
		return r
	}
	cases := []struct {
		name string
		tool *kernel.Tool
		res  kernel.Result
		want audit.ModelErgonomics // SerializedResultBytes: nil means null
		null bool
	}{
		{"success", plain, ok(map[string]any{"exit_code": 0}),
			audit.ModelErgonomics{Success: true, DurationMS: 1500, ExecutionState: audit.ExecCompleted}, false},
		{"refused", plain, kernel.Failure(failure.New(failure.InsufficientScope, "no")),
			audit.ModelErgonomics{ErrorKind: "insufficient_scope", FailureKind: "permission_denied", RecoveryKind: "request_permission", ExecutionState: audit.ExecNotStarted}, true},
		{"ran and failed", plain, failedWith(failure.New(failure.CommandFailed, "exit 1"), true),
			audit.ModelErgonomics{ErrorKind: "command_failed", FailureKind: "command_failed", RecoveryKind: "inspect_output", ExecutionState: audit.ExecFailed}, false},
		{"interrupted", plain, failedWith(failure.New(failure.Interrupted, "shutdown"), false),
			audit.ModelErgonomics{ErrorKind: "interrupted", FailureKind: "outcome_unknown", RecoveryKind: "inspect_state", ExecutionState: audit.ExecOutcomeUnknown}, false},
		{"edit applied", edit, ok(map[string]any{"dry_run": false, "changed_paths": []string{"a"}}),
			audit.ModelErgonomics{Success: true, DurationMS: 1500, ExecutionState: audit.ExecCompleted, EditSurface: "canonical", EditOutcome: audit.EditApplied}, false},
		{"edit dry run", edit, ok(map[string]any{"dry_run": true, "changed_paths": []string{"a"}}),
			audit.ModelErgonomics{Success: true, DurationMS: 1500, ExecutionState: audit.ExecCompleted, EditSurface: "canonical", EditOutcome: audit.EditDryRun}, false},
		{"edit unchanged", edit, ok(map[string]any{"dry_run": false, "changed_paths": []string{}}),
			audit.ModelErgonomics{Success: true, DurationMS: 1500, ExecutionState: audit.ExecCompleted, EditSurface: "canonical", EditOutcome: audit.EditUnchanged}, false},
		{"edit conflict", edit, failedWith(failure.New(failure.EditConflict, "x").WithDetail("conflict_kind", "multiple_matches"), false),
			audit.ModelErgonomics{ErrorKind: "edit_conflict", FailureKind: "stale_precondition", RecoveryKind: "reread_and_retry",
				ExecutionState: audit.ExecNotStarted, EditSurface: "canonical", EditOutcome: audit.EditConflict, EditConflictKind: "multiple_matches"}, false},
		{"edit conflict kind outside the allowlist", edit, failedWith(failure.New(failure.EditConflict, "x").WithDetail("conflict_kind", "the file at /home/u/secret moved"), false),
			audit.ModelErgonomics{ErrorKind: "edit_conflict", FailureKind: "stale_precondition", RecoveryKind: "reread_and_retry",
				ExecutionState: audit.ExecNotStarted, EditSurface: "canonical", EditOutcome: audit.EditConflict}, false},
		{"edit write failed after starting", edit, failedWith(failure.New(failure.OperationFailed, "disk"), true),
			audit.ModelErgonomics{ErrorKind: "operation_failed", FailureKind: "operation_failed", RecoveryKind: "inspect_error",
				ExecutionState: audit.ExecFailed, EditSurface: "canonical", EditOutcome: audit.EditFailed}, false},
		{"edit interrupted", edit, failedWith(failure.New(failure.OutcomeUnknown, "lost"), false),
			audit.ModelErgonomics{ErrorKind: "outcome_unknown", FailureKind: "outcome_unknown", RecoveryKind: "inspect_state",
				ExecutionState: audit.ExecOutcomeUnknown, EditSurface: "canonical", EditOutcome: audit.EditUncertain}, false},
	}
	for _, c := range cases {
		got := Ergonomics(c.tool, c.res)
		want := c.want
		want.SchemaVersion, want.ToolName, want.ToolCategory = audit.ErgonomicsSchemaVersion, c.tool.Name, c.tool.Category
		if !c.null {
			n := int64(len(c.res.Body))
			want.SerializedResultBytes = &n
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, gb, wb)
		}
	}
}

func TestNormalizedDropsProse(t *testing.T) {
	m := audit.ModelErgonomics{ToolName: "read_files", ErrorKind: "could not open /etc/passwd", FailureKind: "x_y",
		RecoveryKind: "UPPER", ExecutionState: "weird", EditSurface: "other", EditOutcome: "applied", EditConflictKind: "sha256_mismatch"}.Normalized()
	if m.ErrorKind != "" || m.FailureKind != "x_y" || m.RecoveryKind != "" || m.ExecutionState != audit.ExecFailed ||
		m.EditSurface != "" || m.EditOutcome != "" || m.EditConflictKind != "" || m.SchemaVersion != 6 {
		t.Fatalf("normalized: %+v", m)
	}
}
