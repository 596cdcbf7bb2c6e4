package app_test

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkTaskWakeVsBoardWake is issue 28's wake comparison at the tool
// level, across two replicas on one PostgreSQL database, the two sides
// alternated round by round: replica A's wait_for_agent_events (or
// observe_session_messages) waits after its latest token while replica B
// creates a task (or posts a note); the latency runs from the start of
// B's call until A's call returns with the change (B's commit and NOTIFY,
// A's listener, A's re-read). Reported as each side's p50 and p99 and the
// p99 difference, task minus board (goal: within 1 ms).
func BenchmarkTaskWakeVsBoardWake(b *testing.B) {
	apps := replicaApps(b, 2)
	a, bb := apps[0], apps[1]
	const project = "agent:local:bench"
	sess := benchCall(b, a, "work_on_project", map[string]any{"project": project, "instruction": "bench"}, "")["session_id"].(string)
	boardTok := benchCall(b, a, "observe_session_messages", map[string]any{"session_id": sess}, "")["observation_token"].(string)
	taskTok := benchCall(b, a, "wait_for_agent_events", map[string]any{"project": project}, "")["events_token"].(string)
	// round times one wake: wait on A, change on B, A's return.
	round := func(wait func() map[string]any, change func()) (time.Duration, map[string]any) {
		woken := make(chan map[string]any, 1)
		started := make(chan struct{})
		go func() {
			close(started)
			woken <- wait()
		}()
		<-started
		benchCall(b, bb, "session_summary", map[string]any{"session_id": sess}, "") // lets A's wait park
		t0 := time.Now()
		change()
		out := <-woken
		return time.Since(t0), out
	}
	var board, task []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			d, out := round(func() map[string]any {
				return benchCall(b, a, "observe_session_messages", map[string]any{"session_id": sess, "after_observation_token": boardTok, "wait_seconds": 30}, "")
			}, func() {
				benchCall(b, bb, "post_session_message", map[string]any{"session_id": sess, "kind": "note", "message": "wake"}, "")
			})
			if msgs, _ := out["messages"].([]any); len(msgs) != 1 {
				b.Fatalf("the board wait on A returned %v", out["messages"])
			}
			boardTok, board = out["observation_token"].(string), append(board, d)
			continue
		}
		d, out := round(func() map[string]any {
			return benchCall(b, a, "wait_for_agent_events", map[string]any{"project": project, "after_events_token": taskTok, "wait_seconds": 30}, "")
		}, func() {
			benchCall(b, bb, "create_agent_task", map[string]any{"project": project, "title": fmt.Sprintf("wake %d", i)}, "")
		})
		if tasks, _ := out["tasks"].([]any); len(tasks) != 1 {
			b.Fatalf("the task wait on A returned %v", out["tasks"])
		}
		taskTok, task = out["events_token"].(string), append(task, d)
	}
	if len(board) == 0 || len(task) == 0 {
		return // a loop too short to time both sides
	}
	q := func(lat []time.Duration, p float64) float64 {
		s := slices.Clone(lat)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(board, 0.5), "board-p50-ms")
	b.ReportMetric(q(board, 0.99), "board-p99-ms")
	b.ReportMetric(q(task, 0.5), "task-p50-ms")
	b.ReportMetric(q(task, 0.99), "task-p99-ms")
	b.ReportMetric(q(task, 0.99)-q(board, 0.99), "p99-diff-ms")
}
