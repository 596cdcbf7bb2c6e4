package handoff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

func goalRefs(n int, title func(i int) string) *workflow.CorrelatedGoals {
	g := &workflow.CorrelatedGoals{Total: n}
	for i := range n {
		g.Items = append(g.Items, workflow.GoalRef{ID: fmt.Sprintf("wc_goal_%032x", i), Title: title(i)})
	}
	g.Returned = n
	return g
}

// TestBriefNamesGoals: the brief names the correlated goals by id and
// title, at most BriefMaxGoals, with their real total; without a goal
// reader it has no goals member at all (the golden briefs).
func TestBriefNamesGoals(t *testing.T) {
	l := newLedger("Work towards the goals.").add(read("a.go"))
	_, b, raw := build(l, handoff.FeedbackOptions{}, func(in *handoff.BriefInput) {
		in.Goals = goalRefs(handoff.BriefMaxGoals+3, func(i int) string { return fmt.Sprintf("goal %d", i) })
	})
	g := b.Goals
	if g == nil || g.Total != handoff.BriefMaxGoals+3 || g.Returned != handoff.BriefMaxGoals || len(g.Items) != handoff.BriefMaxGoals || !g.Truncated {
		t.Fatalf("goals %+v", g)
	}
	if g.Items[0].ID != fmt.Sprintf("wc_goal_%032x", 0) || g.Items[0].Title != "goal 0" {
		t.Fatalf("first goal %+v", g.Items[0])
	}
	if !strings.Contains(string(raw), `"goals":{"items":[{"goal_id":"wc_goal_`) {
		t.Fatalf("brief JSON: %s", raw)
	}
	_, b, raw = build(l, handoff.FeedbackOptions{}, nil)
	if b.Goals != nil || strings.Contains(string(raw), `"goals"`) {
		t.Fatalf("a brief without a goal reader names goals: %s", raw)
	}
}

// TestBriefGoalsWithinBound: goals of the longest titles, in characters
// that encode to six bytes each, beside an oversized ledger, still leave
// the brief within BriefMaxBytes; they are reduced (with their total
// kept) before the instruction excerpts lose more characters.
func TestBriefGoalsWithinBound(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("p%02d/", i) + strings.Repeat("<", 500) }
	l := newLedger(strings.Repeat("&", 4000))
	for i := range 20 {
		l.add(read(long(i)), write(long(i+50)))
	}
	_, b, raw := build(l, handoff.FeedbackOptions{}, func(in *handoff.BriefInput) {
		in.Goals = goalRefs(50, func(int) string { return strings.Repeat(">", 200) })
	})
	if len(raw) > handoff.BriefMaxBytes {
		t.Fatalf("brief with goals is %d bytes", len(raw))
	}
	if b.Goals == nil || b.Goals.Total != 50 || !b.Goals.Truncated || b.Goals.Returned != len(b.Goals.Items) || b.Goals.Returned >= handoff.BriefMaxGoals {
		t.Fatalf("goals not reduced: %+v", b.Goals)
	}
}
