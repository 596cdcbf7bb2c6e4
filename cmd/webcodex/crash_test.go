package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	evidencestore "github.com/webcodex/webcodex/internal/evidence/sqlitestore"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/sqlitestore"
)

// TestCrashKeepsAcknowledgedEvents kills a real server with SIGKILL in the
// middle of a stream of recorded writes and checks, after restart, that
// every acknowledged call's events are present, that no finished event lacks
// its started event, and that calls cut off by the crash appear at most as
// started-without-finished (outcome unknown).
func TestCrashKeepsAcknowledgedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	srv := startServe(t, "--data-dir", data, "--project", "demo="+proj)
	ctx := context.Background()
	res, err := callTool(ctx, srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "write many files"}, "")
	if err != nil || !res.Success {
		t.Fatalf("work_on_project: %v %+v", err, res.Error)
	}
	var start struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(res.Output, &start)

	const writers = 6
	var (
		mu    sync.Mutex
		acked = map[string]bool{} // paths whose write was acknowledged
		sent  = map[string]bool{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := fmt.Sprintf("out/w%d-%04d.txt", w, i)
				mu.Lock()
				sent[path] = true
				mu.Unlock()
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r, err := callTool(cctx, srv.base, "write_project_file", map[string]any{"project": "agent:local:demo", "path": path, "content": "x"}, start.SessionID)
				cancel()
				if err != nil {
					return // the server is gone
				}
				if !r.Success {
					t.Errorf("write %s: %+v", path, r.Error)
					return
				}
				mu.Lock()
				acked[path] = true
				mu.Unlock()
			}
		}()
	}
	// Let the stream run, then kill the server without warning.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 60 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	close(stop)
	wg.Wait()

	st, err := sqlitestore.Open(ctx, filepath.Join(data, "workflow.db"), nil)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer st.Close()
	if rep := st.Restored(); rep.Discarded != 0 {
		t.Fatalf("restore after crash discarded %d rows", rep.Discarded)
	}
	evs, err := st.Events(ctx, start.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	finishedPath := map[string]bool{}
	finishedCall := map[string]bool{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		switch e.Kind {
		case workflow.EventToolCallStarted:
			started[e.CallID] = true
		case workflow.EventToolCallFinished:
			if !started[e.CallID] {
				t.Fatalf("finished event %s without its started event", e.CallID)
			}
			finishedCall[e.CallID] = true
			for _, p := range e.ChangedPaths {
				finishedPath[p] = true
			}
		}
	}
	for p := range acked {
		if !finishedPath[p] {
			t.Errorf("acknowledged write %s has no tool_call_finished after the crash", p)
		}
		if _, err := os.Stat(filepath.Join(proj, p)); err != nil {
			t.Errorf("acknowledged write %s is missing on disk: %v", p, err)
		}
	}
	unknown := 0
	for id := range started {
		if !finishedCall[id] {
			unknown++
		}
	}
	// Every call that started but never finished was in flight at the
	// crash: at most one per writer, and never an acknowledged one.
	if unknown > writers {
		t.Fatalf("%d calls started without finishing; at most %d were in flight", unknown, writers)
	}
	for p := range finishedPath {
		if !sent[p] {
			t.Fatalf("finished event for a path never sent: %s", p)
		}
	}
	t.Logf("acknowledged %d writes, %d finished in the ledger, %d outcome unknown", len(acked), len(finishedPath), unknown)

	// Every acknowledged write has its evidence record, and the journal
	// the crash cut off verifies (its newest records are just not yet
	// covered by a checkpoint); when the crash came before the first
	// checkpoint, no signature covers any record and verify says exactly
	// that (no_checkpoint).
	rep, err := evidencestore.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil || (rep.Checkpoints > 0 && !rep.Clean) ||
		(rep.Checkpoints == 0 && (len(rep.Totals) != 1 || rep.Totals[evidence.FindingNoCheckpoint] != 1)) {
		t.Fatalf("evidence verify after the crash: %v %+v", err, rep.Totals)
	}
	j, err := evidencestore.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := j.SessionCounts(ctx, start.SessionID)
	j.Close()
	if err != nil || counts.Verified < int64(len(acked)) {
		t.Fatalf("%d verified evidence records for %d acknowledged writes (%v)", counts.Verified, len(acked), err)
	}

	// The restarted server serves the same session.
	srv2 := startServe(t, "--data-dir", data)
	r, err := callTool(ctx, srv2.base, "session_summary", map[string]any{"session_id": start.SessionID, "limit": 5}, "")
	if err != nil || !r.Success {
		t.Fatalf("summary after restart: %v %+v", err, r.Error)
	}
	srv2.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-srv2.done; err != nil {
		t.Fatalf("graceful shutdown: %v\n%s", err, srv2.out.String())
	}
	// The graceful shutdown signed the head: now the journal is clean.
	if rep, err := evidencestore.Verify(ctx, data, evidence.VerifyOptions{}); err != nil || !rep.Clean || rep.Unanchored != 0 {
		t.Fatalf("evidence verify after a graceful shutdown: %v %+v", err, rep.Totals)
	}
}
