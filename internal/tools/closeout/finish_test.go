package closeout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// finishResult decodes a full finish_coding_task output.
type finishResult struct {
	Project              string                 `json:"project"`
	SessionID            string                 `json:"session_id"`
	TaskOutcome          closeout.TaskOutcome   `json:"task_outcome"`
	Counts               closeout.Counts        `json:"counts"`
	SuggestedNextActions []string               `json:"suggested_next_actions"`
	Workspace            *closeout.Workspace    `json:"workspace"`
	Changes              *closeout.Changes      `json:"changes"`
	Validation           *closeout.Validation   `json:"validation"`
	ToolFailures         *closeout.ToolFailures `json:"tool_failures"`
	Jobs                 *closeout.Jobs         `json:"jobs"`
	HardBlockers         []string               `json:"hard_blockers"`
	Advisories           []string               `json:"advisories"`
	HandoffBrief         *handoff.HandoffBrief  `json:"handoff_brief"`
}

func (e *env) finish(args map[string]any) (finishResult, []byte) {
	e.T.Helper()
	if args == nil {
		args = map[string]any{}
	}
	if _, ok := args["session_id"]; !ok {
		args["session_id"] = e.id
	}
	res := e.Call(closeout.FinishToolName, args)
	return kerneltest.OK[finishResult](e.T, res), kerneltest.OutputBytes(e.T, res)
}

func (e *env) append(evs ...workflow.Event) {
	e.T.Helper()
	if _, _, err := e.svc.Append(context.Background(), e.id, evs...); err != nil {
		e.T.Fatal(err)
	}
}

func change(path string) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "apply_text_edits", Outcome: workflow.OutcomeOK, ChangedPaths: []string{path}}
}

func failing(ids ...string) workflow.Event {
	return workflow.Event{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: &workflow.Validation{
		Tool: "go_test", ScopeID: scope, Parser: "go_test_json/v1", Passed: 1, Failed: len(ids),
		Failures: ids, FailuresTotal: len(ids), Complete: true,
		Verdict: workflow.VerdictFailed, Expectation: "success", ExitCode: 1,
	}}
}

func passing(resolved ...string) workflow.Event {
	return workflow.Event{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: &workflow.Validation{
		Tool: "go_test", ScopeID: scope, Parser: "go_test_json/v1", Passed: 2, Complete: true, Resolved: resolved,
		Verdict: workflow.VerdictPassed, Expectation: "success", ExpectationMatched: true,
	}}
}

func wantOutcome(t *testing.T, r finishResult, status string, blocking bool, reasons ...string) {
	t.Helper()
	o := r.TaskOutcome
	if o.Status != status || o.Blocking != blocking {
		t.Fatalf("outcome %+v, want %s blocking=%v", o, status, blocking)
	}
	for _, want := range reasons {
		if !slices.Contains(o.Reasons, want) {
			t.Fatalf("reasons %v lack %s", o.Reasons, want)
		}
	}
	if !slices.IsSorted(o.Reasons) {
		t.Fatalf("reasons not sorted: %v", o.Reasons)
	}
}

func TestFreshSessionWarns(t *testing.T) {
	e := newFinishEnv(t)
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusWarn, false, closeout.AdvisoryValidationNotRun, closeout.AdvisoryWorkspaceUnavailable)
	if r.Project != e.Project.ID || r.SessionID != e.id {
		t.Fatalf("header: %+v", r)
	}
	if r.Validation == nil || r.Validation.Status != handoff.ValidationNotRun || r.Validation.HistoricalRuns != 0 {
		t.Fatalf("validation: %+v", r.Validation)
	}
	// Not a git repository: the workspace is unavailable, not guessed.
	if r.Workspace == nil || r.Workspace.Status != closeout.Unavailable || r.Workspace.Dirty != nil {
		t.Fatalf("workspace: %+v", r.Workspace)
	}
	if r.Jobs == nil || r.Jobs.Status != closeout.NotConfigured {
		t.Fatalf("jobs: %+v", r.Jobs)
	}
	if r.Changes == nil || r.Changes.Total != 0 || r.Changes.Items == nil || len(r.HardBlockers) != 0 || r.HardBlockers == nil {
		t.Fatalf("changes %+v blockers %v", r.Changes, r.HardBlockers)
	}
	if r.HandoffBrief == nil || r.HandoffBrief.Version != 1 || r.HandoffBrief.Session.SessionID != e.id {
		t.Fatalf("brief: %+v", r.HandoffBrief)
	}
	if len(r.SuggestedNextActions) == 0 || len(r.SuggestedNextActions) > 5 {
		t.Fatalf("next actions: %v", r.SuggestedNextActions)
	}
}

func TestChangeThenFailingValidationFails(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), failing("example.com/calc.TestAdd", "example.com/calc.TestZero"))
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusFail, true, closeout.BlockerUnresolvedValidationFailure, closeout.AdvisoryNoValidationSinceLastChange)
	if !strings.Contains(r.SuggestedNextActions[0], "example.com/calc.TestAdd") {
		t.Fatalf("first next action does not name the failing test: %v", r.SuggestedNextActions)
	}
	v := r.Validation
	if v.Status != handoff.ValidationFailed || v.UnresolvedN != 2 || v.Unresolved[0].ID != "example.com/calc.TestAdd" || len(v.Current) != 1 ||
		v.Current[0].Verdict != "failed" || !v.Current[0].AfterLastChange {
		t.Fatalf("validation: %+v", v)
	}
	if r.Counts.UnresolvedFailures != 2 || r.Counts.HardBlockers != 1 || r.Counts.ChangedPaths != 1 {
		t.Fatalf("counts: %+v", r.Counts)
	}
	if r.HandoffBrief.Validation.Status != handoff.ValidationFailed || r.HandoffBrief.NextActions[0] != r.SuggestedNextActions[0] {
		t.Fatalf("brief: %+v", r.HandoffBrief)
	}
}

func TestStalePassWarns(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), failing("example.com/calc.TestAdd"), change("calc.go"), passing("example.com/calc.TestAdd"), change("calc_test.go"))
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusWarn, false, closeout.AdvisoryNoValidationSinceLastChange)
	if r.Validation.FreshPassSeq != 0 || r.Validation.Current[0].AfterLastChange || r.Changes.LastChangeSeq <= r.Validation.Current[0].Seq {
		t.Fatalf("validation %+v changes %+v", r.Validation, r.Changes)
	}
	if r.Changes.Total != 2 || r.Changes.Items[0] != "calc_test.go" {
		t.Fatalf("changes newest first: %+v", r.Changes)
	}
	if !slices.Contains(r.SuggestedNextActions, handoff.ActionValidate) {
		t.Fatalf("next actions: %v", r.SuggestedNextActions)
	}
}

func TestFreshPassPasses(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), failing("example.com/calc.TestAdd"), change("calc.go"), passing("example.com/calc.TestAdd"))
	r, first := e.finish(nil)
	wantOutcome(t, r, closeout.StatusPass, false, closeout.ReasonFreshPassingValidation)
	if r.Validation.Status != handoff.ValidationPassed || r.Validation.UnresolvedN != 0 ||
		!slices.Equal(r.Validation.Resolved.Items, []string{"example.com/calc.TestAdd"}) || r.Validation.HistoricalRuns != 2 {
		t.Fatalf("validation: %+v", r.Validation)
	}
	// Deterministic: the closeout's own telemetry does not change it.
	_, second := e.finish(nil)
	if !bytes.Equal(first, second) {
		t.Fatalf("repeated closeout differs:\n%s\n%s", first, second)
	}
	// It never closes the session.
	s, err := e.svc.Get(context.Background(), e.id)
	if err != nil || !s.Mutable() {
		t.Fatalf("session closed by finish: %+v %v", s, err)
	}
}

func TestPassWithoutChanges(t *testing.T) {
	e := newFinishEnv(t)
	e.append(passing())
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusPass, false)
}

func TestEvidenceGapAndBuildFailure(t *testing.T) {
	e := newFinishEnv(t)
	gap := passing()
	gap.Validation.Verdict, gap.Validation.Complete, gap.Validation.Passed = workflow.VerdictEvidenceGap, false, 0
	e.append(change("calc.go"), gap)
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusWarn, false, closeout.AdvisoryEvidenceGap, closeout.AdvisoryNoValidationSinceLastChange)

	// A failed run without identities (a build failure) still blocks.
	build := failing()
	e.append(build)
	r, _ = e.finish(nil)
	wantOutcome(t, r, closeout.StatusFail, true, closeout.BlockerUnresolvedValidationFailure)
}

func TestExpectedFailureIsNeutral(t *testing.T) {
	e := newFinishEnv(t)
	neg := failing("example.com/calc.TestAdd")
	neg.Validation.Expectation, neg.Validation.ExpectationMatched = "failure", true
	e.append(change("calc.go"), neg)
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusWarn, false)
	if r.ToolFailures.NonActionable != 1 || r.Validation.UnresolvedN != 0 {
		t.Fatalf("tool failures %+v validation %+v", r.ToolFailures, r.Validation)
	}
}

func TestToolFailureClasses(t *testing.T) {
	e := newFinishEnv(t)
	e.append(
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", Outcome: workflow.OutcomeFailed, ErrorKind: string(failure.CommandFailed)},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "apply_text_edits", Outcome: workflow.OutcomeFailed, ErrorKind: string(failure.EditConflict)},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", Outcome: workflow.OutcomeFailed, ErrorKind: string(failure.TimedOut)},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", Outcome: workflow.OutcomeCancelled, ErrorKind: string(failure.Cancelled)},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", Outcome: workflow.OutcomeOK,
			Facts: map[string]string{"expectation": "failure", "expectation_matched": "true", "exit_code": "1"}},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", Outcome: workflow.OutcomeOK,
			Facts: map[string]string{"expectation": "success", "expectation_matched": "true", "exit_code": "0"}},
	)
	r, _ := e.finish(nil)
	if *r.ToolFailures != (closeout.ToolFailures{Unexpected: 2, Actionable: 2, NonActionable: 1}) {
		t.Fatalf("tool failures: %+v", r.ToolFailures)
	}
	wantOutcome(t, r, closeout.StatusWarn, false, closeout.AdvisoryUnexpectedToolFailures)
}

func TestClosedSessionWorks(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), passing())
	if _, _, err := e.svc.Close(context.Background(), e.id); err != nil {
		t.Fatal(err)
	}
	r, _ := e.finish(nil)
	wantOutcome(t, r, closeout.StatusPass, false)
	if r.HandoffBrief.Session.Lifecycle != workflow.Closed || r.HandoffBrief.Progress.State != handoff.StateClosed {
		t.Fatalf("brief: %+v", r.HandoffBrief.Session)
	}
}

func TestSessionErrors(t *testing.T) {
	e := newFinishEnv(t)
	kerneltest.Fails(t, e.Call(closeout.FinishToolName, map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"}), failure.UnknownSessionID)
	kerneltest.Fails(t, e.Call(closeout.FinishToolName, map[string]any{}), failure.InvalidArguments)
	other := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_x", Owner: "other", Scopes: []auth.Scope{auth.ScopeAdmin}}
	kerneltest.Fails(t, e.CallAs(other, closeout.FinishToolName, map[string]any{"session_id": e.id}), failure.SessionAuthorityDenied)
}

func TestSummaryOnlyShape(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), failing("example.com/calc.TestAdd"))
	res := e.Call(closeout.FinishToolName, map[string]any{"session_id": e.id, "summary_only": true})
	var m map[string]json.RawMessage
	if err := json.Unmarshal(kerneltest.OutputBytes(t, res), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"counts", "project", "session_id", "suggested_next_actions", "task_outcome"}; !slices.Equal(keys, want) {
		t.Fatalf("summary_only keys %v, want %v", keys, want)
	}
	r := kerneltest.OK[finishResult](t, res)
	wantOutcome(t, r, closeout.StatusFail, true)
	if r.Counts.UnresolvedFailures != 1 || !strings.Contains(r.SuggestedNextActions[0], "example.com/calc.TestAdd") {
		t.Fatalf("summary: %+v", r)
	}
}

func TestValidationNotRequested(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), passing())
	r, _ := e.finish(map[string]any{"include_validation": false, "include_handoff": false, "include_workspace": false})
	if r.Validation.Status != handoff.ValidationNotRequested || r.Validation.Status == handoff.ValidationNotRun {
		t.Fatalf("validation: %+v", r.Validation)
	}
	if r.HandoffBrief != nil || r.Workspace.Status != closeout.NotRequested {
		t.Fatalf("handoff %+v workspace %+v", r.HandoffBrief, r.Workspace)
	}
	wantOutcome(t, r, closeout.StatusWarn, false, closeout.AdvisoryValidationNotRequested)
}

func TestWorkspace(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	e := newFinishEnv(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = e.Project.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "init")
	e.Write("calc.go", "package calc\n\n// changed\n")
	e.Write("new.go", "package calc\n")
	e.append(change("calc.go"), passing())
	r, _ := e.finish(nil)
	w := r.Workspace
	if w.Status != closeout.Available || w.Branch != "main" || w.Head == "" || !*w.Dirty || *w.Conflicted ||
		!slices.Equal(w.ChangedPaths.Items, []string{"calc.go", "new.go"}) {
		t.Fatalf("workspace: %+v %+v", w, w.ChangedPaths)
	}
	wantOutcome(t, r, closeout.StatusPass, false, closeout.AdvisoryDirtyWorktree)
	if r.HandoffBrief.Workspace.Status != handoff.WorkspaceAvailable {
		t.Fatalf("brief workspace: %+v", r.HandoffBrief.Workspace)
	}
}

// TestFinishTakesTheSessionsProject reproduces the finding of issue 24:
// finish_coding_task {session_id} demanded project although the
// authorized session supplies it. Without project it closes out the
// session's project, as session_handoff_summary does; with the session's
// project it gives the same bytes; with another registered project it is
// session_project_mismatch, and a refused call changes nothing.
func TestFinishTakesTheSessionsProject(t *testing.T) {
	e := newFinishEnv(t)
	e.append(change("calc.go"), passing())
	call := func(tool string, args map[string]any) kernel.Result {
		return e.Raw(auth.LocalUser(), tool, mustJSON(t, args))
	}
	for _, tool := range []string{closeout.FinishToolName, closeout.HandoffToolName} {
		res := call(tool, map[string]any{"session_id": e.id})
		var got struct {
			Project   string `json:"project"`
			SessionID string `json:"session_id"`
		}
		if !res.Success {
			t.Fatalf("%s {session_id}: %+v", tool, res.Error)
		}
		if err := json.Unmarshal(kerneltest.OutputBytes(t, res), &got); err != nil || got.Project != e.Project.ID || got.SessionID != e.id {
			t.Fatalf("%s {session_id}: %+v %v", tool, got, err)
		}
	}
	implicit := kerneltest.OutputBytes(t, call(closeout.FinishToolName, map[string]any{"session_id": e.id}))
	explicit := kerneltest.OutputBytes(t, call(closeout.FinishToolName, map[string]any{"session_id": e.id, "project": e.Project.ID}))
	if !bytes.Equal(implicit, explicit) {
		t.Fatalf("the session's project given explicitly changed the closeout:\n%s\n%s", implicit, explicit)
	}
	before, err := e.svc.Get(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{closeout.FinishToolName, closeout.HandoffToolName} {
		kerneltest.Fails(t, call(tool, map[string]any{"session_id": e.id, "project": e.other}), failure.SessionProjectMismatch)
		kerneltest.Fails(t, call(tool, map[string]any{"project": e.Project.ID}), failure.InvalidArguments)
	}
	after, err := e.svc.Get(context.Background(), e.id)
	if err != nil {
		t.Fatal(err)
	}
	if after.EventsObserved != before.EventsObserved || after.Lifecycle != before.Lifecycle {
		t.Fatalf("closeout calls changed the session: %+v -> %+v", before, after)
	}
}
