package app_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow"
)

// finishedOf returns the tool_call_finished events of tool in evs, oldest
// first.
func finishedOf(evs []workflow.Event, tool string) []workflow.Event {
	var out []workflow.Event
	for _, e := range evs {
		if e.Kind == workflow.EventToolCallFinished && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

// recordsOf returns the evidence records of tool in rs, oldest first (the
// API lists newest first).
func recordsOf(rs []evidence.Record, tool string) []evidence.Record {
	var out []evidence.Record
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Tool == tool {
			out = append(out, rs[i])
		}
	}
	return out
}

// wantOneEffectTwoReplays checks that the three calls a reader sees (the
// finished events evs, the evidence records recs) are one effect, whose
// finished event carries the fact factKey = original, and two replays that
// say so and name original.
func wantOneEffectTwoReplays(t *testing.T, what string, evs []workflow.Event, recs []evidence.Record, factKey, original string) {
	t.Helper()
	if len(evs) != 3 || len(recs) != 3 {
		t.Fatalf("%s: %d finished events and %d evidence records, want 3 each", what, len(evs), len(recs))
	}
	for i, e := range evs {
		r := recs[i]
		if e.Outcome != workflow.OutcomeOK || r.Outcome != evidence.OutcomeOK || e.InvocationID != r.InvocationID {
			t.Fatalf("%s call %d: event %+v, record %+v", what, i, e, r)
		}
		if i == 0 {
			if e.Replayed || e.ReplayOf != "" || r.Replayed || r.ReplayOf != "" || e.Facts[factKey] != original {
				t.Fatalf("%s: the original is recorded as %+v / %+v, want no replay and %s=%s", what, e, r, factKey, original)
			}
			continue
		}
		if !e.Replayed || e.ReplayOf != original || !r.Replayed || r.ReplayOf != original {
			t.Fatalf("%s call %d is recorded as event replayed=%v of %q, record replayed=%v of %q; want replays of %s",
				what, i, e.Replayed, e.ReplayOf, r.Replayed, r.ReplayOf, original)
		}
		if len(e.ChangedPaths) != 0 {
			t.Fatalf("%s replay %d claims changes: %v", what, i, e.ChangedPaths)
		}
	}
}

// TestReplaysRecordedAsReplays is the reproduction of issue 24's finding:
// three identical keyed posts and three identical complete_session_message
// calls through the real kernel over real SQLite are one effect each and
// two replays each, in the ledger (as session_summary returns it), in the
// evidence journal (which still verifies offline), and in the counts of
// the continuation feedback and finish_coding_task's brief. A conflicting
// replay (same key, another payload) is idempotency_conflict, is no
// replay, and changes nothing.
func TestReplaysRecordedAsReplays(t *testing.T) {
	data := t.TempDir()
	s := startApp(t, data, "p="+rawProjectDir(t))
	defer s.stop(t)
	ctx := context.Background()
	const project = "agent:local:p"
	sid := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": project, "instruction": "Coordinate the parser work."}, ""), "work_on_project").Output["session_id"])

	post := map[string]any{"session_id": sid, "kind": "todo", "message": "Write the parser.", "delivery_key": "todo-1"}
	var todo string
	for i := 0; i < 3; i++ {
		r := must(t, s.call(t, "post_session_message", post, ""), "post_session_message")
		var m struct {
			ID string `json:"message_id"`
		}
		decodeInto(t, r.Output["message"], &m)
		if i == 0 {
			todo = m.ID
		}
		if m.ID != todo || string(r.Output["replayed"]) != map[bool]string{true: "false", false: "true"}[i == 0] {
			t.Fatalf("post %d: %s replayed=%s", i, m.ID, r.Output["replayed"])
		}
	}
	fence := str(t, must(t, s.call(t, "get_session_assignment", map[string]any{"session_id": sid, "message_id": todo}, ""), "get_session_assignment").Output["assignment_fence"])
	complete := map[string]any{"session_id": sid, "message_id": todo, "answer": "Parser written; tests pass.",
		"completion_key": "done-1", "expected_assignment_fence": fence}
	var completion string
	for i := 0; i < 3; i++ {
		r := must(t, s.call(t, "complete_session_message", complete, ""), "complete_session_message")
		var c struct {
			Todo     boardMsg `json:"todo"`
			Replayed bool     `json:"replayed"`
		}
		decodeInto(t, r.Output["todo"], &c.Todo)
		decodeInto(t, r.Output["replayed"], &c.Replayed)
		if i == 0 {
			completion = c.Todo.CompletionID
		}
		if c.Todo.CompletionID != completion || completion == "" || c.Replayed != (i > 0) {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}

	// Conflicting replays: the same keys with another payload.
	board := boardList(t, s, sid)
	before, err := s.a.Sessions.Get(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	conflictPost := map[string]any{"session_id": sid, "kind": "todo", "message": "Write the printer.", "delivery_key": "todo-1"}
	conflictComplete := map[string]any{"session_id": sid, "message_id": todo, "answer": "Something else.",
		"completion_key": "done-1", "expected_assignment_fence": fence}
	for tool, args := range map[string]map[string]any{"post_session_message": conflictPost, "complete_session_message": conflictComplete} {
		r := s.call(t, tool, args, "")
		if r.Success || r.Error == nil || r.Error.Kind != "idempotency_conflict" || string(r.Output["state_changed"]) != "false" {
			t.Fatalf("%s with a used key and another payload: %+v %v", tool, r.Error, r.Output)
		}
	}
	if got := boardList(t, s, sid); got != board {
		t.Fatalf("a conflicting replay changed the board:\n%s\nwas\n%s", got, board)
	}
	after, err := s.a.Sessions.Get(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if after.Counters.ToolFailures != before.Counters.ToolFailures+2 || after.Counters.ToolCalls != before.Counters.ToolCalls+3 ||
		after.Counters.Replays != 4 || before.Counters.Replays != 4 {
		// +3: the two conflicts and the board listing in between; the
		// four replays, and no conflict among them.
		t.Fatalf("counters %+v, were %+v", after.Counters, before.Counters)
	}

	// The ledger, as session_summary returns it.
	sum := must(t, s.call(t, "session_summary", map[string]any{"session_id": sid, "limit": 200}, ""), "session_summary")
	var evs []workflow.Event
	decodeInto(t, sum.Output["events"], &evs)
	// The evidence journal's records of the session.
	code, ev := evidenceOf(t, s, s.token, sid)
	if code != 200 {
		t.Fatalf("evidence: HTTP %d", code)
	}
	recs := make([]evidence.Record, 0, len(ev.Records))
	for _, r := range ev.Records {
		recs = append(recs, r.Record)
	}
	// The summary's and the journal's counts: four of the records are replays.
	var counts evidence.Counts
	decodeInto(t, sum.Output["evidence"], &counts)
	if counts.Replays != 4 || ev.Counts.Replays != 4 {
		t.Fatalf("evidence counts %+v (summary) and %+v (journal), want 4 replays", counts, ev.Counts)
	}
	posts, postRecs := finishedOf(evs, "post_session_message"), recordsOf(recs, "post_session_message")
	completes, completeRecs := finishedOf(evs, "complete_session_message"), recordsOf(recs, "complete_session_message")
	if len(posts) != 4 || len(postRecs) != 4 || len(completes) != 4 || len(completeRecs) != 4 {
		t.Fatalf("%d/%d post and %d/%d completion events/records, want 4 each", len(posts), len(postRecs), len(completes), len(completeRecs))
	}
	wantOneEffectTwoReplays(t, "keyed post", posts[:3], postRecs[:3], "message_id", todo)
	wantOneEffectTwoReplays(t, "completion", completes[:3], completeRecs[:3], "completion_id", completion)
	for _, c := range []struct {
		e workflow.Event
		r evidence.Record
	}{{posts[3], postRecs[3]}, {completes[3], completeRecs[3]}} {
		if c.e.Outcome != workflow.OutcomeFailed || c.e.ErrorKind != "idempotency_conflict" || c.e.Replayed || c.e.ReplayOf != "" ||
			c.r.Outcome != evidence.OutcomeFailed || c.r.ErrorKind != "idempotency_conflict" || c.r.Replayed || c.r.ReplayOf != "" {
			t.Fatalf("a conflicting replay is recorded as %+v / %+v", c.e, c.r)
		}
	}

	// Counts: the continuation feedback of a continued session and
	// finish_coding_task's brief count one post and one completion.
	var brief struct {
		Progress struct {
			MeaningfulToolCalls int `json:"meaningful_tool_calls"`
		} `json:"progress"`
	}
	fin := must(t, s.call(t, "finish_coding_task", map[string]any{"session_id": sid, "project": project}, ""), "finish_coding_task")
	decodeInto(t, fin.Output["handoff_brief"], &brief)
	// post, get_session_assignment, complete, the two conflicts and the
	// two board listings around them: replays are no new work.
	if brief.Progress.MeaningfulToolCalls != 7 {
		t.Fatalf("finish_coding_task's brief counts %d meaningful calls, want 7", brief.Progress.MeaningfulToolCalls)
	}
	cont := must(t, s.call(t, "work_on_project", map[string]any{"project": project, "session_id": sid, "instruction": "Next: the printer."}, ""), "work_on_project")
	var fb struct {
		Attempt struct {
			Activity struct {
				ToolCalls           int `json:"tool_calls"`
				MeaningfulToolCalls int `json:"meaningful_tool_calls"`
				Replays             int `json:"replays"`
			} `json:"activity"`
		} `json:"attempt"`
	}
	raw := cont.Output["continuation_feedback"]
	decodeInto(t, raw, &fb)
	if a := fb.Attempt.Activity; a.Replays != 4 || a.MeaningfulToolCalls != 7 {
		t.Fatalf("continuation feedback activity %+v, want 4 replays and 7 meaningful calls: %s", a, raw)
	}

	// The journal with its replays verifies offline.
	if _, err := s.a.Evidence.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean {
		b, _ := json.Marshal(rep)
		t.Fatalf("journal does not verify: %s", b)
	}
}
