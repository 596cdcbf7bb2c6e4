package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// TestCrashKeepsAcknowledgedEvents kills a real server with SIGKILL in the
// middle of a stream of recorded writes and recorded reads and checks,
// after restart, that every acknowledged write's events and evidence are
// present, that no finished event lacks its started event, that calls cut
// off by the crash appear at most as started-without-finished (outcome
// unknown), and that every acknowledged read (written behind its response)
// is either recorded, with its evidence, or counted as unrecorded by the
// first process to open the ledger after the crash (never silently
// missing).
func TestCrashKeepsAcknowledgedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	data, proj := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "seed.txt"), []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
	// enough is closed when the 60th write is acknowledged.
	const beforeKill = 60
	enough := make(chan struct{})
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
				if len(acked) == beforeKill {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	// Readers record read_files calls in the same session, behind their
	// responses; each stops after maxReads so that the session keeps every
	// event (the seq check below).
	const readers, maxReads = 2, 300
	var readsSent, readsAcked atomic.Int64
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range maxReads {
				select {
				case <-stop:
					return
				default:
				}
				readsSent.Add(1)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r, err := callTool(cctx, srv.base, "read_files", map[string]any{"project": "agent:local:demo", "files": []any{map[string]any{"path": "seed.txt"}}}, start.SessionID)
				cancel()
				if err != nil {
					return // the server is gone
				}
				if !r.Success {
					t.Errorf("read: %+v", r.Error)
					return
				}
				readsAcked.Add(1)
			}
		}()
	}
	// Let the stream run, then kill the server without warning.
	writersGone := make(chan struct{})
	go func() { wg.Wait(); close(writersGone) }()
	select {
	case <-enough:
	case <-writersGone:
		t.Fatalf("the writers stopped before %d writes were acknowledged", beforeKill)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	close(stop)
	wg.Wait()

	st, err := workflowdb.Open(ctx, filepath.Join(data, "workflow.db"), nil)
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer st.Close()
	// Every row the crash left must still be valid (the full pass, since
	// Open checks rows only at a session's first use).
	if rep, err := st.ValidateAll(ctx); err != nil || rep.Discarded != 0 {
		t.Fatalf("validation after crash discarded %d rows (%v)", rep.Discarded, err)
	}
	evs, err := st.Events(ctx, start.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	finishedPath := map[string]bool{}
	finishedCall := map[string]bool{}
	var readsRecorded int64
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
			if e.Tool == "read_files" {
				readsRecorded++
			}
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
	// This Open is the first after the crash: it found the reads the dead
	// server acknowledged and never committed (what /api/status reports as
	// workflow.unrecorded_reads_at_start).
	wst, err := st.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reads: %d sent, %d acknowledged, %d recorded, %d counted unrecorded", readsSent.Load(), readsAcked.Load(), readsRecorded, wst.UnrecordedReads)
	if readsAcked.Load() == 0 {
		t.Fatalf("no read was acknowledged before the kill")
	}
	if readsRecorded+wst.UnrecordedReads < readsAcked.Load() {
		t.Fatalf("%d acknowledged reads, but only %d recorded and %d counted unrecorded: some are silently missing",
			readsAcked.Load(), readsRecorded, wst.UnrecordedReads)
	}
	if readsRecorded > readsSent.Load() {
		t.Fatalf("%d reads recorded, more than the %d sent", readsRecorded, readsSent.Load())
	}

	// Every acknowledged write has its evidence record, and the journal
	// the crash cut off verifies (its newest records are just not yet
	// covered by a checkpoint); when the crash came before the first
	// checkpoint, no signature covers any record and verify says exactly
	// that (no_checkpoint).
	rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{})
	if err != nil || (rep.Checkpoints > 0 && !rep.Clean) ||
		(rep.Checkpoints == 0 && (len(rep.Totals) != 1 || rep.Totals[evidence.FindingNoCheckpoint] != 1)) {
		t.Fatalf("evidence verify after the crash: %v %+v", err, rep.Totals)
	}
	// The restarted server serves the same session.
	srv2 := startServe(t, "--data-dir", data)
	r, err := callTool(ctx, srv2.base, "session_summary", map[string]any{"session_id": start.SessionID, "limit": 5}, "")
	if err != nil || !r.Success {
		t.Fatalf("summary after restart: %v %+v", err, r.Error)
	}
	// Every call the crash cut off now has its explicit finish.
	var sum struct {
		OutcomeUnknown struct {
			Total int `json:"total"`
		} `json:"outcome_unknown"`
	}
	if err := json.Unmarshal(r.Output, &sum); err != nil || sum.OutcomeUnknown.Total != unknown {
		t.Fatalf("after restart %d calls have an unknown outcome, want the %d cut off (%v)", sum.OutcomeUnknown.Total, unknown, err)
	}
	srv2.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-srv2.done; err != nil {
		t.Fatalf("graceful shutdown: %v\n%s", err, srv2.out.String())
	}
	// The graceful shutdown signed the head: now the journal is clean.
	if rep, err := evidencedb.Verify(ctx, data, evidence.VerifyOptions{}); err != nil || !rep.Clean || rep.Unanchored != 0 {
		t.Fatalf("evidence verify after a graceful shutdown: %v %+v", err, rep.Totals)
	}
	// The restart replayed the outbox rows the crash left: every call the
	// ledger shows finished (acknowledged writes and recorded reads) has
	// its verified evidence record.
	j, err := evidencedb.Open(ctx, data, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := j.SessionCounts(ctx, start.SessionID)
	j.Close()
	if want := int64(len(acked)) + readsRecorded; err != nil || counts.Verified < want {
		t.Fatalf("%d verified evidence records for %d acknowledged writes and %d recorded reads (%v)", counts.Verified, len(acked), readsRecorded, err)
	}
}

// call runs a tool on a child server and decodes its output into out.
func call(t *testing.T, base, tool string, args, out any) {
	t.Helper()
	r, err := callTool(context.Background(), base, tool, args, "")
	if err != nil || !r.Success {
		t.Fatalf("%s: %v %+v", tool, err, r.Error)
	}
	if err := json.Unmarshal(r.Output, out); err != nil {
		t.Fatalf("%s output: %v", tool, err)
	}
}

// stop ends a child server gracefully and checks it exited cleanly.
func stop(t *testing.T, c *child) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-c.done; err != nil {
		t.Fatalf("graceful shutdown: %v\n%s", err, c.out.String())
	}
}
