package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCrashCompletionRetryReplays kills a real server with SIGKILL in the
// middle of a stream of complete_session_message calls, restarts it, and
// retries every completion that was sent with the same completion_key and
// fence: an acknowledged one replays with its original answer, one the
// crash cut off either replays (it had committed) or completes now, and
// every todo ends with exactly one answer.
func TestCrashCompletionRetryReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	ctx := context.Background()
	call := func(base, tool string, args map[string]any) (toolResult, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return callTool(cctx, base, tool, args, "")
	}
	out := func(r toolResult, v any) {
		t.Helper()
		if err := json.Unmarshal(r.Output, v); err != nil {
			t.Fatalf("%s: %v", r.Output, err)
		}
	}
	res, err := call(srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "hand out todos"})
	if err != nil || !res.Success {
		t.Fatalf("work_on_project: %v %+v", err, res.Error)
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	out(res, &sess)

	// Enough todos that the crash lands mid-stream, few enough that the
	// todos and their answers stay within retention (200).
	const todos, workers, beforeKill = 80, 4, 20
	type job struct{ id, fence string }
	jobs := make([]job, todos)
	for i := range jobs {
		r, err := call(srv.base, "post_session_message", map[string]any{"session_id": sess.SessionID, "kind": "todo", "message": fmt.Sprint("todo ", i)})
		if err != nil || !r.Success {
			t.Fatalf("post: %v %+v", err, r.Error)
		}
		var p struct {
			Message struct {
				ID string `json:"message_id"`
			} `json:"message"`
		}
		out(r, &p)
		r, err = call(srv.base, "get_session_assignment", map[string]any{"session_id": sess.SessionID, "message_id": p.Message.ID})
		if err != nil || !r.Success {
			t.Fatalf("assignment: %v %+v", err, r.Error)
		}
		var a struct {
			Fence string `json:"assignment_fence"`
		}
		out(r, &a)
		jobs[i] = job{p.Message.ID, a.Fence}
	}
	args := func(j job) map[string]any {
		return map[string]any{"session_id": sess.SessionID, "message_id": j.id, "answer": "done " + j.id,
			"completion_key": "key-" + j.id, "expected_assignment_fence": j.fence}
	}
	type answer struct {
		Answer struct {
			ID string `json:"message_id"`
		} `json:"answer"`
		Replayed bool `json:"replayed"`
	}

	var (
		mu    sync.Mutex
		acked = map[string]string{} // todo → answer id, acknowledged
		sent  = map[string]bool{}
	)
	enough := make(chan struct{})
	next := make(chan job)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				mu.Lock()
				sent[j.id] = true
				mu.Unlock()
				r, err := call(srv.base, "complete_session_message", args(j))
				if err != nil {
					return // the server is gone
				}
				if !r.Success {
					t.Errorf("complete %s: %+v", j.id, r.Error)
					return
				}
				var a answer
				json.Unmarshal(r.Output, &a)
				mu.Lock()
				acked[j.id] = a.Answer.ID
				if len(acked) == beforeKill {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	feederDone := make(chan struct{})
	go func() {
		defer close(feederDone)
		for _, j := range jobs {
			select {
			case next <- j:
			case <-srv.done:
				return
			}
		}
	}()
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	select {
	case <-enough:
	case <-feederDone:
		t.Fatal("every completion finished before the kill")
	case <-workersDone:
		t.Fatal("the workers stopped before the kill")
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-feederDone
	close(next)
	wg.Wait()

	srv2 := startServe(t, "--data-dir", data)
	defer func() {
		srv2.cmd.Process.Signal(syscall.SIGTERM)
		<-srv2.done
	}()
	replayed, fresh := 0, 0
	for _, j := range jobs {
		mu.Lock()
		wasSent, ackedAnswer := sent[j.id], acked[j.id]
		mu.Unlock()
		if !wasSent {
			continue
		}
		r, err := call(srv2.base, "complete_session_message", args(j))
		if err != nil || !r.Success {
			t.Fatalf("retry of %s after the crash: %v %+v", j.id, err, r.Error)
		}
		var a answer
		out(r, &a)
		switch {
		case ackedAnswer != "" && (!a.Replayed || a.Answer.ID != ackedAnswer):
			t.Fatalf("acknowledged completion of %s did not replay: %s", j.id, r.Output)
		case a.Replayed:
			replayed++
		default:
			fresh++
		}
		l, err := call(srv2.base, "list_session_messages", map[string]any{"session_id": sess.SessionID, "reply_to": j.id})
		if err != nil || !l.Success {
			t.Fatal(err)
		}
		var list struct {
			Returned int `json:"returned"`
		}
		out(l, &list)
		if list.Returned != 1 {
			t.Fatalf("todo %s has %d answers after the retry", j.id, list.Returned)
		}
	}
	if replayed < len(acked) {
		t.Fatalf("%d replays for %d acknowledged completions", replayed, len(acked))
	}
	t.Logf("acknowledged %d, retried %d: %d replayed, %d completed by the retry", len(acked), replayed+fresh, replayed, fresh)
}
