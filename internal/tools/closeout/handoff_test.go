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
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// handoffResult decodes a session_handoff_summary output.
type handoffResult struct {
	SessionID            string                        `json:"session_id"`
	Project              string                        `json:"project"`
	HandoffBrief         handoff.HandoffBrief          `json:"handoff_brief"`
	ContinuationFeedback *handoff.ContinuationFeedback `json:"continuation_feedback"`
	Events               []workflow.Event              `json:"events"`
}

func (e *env) handoff(args map[string]any) (handoffResult, []byte) {
	e.T.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["session_id"] = e.id
	delete(args, "project")
	res := e.Raw(auth.LocalUser(), "session_handoff_summary", mustJSON(e.T, args))
	out := kerneltest.OK[handoffResult](e.T, res)
	var raw struct {
		Brief json.RawMessage `json:"handoff_brief"`
	}
	json.Unmarshal(kerneltest.OutputBytes(e.T, res), &raw)
	return out, raw.Brief
}

func TestFailedValidationFirstAction(t *testing.T) {
	e := newHandoffEnv(t)
	ctx := context.Background()
	_, _, err := e.svc.Append(ctx, e.id,
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK, ObservedPaths: []string{"calc.go", "calc_test.go"}},
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "apply_text_edits", Outcome: workflow.OutcomeOK, ChangedPaths: []string{"calc.go"}},
		workflow.Event{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: &workflow.Validation{
			Tool: "go_test", ScopeID: scope, Parser: "go_test_json/v1", Passed: 1, Failed: 1,
			Failures: []string{"example.com/calc.TestAdd"}, FailuresTotal: 1, Complete: true,
			Verdict: workflow.VerdictFailed, Expectation: "success", ExitCode: 1,
		}})
	if err != nil {
		t.Fatal(err)
	}
	out, raw := e.handoff(nil)
	b := out.HandoffBrief
	if out.SessionID != e.id || out.Project != e.Project.ID || b.Version != 1 || !b.Deterministic || b.LLMSummary {
		t.Fatalf("header: %+v", out)
	}
	if len(b.NextActions) == 0 || !strings.Contains(b.NextActions[0], "example.com/calc.TestAdd") {
		t.Fatalf("next actions: %q", b.NextActions)
	}
	if b.Progress.State != handoff.StateBlocked || b.Validation.Status != handoff.ValidationFailed ||
		!slices.Equal(b.Validation.OpenFailures.Items, []string{"example.com/calc.TestAdd"}) ||
		!slices.Equal(b.Progress.Changes.Items, []string{"calc.go"}) || !slices.Equal(b.Progress.RecentFiles.Items, []string{"calc.go", "calc_test.go"}) {
		t.Fatalf("brief: %s", raw)
	}
	if b.Workspace.Status != handoff.WorkspaceNotRequested || b.Attention.ActiveJobs != nil ||
		!slices.Equal(b.Basis.ReasonCodes, []string{handoff.BasisJobSummaryUnavailable, handoff.BasisWorkspaceNotRequested}) {
		t.Fatalf("basis: %s", raw)
	}
	if strings.Contains(string(raw), "abcd1234secretvalue") || b.Task.RootInstruction.Text == nil || !b.Task.RootInstruction.Truncated {
		t.Fatalf("task: %s", raw)
	}
	if out.ContinuationFeedback != nil || out.Events != nil {
		t.Fatal("diagnostic evidence without diagnostic")
	}
	if len(raw) > handoff.BriefMaxBytes {
		t.Fatalf("brief %d bytes", len(raw))
	}
}

func TestDiagnosticAndFlags(t *testing.T) {
	e := newHandoffEnv(t)
	for range 120 {
		e.svc.Append(context.Background(), e.id, workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK, ObservedPaths: []string{"calc.go"}})
	}
	out, _ := e.handoff(map[string]any{"diagnostic": true, "limit": 5, "include_validation": false, "include_workspace": true})
	if out.ContinuationFeedback == nil || len(out.Events) != 5 || out.Events[4].Seq < 120 {
		t.Fatalf("diagnostic: %d events, feedback %v", len(out.Events), out.ContinuationFeedback != nil)
	}
	b := out.HandoffBrief
	if b.Validation.Status != handoff.ValidationNotRequested || b.Workspace.Status != handoff.WorkspaceUnavailable ||
		!slices.Contains(b.Basis.ReasonCodes, handoff.BasisValidationNotRequested) || !slices.Contains(b.Basis.ReasonCodes, handoff.BasisWorkspaceUnavailable) {
		t.Fatalf("flags: %+v %+v %+v", b.Validation, b.Workspace, b.Basis)
	}
	out, _ = e.handoff(map[string]any{"diagnostic": true, "limit": 1000})
	if len(out.Events) != closeout.MaxEventLimit || out.HandoffBrief.Validation.Status != handoff.ValidationNotRun {
		t.Fatalf("clamp: %d events, validation %s", len(out.Events), out.HandoffBrief.Validation.Status)
	}
	res := e.Raw(auth.LocalUser(), "session_handoff_summary", mustJSON(t, map[string]any{"session_id": e.id, "limit": -1}))
	kerneltest.Fails(t, res, failure.InvalidArguments)
}

func TestClosedUnknownForeign(t *testing.T) {
	e := newHandoffEnv(t)
	kerneltest.OK[sessions.CloseOutput](t, e.Call("close_session", map[string]any{"session_id": e.id}))
	out, _ := e.handoff(nil)
	b := out.HandoffBrief
	if b.Session.Lifecycle != workflow.Closed || b.Progress.State != handoff.StateClosed || !strings.Contains(b.NextActions[0], "closed") {
		t.Fatalf("closed: %+v", b)
	}
	kerneltest.Fails(t, e.Raw(auth.LocalUser(), "session_handoff_summary",
		mustJSON(t, map[string]any{"session_id": "wc_sess_00000000000000000000000000000000"})), failure.UnknownSessionID)
	kerneltest.Fails(t, e.Raw(auth.LocalUser(), "session_handoff_summary",
		mustJSON(t, map[string]any{"session_id": "nope"})), failure.InvalidSessionID)
	other := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_x", Owner: "other", Scopes: []auth.Scope{auth.ScopeAdmin}}
	kerneltest.Fails(t, e.Raw(other, "session_handoff_summary", mustJSON(t, map[string]any{"session_id": e.id})), failure.SessionAuthorityDenied)
	kerneltest.Fails(t, e.Raw(other, "session_handoff_summary", mustJSON(t, map[string]any{"session_id": e.id, "project": e.Project.ID})),
		failure.SessionAuthorityDenied)
}

func TestSnapshotFence(t *testing.T) {
	e := newHandoffEnv(t)
	out, _ := e.handoff(nil)
	if slices.Contains(out.HandoffBrief.Basis.ReasonCodes, handoff.BasisSessionChangedDuringSnapshot) {
		t.Fatalf("quiet session reported changed: %+v", out.HandoffBrief.Basis)
	}
	e.store.race = true
	out, _ = e.handoff(nil)
	b := out.HandoffBrief
	if b.Basis.Complete || !slices.Contains(b.Basis.ReasonCodes, handoff.BasisSessionChangedDuringSnapshot) ||
		b.Progress.State != handoff.StateInsufficientEvidence {
		t.Fatalf("raced: %+v %s", b.Basis, b.Progress.State)
	}
}

func TestWorkspaceSnapshot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	e := newHandoffEnv(t)
	// Not a repository: unavailable, never not_requested.
	out, _ := e.handoff(map[string]any{"include_workspace": true})
	if out.HandoffBrief.Workspace.Status != handoff.WorkspaceUnavailable {
		t.Fatalf("no repo: %+v", out.HandoffBrief.Workspace)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = e.Project.Root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", ".")
	git("commit", "-q", "-m", "init")
	e.Write("new.go", "package calc\n")
	out, _ = e.handoff(map[string]any{"include_workspace": true})
	w := out.HandoffBrief.Workspace
	if w.Status != handoff.WorkspaceAvailable || *w.Branch != "main" || len(*w.Head) != 40 || !*w.Dirty || *w.Conflicted ||
		*out.HandoffBrief.Attention.WorkspaceConflict || slices.Contains(out.HandoffBrief.Basis.ReasonCodes, handoff.BasisWorkspaceUnavailable) {
		t.Fatalf("repo: %+v", w)
	}
	out, _ = e.handoff(nil)
	if out.HandoffBrief.Workspace.Status != handoff.WorkspaceNotRequested {
		t.Fatalf("default: %+v", out.HandoffBrief.Workspace)
	}
}

func TestSameInputSameBytes(t *testing.T) {
	e := newHandoffEnv(t)
	_, a := e.handoff(nil)
	// The first call's own recorder events changed the ledger; a brief of
	// an unchanged ledger is byte-identical.
	_, b := e.handoff(nil)
	_, c := e.handoff(nil)
	if string(b) != string(c) {
		t.Fatalf("briefs differ:\n%s\n%s", b, c)
	}
	_ = a
}

// TestIncludeCheckpoints reproduces the finding of issue 24:
// include_checkpoints, named by the spec, was refused as an unknown
// argument. It is accepted; with no workspace checkpoints on this server,
// true is reported truthfully as checkpoints_unavailable in the basis
// (which is then not complete), and false or omitted leaves the brief as
// it was.
func TestIncludeCheckpoints(t *testing.T) {
	e := newHandoffEnv(t)
	_, omitted := e.handoff(nil)
	_, off := e.handoff(map[string]any{"include_checkpoints": false})
	if !bytes.Equal(omitted, off) || bytes.Contains(omitted, []byte(handoff.BasisCheckpointsUnavailable)) {
		t.Fatalf("include_checkpoints false changed the brief:\n%s\n%s", omitted, off)
	}
	out, _ := e.handoff(map[string]any{"include_checkpoints": true, "include_workspace": true})
	b := out.HandoffBrief.Basis
	if b.Complete || !slices.Contains(b.ReasonCodes, handoff.BasisCheckpointsUnavailable) || !slices.IsSorted(b.ReasonCodes) {
		t.Fatalf("basis with include_checkpoints: %+v", b)
	}
	if out.HandoffBrief.Progress.State == handoff.StateInsufficientEvidence {
		t.Fatalf("missing checkpoints made the evidence insufficient: %+v", out.HandoffBrief.Progress)
	}
	kerneltest.Fails(t, e.Raw(auth.LocalUser(), "session_handoff_summary",
		mustJSON(t, map[string]any{"session_id": e.id, "include_checkpoints": "yes"})), failure.InvalidArguments)
}
