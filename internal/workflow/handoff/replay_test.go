package handoff_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// replayOf is the finished event of a successful call of tool that
// replayed the original effect of.
func replayOf(tool, of string) workflow.Event {
	e := finished(tool, workflow.OutcomeOK, "")
	e.Replayed, e.ReplayOf = true, of
	return e
}

// One completion and two replays of it are three tool calls, one
// meaningful, and two replays: a replay is never counted as new work, and
// the brief's progress counts the one completion.
func TestFeedbackCountsReplaysApart(t *testing.T) {
	const cmp = "wc_cmp_0123456789abcdef0123456789abcdef"
	l := newLedger("Complete the parser todo.").add(
		finished("complete_session_message", workflow.OutcomeOK, ""),
		replayOf("complete_session_message", cmp),
		replayOf("complete_session_message", cmp),
	)
	fb, b, _ := build(l, handoff.FeedbackOptions{Profile: handoff.ProfileStandard, Jobs: idle}, nil)
	a := fb.Attempt.Activity
	if a.ToolCalls != 3 || a.MeaningfulToolCalls != 1 || a.Replays != 2 || a.Failures != 0 {
		t.Fatalf("activity %+v, want 3 calls, 1 meaningful, 2 replays", a)
	}
	if l.s.Counters.Replays != 2 || l.s.Counters.ToolFailures != 0 {
		t.Fatalf("session counters %+v, want 2 replays", l.s.Counters)
	}
	if b.Progress.MeaningfulToolCalls != 1 {
		t.Fatalf("brief counts %d meaningful calls, want 1", b.Progress.MeaningfulToolCalls)
	}
}
