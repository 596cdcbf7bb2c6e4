package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestGoalCommands: goal list and show, as tables and --json, over a
// goals.db written by the Goal service; a malformed or unknown id is an
// error.
func TestGoalCommands(t *testing.T) {
	data := t.TempDir()
	if out := mustRun(t, "--data-dir", data, "goal", "list"); !strings.Contains(out, "No goals.") {
		t.Fatalf("empty list: %s", out)
	}
	ctx := context.Background()
	st, closeStore, err := app.OpenGoals(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	svc := goal.NewService(st, nil)
	a, err := svc.Create(ctx, goal.CreateParams{Owner: "fp-a", Project: "agent:local:demo", Title: "Parser rewrite", Objective: "All tests pass."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, goal.CreateParams{Owner: "fp-b", Title: "Docs"}); err != nil {
		t.Fatal(err)
	}
	a, err = svc.Checkpoint(ctx, goal.CheckpointParams{Owner: "fp-a", ID: a.ID, RecoverySummary: "Lexer done.",
		Steps: []goal.Step{{Title: "lexer", Status: goal.StepDone}, {Title: "parser", Status: goal.StepPending}}})
	if err != nil {
		t.Fatal(err)
	}
	const sess = "wc_sess_0123456789abcdef0123456789abcdef"
	if _, _, err := svc.Associate(ctx, goal.AssociateParams{Owner: "fp-a", ID: a.ID, SessionID: sess, SessionOwner: "fp-a", SessionProject: "agent:local:demo"}); err != nil {
		t.Fatal(err)
	}
	closeStore()

	out := mustRun(t, "--data-dir", data, "goal", "list")
	if !strings.Contains(out, "STATUS") || !strings.Contains(out, a.ID) || !strings.Contains(out, "1/2") || !strings.Contains(out, "Docs") {
		t.Fatalf("table: %s", out)
	}
	var list struct {
		Goals []struct {
			ID       string `json:"goal_id"`
			Owner    string `json:"owner_authority_fingerprint"`
			Revision string
		}
		Total int
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "goal", "list", "--json", "--project", "agent:local:demo")), &list)
	if list.Total != 1 || len(list.Goals) != 1 || list.Goals[0].ID != a.ID || list.Goals[0].Owner != "fp-a" || list.Goals[0].Revision != a.Revision {
		t.Fatalf("json list: %+v", list)
	}
	out = mustRun(t, "--data-dir", data, "goal", "show", a.ID)
	for _, want := range []string{"Parser rewrite", "1 of 2 done", "[done] lexer", "Lexer done.", sess, a.Revision} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q: %s", want, out)
		}
	}
	var show struct {
		Goal struct {
			ID       string `json:"goal_id"`
			Progress goal.Progress
		}
		Sessions []goal.Association
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "goal", "show", a.ID, "--json")), &show)
	if show.Goal.ID != a.ID || show.Goal.Progress != (goal.Progress{Done: 1, Total: 2}) || len(show.Sessions) != 1 || show.Sessions[0].SessionID != sess {
		t.Fatalf("json show: %+v", show)
	}
	if _, err := run(t, "--data-dir", data, "goal", "show", "wc_goal_nope"); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("malformed id: %v", err)
	}
	if _, err := run(t, "--data-dir", data, "goal", "show", "wc_goal_00000000000000000000000000000000"); !failure.Is(err, failure.UnknownGoalID) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := run(t, "--data-dir", data, "goal", "list", "--status", "done"); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("bad status: %v", err)
	}
}

// TestSessionHandoffNamesGoals: the offline brief names the session's
// correlated goals like the tool's (id and title).
func TestSessionHandoffNamesGoals(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	fp := auth.Fingerprint("local")
	s, err := workflow.NewService(st.Workflow, nil).Start(ctx, workflow.StartParams{Project: "agent:local:demo", Fingerprint: fp, Instruction: "Fix the parser."})
	if err != nil {
		t.Fatal(err)
	}
	gs := goal.NewService(st.Goals, nil)
	g, err := gs.Create(ctx, goal.CreateParams{Owner: fp, Title: "Parser rewrite"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gs.Associate(ctx, goal.AssociateParams{Owner: fp, ID: g.ID, SessionID: s.ID, SessionOwner: fp, SessionProject: s.Project}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out := mustRun(t, "--data-dir", data, "session", "handoff", s.ID); !strings.Contains(out, "Goals     1 correlated: "+g.ID+" (Parser rewrite)") {
		t.Fatalf("handoff:\n%s", out)
	}
	var brief struct {
		Goals workflow.CorrelatedGoals
	}
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "session", "handoff", s.ID, "--json")), &brief)
	if brief.Goals.Total != 1 || len(brief.Goals.Items) != 1 || brief.Goals.Items[0] != (workflow.GoalRef{ID: g.ID, Title: "Parser rewrite"}) {
		t.Fatalf("handoff --json goals: %+v", brief.Goals)
	}
}
