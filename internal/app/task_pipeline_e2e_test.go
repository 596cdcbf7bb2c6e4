package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipelineLease is the lease the pipeline's workers take: the shortest the
// tools allow, so that the killed worker's claim lapses within the test.
const pipelineLease = 10

// pipelineCall is one tools/call from a worker goroutine: unlike callMCP
// it reports instead of failing the test (t.Fatal belongs to the test's
// own goroutine).
func pipelineCall(cs *mcp.ClientSession, tool string, args map[string]any) (mcpResult, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return mcpResult{}, fmt.Errorf("%s: %w", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r mcpResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return mcpResult{}, fmt.Errorf("%s: %s: %w", tool, raw, err)
	}
	if !r.Success {
		return r, fmt.Errorf("%s: %s", tool, raw)
	}
	return r, nil
}

// pipelineWorker is one worker agent of TestTaskPipelineDoc: its own MCP
// client and Workflow Session.
type pipelineWorker struct {
	name    string
	cs      *mcp.ClientSession
	session string
	token   string
	// dieAfterStart makes the worker stop (its client closed) holding its
	// first attempt, as a killed agent would.
	dieAfterStart bool
	// held is the attempt a dying worker left behind.
	held attemptOut
	done []string
}

// loop is the worker's loop of docs/collaboration.md: start the first
// ready task; when none is, wait for task events and try again; work under
// its own session; complete with a completion key. It ends when the task
// named last is done (or, for a dying worker, at its first attempt).
func (w *pipelineWorker) loop(last string) error {
	for range 40 {
		r, err := pipelineCall(w.cs, "start_agent_task_attempt", map[string]any{"session_id": w.session, "lease_seconds": pipelineLease})
		if err != nil {
			return err
		}
		var started bool
		json.Unmarshal(r.Output["started"], &started)
		if !started {
			var finished taskOut
			if r, err := pipelineCall(w.cs, "read_agent_task", map[string]any{"task_id": last}); err != nil {
				return err
			} else if json.Unmarshal(r.Output["task"], &finished); finished.State == "done" {
				return nil
			}
			if w.token, err = waitTaskEvents(w.cs, w.token, 60); err != nil {
				return err
			}
			continue
		}
		var a attemptOut
		json.Unmarshal(r.Output["attempt"], &a)
		if w.dieAfterStart {
			w.held = a
			return w.cs.Close()
		}
		if _, err := pipelineCall(w.cs, "write_project_file", map[string]any{"project": taskProject, "session_id": w.session,
			"path": "work/" + a.TaskID + ".txt", "content": "done by " + w.name + "\n"}); err != nil {
			return err
		}
		if _, err := pipelineCall(w.cs, "complete_agent_task_attempt", map[string]any{"session_id": w.session, "attempt_id": a.ID,
			"fence": a.Fence, "outcome": "done", "summary": "done by " + w.name, "completion_key": a.ID}); err != nil {
			return err
		}
		w.done = append(w.done, a.TaskID)
	}
	return errors.New(w.name + ": the pipeline did not finish in 40 turns")
}

// waitTaskEvents waits up to seconds for task events of taskProject after
// token ("" for a baseline) and returns the next token.
func waitTaskEvents(cs *mcp.ClientSession, token string, seconds int) (string, error) {
	args := map[string]any{"project": taskProject}
	if token != "" {
		args["after_events_token"], args["wait_seconds"] = token, seconds
	}
	r, err := pipelineCall(cs, "wait_for_agent_events", args)
	if err != nil {
		return "", err
	}
	var next string
	err = json.Unmarshal(r.Output["events_token"], &next)
	return next, err
}

// TestTaskPipelineDoc runs the three-agent pipeline of
// docs/collaboration.md with three go-sdk MCP clients: a coordinator
// creates five tasks with dependencies; two workers loop wait → start →
// work → complete at once; one of them is killed holding its first
// attempt, whose lease lapses until the serving process's expiry pass
// reopens the task, which wakes the other worker, who finishes it. Every
// task ends done exactly once, the killed worker's attempt is the only
// expired one, and its late completion is refused and changes nothing.
func TestTaskPipelineDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a real lease to lapse")
	}
	s := startApp(t, t.TempDir(), "task="+rawProjectDir(t))
	defer s.stop(t)
	coord := connectMCP(t, s, "", nil)

	// 1. The coordinator opens its session and creates the tasks.
	var c string
	decodeInto(t, mcpOK(t, coord, "work_on_project", map[string]any{"project": taskProject,
		"instruction": "Plan the release."}).Output["session_id"], &c)
	create := func(title string, deps ...string) string {
		var task taskOut
		args := map[string]any{"project": taskProject, "title": title, "idempotency_key": title, "recording_session_id": c}
		if len(deps) > 0 {
			args["depends_on"] = deps
		}
		decodeInto(t, mcpOK(t, coord, "create_agent_task", args).Output["task"], &task)
		return task.ID
	}
	parse := create("Parse the config")
	lex := create("Lex the config")
	check := create("Check the config", parse)
	emit := create("Emit the binary", parse, lex)
	release := create("Release", check, emit)
	all := []string{parse, lex, check, emit, release}
	coordToken, err := waitTaskEvents(coord, "", 0)
	if err != nil {
		t.Fatal(err)
	}

	// 2. Two workers, each with its own session and a baseline token.
	workers := []*pipelineWorker{{name: "alice", dieAfterStart: true}, {name: "bob"}}
	for _, w := range workers {
		w.cs = connectMCP(t, s, "", nil)
		decodeInto(t, mcpOK(t, w.cs, "work_on_project", map[string]any{"project": taskProject,
			"instruction": "Take the next ready task."}).Output["session_id"], &w.session)
		if w.token, err = waitTaskEvents(w.cs, "", 0); err != nil {
			t.Fatal(err)
		}
	}

	// 3. Both loop at once; alice dies holding her first attempt.
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	for i, w := range workers {
		wg.Go(func() { errs[i] = w.loop(release) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := workers[0], workers[1]
	if alice.held.ID == "" || len(bob.done) != len(all) {
		t.Fatalf("alice held %+v; bob finished %v, want all %d tasks", alice.held, bob.done, len(all))
	}

	// 4. The coordinator sees the changes after its token, and every task
	// is done exactly once; alice's attempt is the only expired one.
	var events []taskOut
	r := mcpOK(t, coord, "wait_for_agent_events", map[string]any{"project": taskProject, "after_events_token": coordToken})
	decodeInto(t, r.Output["tasks"], &events)
	if len(events) != len(all) {
		t.Fatalf("the coordinator saw %d changed tasks, want %d: %+v", len(events), len(all), events)
	}
	expired := 0
	for _, id := range all {
		var task taskOut
		var attempts []attemptOut
		r := mcpOK(t, coord, "read_agent_task", map[string]any{"task_id": id})
		decodeInto(t, r.Output["task"], &task)
		decodeInto(t, r.Output["attempts"], &attempts)
		doneAttempts := 0
		for _, a := range attempts {
			switch a.State {
			case "done":
				doneAttempts++
				if a.SessionID != bob.session {
					t.Errorf("task %s was finished by %s, not bob", id, a.SessionID)
				}
			case "expired":
				expired++
				if a.ID != alice.held.ID {
					t.Errorf("task %s has an expired attempt %s that is not alice's", id, a.ID)
				}
			default:
				t.Errorf("task %s has attempt %s in state %s", id, a.ID, a.State)
			}
		}
		if task.State != "done" || doneAttempts != 1 {
			t.Errorf("task %s: state %s with %d done attempts, want done once", id, task.State, doneAttempts)
		}
	}
	if expired != 1 {
		t.Fatalf("%d expired attempts, want alice's one", expired)
	}

	// 5. Alice comes back too late: bob's attempt (fence 2) holds the task
	// now, so her completion is refused as stale_fence, her attempt
	// expired, and changes nothing.
	late := connectMCP(t, s, "", nil)
	before, _, _ := readTask(t, s, s.token, alice.held.TaskID)
	res, raw := callMCP(t, late, "complete_agent_task_attempt", map[string]any{"session_id": alice.session, "attempt_id": alice.held.ID,
		"fence": alice.held.Fence, "outcome": "done", "summary": "late", "completion_key": "late"}, nil)
	var reason, state string
	json.Unmarshal(res.Output["attempt_state"], &state)
	if res.Success || res.Error.Kind != "stale_precondition" || json.Unmarshal(res.Output["reason"], &reason) != nil ||
		reason != "stale_fence" || state != "expired" {
		t.Fatalf("alice's late completion: %s", raw)
	}
	if after, _, _ := readTask(t, s, s.token, alice.held.TaskID); after != before {
		t.Fatalf("the late completion changed the task:\n%s\n%s", before, after)
	}
}
