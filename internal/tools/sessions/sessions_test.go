package sessions_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

type env struct {
	*kerneltest.Env
	svc   *workflow.Service
	tools *sessions.Tools
}

func newEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := workflow.NewService(st, nil)
	p := kerneltest.TempProject(t, files)
	reg := kernel.NewRegistry()
	tools := &sessions.Tools{Sessions: svc, Guidance: "the guide"}
	sessions.Register(reg, tools)
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}, Sessions: svc})
	return &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, tools: tools}
}

func (e *env) start(instruction string) sessions.WorkOutput {
	e.T.Helper()
	return kerneltest.OK[sessions.WorkOutput](e.T, e.Call("work_on_project", map[string]any{"instruction": instruction}))
}

func TestInstructionFiles(t *testing.T) {
	big := strings.Repeat("é", project.MaxInstructionFileBytes) // 2 bytes each: over the bound
	e := newEnv(t, map[string]string{
		"AGENTS.md":                       "Run the tests.\n",
		"CLAUDE.md":                       big,
		".github/copilot-instructions.md": "Prefer small commits.\n",
	})
	out := e.start("go")
	ins := out.Instructions
	if ins.Status != "loaded" || len(ins.Sources) != 3 {
		t.Fatalf("instructions: %+v", ins)
	}
	for i, want := range project.InstructionFiles {
		if ins.Sources[i].Path != want || len(ins.Sources[i].SHA256) != 64 {
			t.Fatalf("source %d: %+v", i, ins.Sources[i])
		}
	}
	if ins.Sources[0].Content != "Run the tests.\n" || ins.Sources[0].Truncated {
		t.Fatalf("AGENTS.md: %+v", ins.Sources[0])
	}
	c := ins.Sources[1]
	if !c.Truncated || len(c.Content) > project.MaxInstructionFileBytes || !strings.HasPrefix(big, c.Content) || c.Bytes != int64(len(big)) {
		t.Fatalf("CLAUDE.md not bounded on a character boundary: %d bytes, truncated=%v", len(c.Content), c.Truncated)
	}
}

func TestInstructionFileSymlinkOutsideIsNotRead(t *testing.T) {
	e := newEnv(t, nil)
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("do not leak"), 0o644)
	if err := os.Symlink(outside, filepath.Join(e.Project.Root, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	out := e.start("go")
	if len(out.Instructions.Sources) != 1 || out.Instructions.Sources[0].Unavailable != "outside_project_root" || out.Instructions.Sources[0].Content != "" {
		t.Fatalf("symlinked instruction file: %+v", out.Instructions)
	}
}

func TestListSessionsPagesAndNeverSelects(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.start("task").SessionID)
	}
	page := kerneltest.OK[sessions.ListOutput](t, e.Call("list_sessions", map[string]any{"limit": 2}))
	if page.Total != 3 || len(page.Sessions) != 2 {
		t.Fatalf("page: total %d, %d sessions", page.Total, len(page.Sessions))
	}
	next := kerneltest.OK[sessions.ListOutput](t, e.Call("list_sessions", map[string]any{"limit": 2, "offset": 2}))
	seen := map[string]bool{}
	for _, s := range append(page.Sessions, next.Sessions...) {
		seen[s.SessionID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("session %s missing from pages", id)
		}
	}
	kerneltest.Fails(t, e.Call("list_sessions", map[string]any{"limit": workflow.ListMax + 1}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("list_sessions", map[string]any{"lifecycle": "paused"}), failure.InvalidArguments)
	// Listing is not a session mutation: no session gained events.
	for _, id := range ids {
		s, _ := e.svc.Get(context.Background(), id)
		if s.EventsObserved != 4 {
			t.Fatalf("session %s has %d events after listing, want 4", id, s.EventsObserved)
		}
	}
}

func TestUpdateContext(t *testing.T) {
	e := newEnv(t, map[string]string{"cmd/tool/main.go": "package main\n"})
	id := e.start("go").SessionID
	out := kerneltest.OK[sessions.ContextOutput](t, e.Call("update_session_context", map[string]any{"session_id": id, "default_cwd": "./cmd//tool", "default_shell": "bash"}))
	if out.ExecutionContext.DefaultCwd != "cmd/tool" || out.ExecutionContext.DefaultShell != "bash" {
		t.Fatalf("context: %+v", out.ExecutionContext)
	}
	for _, bad := range []string{"/etc", "../x", "a\x01b", "C:/x", "file://x"} {
		kerneltest.Fails(t, e.Call("update_session_context", map[string]any{"session_id": id, "default_cwd": bad}), failure.InvalidExecutionContext)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(e.Project.Root, "out")); err != nil {
		t.Fatal(err)
	}
	kerneltest.Fails(t, e.Call("update_session_context", map[string]any{"session_id": id, "default_cwd": "out"}), failure.InvalidExecutionContext)
	s, _ := e.svc.Get(context.Background(), id)
	if s.ExecutionContext.DefaultCwd != "cmd/tool" {
		t.Fatalf("a rejected update changed the context: %+v", s.ExecutionContext)
	}
	// {} clears.
	out = kerneltest.OK[sessions.ContextOutput](t, e.Call("update_session_context", map[string]any{"session_id": id}))
	if out.ExecutionContext != (workflow.ExecutionContext{}) {
		t.Fatalf("not cleared: %+v", out.ExecutionContext)
	}
}

func TestContinueModeAndSummary(t *testing.T) {
	e := newEnv(t, nil)
	w := e.start("look around")
	c := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": w.SessionID, "instruction": "now read only", "mode": "read_only"}))
	if c.Continuation != "continued" || c.Mode != workflow.ModeReadOnly || c.SessionID != w.SessionID {
		t.Fatalf("continue: %+v", c)
	}
	sum := kerneltest.OK[sessions.SummaryOutput](t, e.Call("session_summary", map[string]any{"session_id": w.SessionID, "limit": 3}))
	if sum.EventsReturned != 3 || sum.EventsComplete || sum.Session.Mode != workflow.ModeReadOnly {
		t.Fatalf("summary: %+v", sum)
	}
	kerneltest.Fails(t, e.Call("session_summary", map[string]any{"session_id": w.SessionID, "limit": workflow.SummaryMax + 1}), failure.InvalidArguments)
	// Another project's id on the same session is refused.
	kerneltest.Fails(t, e.Call("session_summary", map[string]any{"session_id": w.SessionID, "project": project.LocalID("other")}), failure.UnknownProject)
	other := auth.Principal{Kind: auth.KindAPIToken, ID: "tok_x", Owner: "other", Scopes: []auth.Scope{auth.ScopeAdmin}}
	kerneltest.Fails(t, e.CallAs(other, "work_on_project", map[string]any{"session_id": w.SessionID, "instruction": "hijack"}), failure.SessionAuthorityDenied)
}

func TestContinueDescribesThePreviousAttempt(t *testing.T) {
	e := newEnv(t, map[string]string{"calc.go": "package calc\n"})
	w := e.start("Fix Add")
	// The previous attempt changed a file and left a failing test.
	scope := "validation_scope:v1:" + strings.Repeat("a", 64)
	if _, _, err := e.svc.Append(context.Background(), w.SessionID,
		workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "apply_text_edits", Outcome: workflow.OutcomeOK, ChangedPaths: []string{"calc.go"}},
		workflow.Event{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: &workflow.Validation{
			Tool: "go_test", ScopeID: scope, Parser: "go_test_json/v1", Passed: 1, Failed: 1,
			Failures: []string{"example.com/calc.TestAdd"}, FailuresTotal: 1, Complete: true,
			Verdict: workflow.VerdictFailed, Expectation: "success"}},
	); err != nil {
		t.Fatal(err)
	}
	c := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": w.SessionID, "instruction": "Try again"}))
	b, _ := json.Marshal(c.ContinuationFeedback)
	var fb struct {
		Status  string `json:"status"`
		Attempt struct {
			Instruction struct {
				Excerpt string `json:"excerpt"`
			} `json:"instruction"`
		} `json:"attempt"`
		SuggestedNextActions []string `json:"suggested_next_actions"`
	}
	json.Unmarshal(b, &fb)
	if fb.Attempt.Instruction.Excerpt != "Fix Add" || len(fb.SuggestedNextActions) == 0 ||
		!strings.Contains(fb.SuggestedNextActions[0], "example.com/calc.TestAdd") {
		t.Fatalf("continuation feedback does not describe the previous attempt: %s", b)
	}
	if strings.Contains(string(b), "Try again") {
		t.Fatal("feedback describes the new attempt, not the previous one")
	}
	// A fresh session says it has no previous attempt.
	f, _ := json.Marshal(e.start("New task").ContinuationFeedback)
	if !strings.Contains(string(f), `"status":"not_applicable"`) || !strings.Contains(string(f), `"reason_code":"fresh_session"`) {
		t.Fatalf("fresh session feedback: %s", f)
	}
}

// TestGuidanceProfile reproduces the finding of issue 24: guidance_profile,
// named by the spec, was refused as an unknown argument. direct (the
// default) is served and gives the bytes an omitted profile gives; the
// Code Mode profiles fail parsing as guidance_profile_unavailable, even
// with include_workflow_guidance false and on an exact resume, creating
// and continuing nothing; any other value is invalid_arguments.
func TestGuidanceProfile(t *testing.T) {
	e := newEnv(t, nil)
	omitted := e.start("task")
	direct := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": "task", "guidance_profile": "direct"}))
	if direct.Workflow != "the guide" || direct.Workflow != omitted.Workflow || direct.Continuation != "created" {
		t.Fatalf("direct: %+v", direct)
	}
	resumed := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project",
		map[string]any{"instruction": "more", "session_id": direct.SessionID, "guidance_profile": "direct"}))
	if resumed.Continuation != "continued" || resumed.Workflow != "the guide" {
		t.Fatalf("direct on a resume: %+v", resumed)
	}
	before, err := e.svc.Get(context.Background(), direct.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	list := func() int {
		return kerneltest.OK[sessions.ListOutput](t, e.Call("list_sessions", map[string]any{})).Total
	}
	sessionsBefore := list()
	for _, args := range []map[string]any{
		{"instruction": "task", "guidance_profile": "code_mode"},
		{"instruction": "task", "guidance_profile": "code_mode", "include_workflow_guidance": false},
		{"instruction": "task", "guidance_profile": "host_code_mode"},
		{"instruction": "more", "guidance_profile": "code_mode", "session_id": direct.SessionID},
		{"instruction": "more", "guidance_profile": "code_mode", "session_id": direct.SessionID, "mode": "read_only"},
	} {
		res := e.Call("work_on_project", args)
		kerneltest.Fails(t, res, failure.GuidanceProfileUnavailable)
		if !strings.Contains(res.Error.Message, "direct") {
			t.Fatalf("%v: the refusal does not name the profile served: %s", args, res.Error.Message)
		}
	}
	for _, bad := range []any{"Direct", "fancy"} {
		kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "task", "guidance_profile": bad}), failure.InvalidArguments)
	}
	kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "task", "guidance_profile": 1}), failure.InvalidArguments)
	after, err := e.svc.Get(context.Background(), direct.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if after.EventsObserved != before.EventsObserved || after.Mode != before.Mode || list() != sessionsBefore {
		t.Fatalf("a refused profile changed something: %d -> %d events, mode %s -> %s, %d -> %d sessions",
			before.EventsObserved, after.EventsObserved, before.Mode, after.Mode, sessionsBefore, list())
	}
}
