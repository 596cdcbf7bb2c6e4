package main

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
)

// TestTaskCompletionSurvivesKill9 kills a real server with SIGKILL while
// an Agent Task attempt's completion is in flight, and once right after a
// completion was acknowledged, restarts it on the same data directory and
// retries each completion with its completion_key. An acknowledged
// completion must be replayed (never completed twice, never lost); an
// interrupted one either committed (the retry replays it) or did not (the
// retry completes it); either way the task ends done with exactly one
// attempt, done, carrying that key.
func TestTaskCompletionSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	args := []string{"--data-dir", data, "--project", "demo=" + proj}
	srv := startServe(t, args...)
	ctx := context.Background()
	call := func(tool string, in map[string]any, out any) {
		t.Helper()
		r, err := callTool(ctx, srv.base, tool, in, "")
		if err != nil || !r.Success {
			t.Fatalf("%s: %v %+v", tool, err, r.Error)
		}
		if out != nil {
			json.Unmarshal(r.Output, out)
		}
	}
	var sess struct {
		ID string `json:"session_id"`
	}
	call("work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "finish tasks through crashes"}, &sess)

	type attempt struct {
		ID    string `json:"attempt_id"`
		Fence int64  `json:"fence"`
		State string `json:"state"`
		Key   string `json:"completion_key"`
	}
	for round, waitForAck := range []bool{false, false, true} {
		var created struct {
			Task struct {
				ID string `json:"task_id"`
			} `json:"task"`
		}
		call("create_agent_task", map[string]any{"project": "agent:local:demo", "title": fmt.Sprintf("round %d", round)}, &created)
		var started struct {
			Attempt attempt `json:"attempt"`
		}
		call("start_agent_task_attempt", map[string]any{"session_id": sess.ID, "task_id": created.Task.ID}, &started)
		complete := map[string]any{"session_id": sess.ID, "attempt_id": started.Attempt.ID, "fence": started.Attempt.Fence,
			"outcome": "done", "summary": "finished before the crash", "completion_key": fmt.Sprintf("done-%d", round)}

		first := make(chan bool, 1) // whether the completion was acknowledged
		go func() {
			r, err := callTool(ctx, srv.base, "complete_agent_task_attempt", complete, "")
			first <- err == nil && r.Success
		}()
		acked := false
		if waitForAck {
			if acked = <-first; !acked {
				t.Fatal("the completion before the kill failed")
			}
		}
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-srv.done
		if !waitForAck {
			acked = <-first
		}
		srv = startServe(t, args...)

		var retried struct {
			Attempt  attempt `json:"attempt"`
			Replayed bool    `json:"replayed"`
		}
		call("complete_agent_task_attempt", complete, &retried)
		if acked && !retried.Replayed {
			t.Fatalf("round %d: an acknowledged completion was not replayed after kill -9: %+v", round, retried)
		}
		var read struct {
			Task struct {
				State string `json:"state"`
			} `json:"task"`
			Attempts []attempt `json:"attempts"`
		}
		call("read_agent_task", map[string]any{"task_id": created.Task.ID}, &read)
		if read.Task.State != "done" || len(read.Attempts) != 1 || read.Attempts[0].State != "done" ||
			read.Attempts[0].Key != complete["completion_key"] {
			t.Fatalf("round %d after kill -9 and retry: %+v", round, read)
		}
		t.Logf("round %d: acknowledged before the kill %v, retry replayed %v", round, acked, retried.Replayed)
	}
	stopServe(t, srv)
}
