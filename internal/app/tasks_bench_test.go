package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
)

// BenchmarkAttemptVsBoardTodo compares taking and finishing one unit of
// work the two ways WebCodex offers, through the kernel on SQLite files
// with the worker's session recording every call: an Agent Task's
// start_agent_task_attempt → complete_agent_task_attempt against a board
// todo's get_session_assignment → complete_session_message. Each turn
// first makes a fresh task and a fresh todo (untimed), then times the two
// pairs of calls in alternating order; it reports both medians and the
// ratio attempt over board.
func BenchmarkAttemptVsBoardTodo(b *testing.B) {
	ctx := context.Background()
	cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	const project = "agent:local:bench"
	call := func(tool string, args map[string]any, recorder string) map[string]json.RawMessage {
		raw, _ := json.Marshal(args)
		res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder,
			Principal: auth.LocalUser(), Source: kernel.SourceInternal})
		if !res.Success {
			b.Fatalf("%s: %+v", tool, res.Error)
		}
		out, _ := json.Marshal(res.Output)
		var m map[string]json.RawMessage
		json.Unmarshal(out, &m)
		return m
	}
	field := func(m map[string]json.RawMessage, name string, v any) {
		if err := json.Unmarshal(m[name], v); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	session := func(name string) string {
		var id string
		field(call("work_on_project", map[string]any{"project": project, "instruction": "bench " + name}, ""), "session_id", &id)
		return id
	}
	coord, worker := session("coordinator"), session("worker")

	attempt := func(n int) func() {
		var task struct {
			ID string `json:"task_id"`
		}
		field(call("create_agent_task", map[string]any{"project": project, "title": fmt.Sprintf("task %d", n)}, ""), "task", &task)
		return func() {
			var at struct {
				ID    string `json:"attempt_id"`
				Fence int64  `json:"fence"`
			}
			field(call("start_agent_task_attempt", map[string]any{"session_id": worker, "task_id": task.ID}, worker), "attempt", &at)
			call("complete_agent_task_attempt", map[string]any{"session_id": worker, "attempt_id": at.ID, "fence": at.Fence,
				"outcome": "done", "summary": "done", "completion_key": at.ID}, worker)
		}
	}
	todo := func(n int) func() {
		var msg struct {
			ID string `json:"message_id"`
		}
		field(call("post_session_message", map[string]any{"session_id": coord, "kind": "todo", "message": fmt.Sprintf("todo %d", n)}, coord), "message", &msg)
		return func() {
			var fence string
			field(call("get_session_assignment", map[string]any{"session_id": coord, "message_id": msg.ID}, worker), "assignment_fence", &fence)
			call("complete_session_message", map[string]any{"session_id": coord, "message_id": msg.ID, "answer": "done",
				"completion_key": msg.ID, "expected_assignment_fence": fence}, worker)
		}
	}

	var attempts, board []time.Duration
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	for i := 0; b.Loop(); i++ {
		at, td := attempt(i), todo(i)
		if i%2 == 0 {
			attempts = append(attempts, timed(at))
			board = append(board, timed(td))
		} else {
			board = append(board, timed(td))
			attempts = append(attempts, timed(at))
		}
	}
	ma, mb := benchpair.Median(attempts), benchpair.Median(board)
	b.ReportMetric(float64(mb.Nanoseconds()), "board-median-ns")
	b.ReportMetric(float64(ma.Nanoseconds()), "attempt-median-ns")
	b.ReportMetric(float64(ma)/float64(mb), "ratio")
}
