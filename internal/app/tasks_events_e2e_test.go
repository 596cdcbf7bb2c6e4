package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// callAsync calls a tool from another goroutine (which must not fail t)
// and delivers its result or its transport error.
func callAsync(s *server, tool string, args any) <-chan result {
	out := make(chan result, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args})
		req, _ := http.NewRequest("POST", s.base+"/api/tools/call", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.token)
		var r result
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = json.Unmarshal(data, &r)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d %s", resp.StatusCode, data)
			}
		}
		if err != nil {
			r = result{Error: &struct{ Kind, Message string }{"transport", err.Error()}}
		}
		out <- r
	}()
	return out
}

// agentEventsFlow (wait_for_agent_events, run by TestAgentTasksSQLite
// and TestAgentTasksPostgres, where the wake travels through the
// listener's topic of agenttaskpg.Channel): a worker takes a baseline and waits; the coordinator
// creates a task and the wait returns it (whether the create came before
// or during the wait); a worker's start shows the task claimed with its
// live attempt; bad tokens and waits are refused.
func agentEventsFlow(t *testing.T, s *server) {
	var base string
	outField(t, must(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject}, ""), "baseline"), "events_token", &base)
	waited := callAsync(s, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": base, "wait_seconds": 60})
	var task taskOut
	outField(t, must(t, s.call(t, "create_agent_task", map[string]any{"project": taskProject, "title": "Wake a worker"}, ""), "create"), "task", &task)
	r := must(t, <-waited, "the worker's wait")
	var tasks []struct {
		taskOut
		LiveAttempt *attemptOut `json:"live_attempt"`
	}
	var outcome, next string
	outField(t, r, "tasks", &tasks)
	outField(t, r, "wait_outcome", &outcome)
	outField(t, r, "events_token", &next)
	if len(tasks) != 1 || tasks[0].ID != task.ID || tasks[0].State != "open" || tasks[0].LiveAttempt != nil || outcome == "timeout" {
		t.Fatalf("the wait returned %s", mustJSON(r.Output))
	}
	sess := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": taskProject, "instruction": "Take a task."}, ""), "session").Output["session_id"])
	var a attemptOut
	outField(t, must(t, s.call(t, "start_agent_task_attempt", map[string]any{"session_id": sess, "task_id": task.ID}, ""), "start"), "attempt", &a)
	r = must(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": next}, ""), "after the start")
	outField(t, r, "tasks", &tasks)
	if len(tasks) != 1 || tasks[0].State != "claimed" || tasks[0].LiveAttempt == nil || tasks[0].LiveAttempt.ID != a.ID ||
		tasks[0].LiveAttempt.SessionID != sess {
		t.Fatalf("after the start %s", mustJSON(r.Output))
	}
	// Another project's token, an edited one, and bad waits.
	var otherTok string
	outField(t, must(t, s.call(t, "wait_for_agent_events", map[string]any{"project": "agent:local:other"}, ""), "other baseline"), "events_token", &otherTok)
	refusedAs(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": otherTok}, ""),
		"invalid_observation_token", "another project's token")
	refusedAs(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": next + "A"}, ""),
		"invalid_observation_token", "an edited token")
	refusedAs(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject, "wait_seconds": 5}, ""),
		"invalid_arguments", "a wait without a token")
	refusedAs(t, s.call(t, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": next, "wait_seconds": 61}, ""),
		"invalid_arguments", "a wait over 60 s")
}
