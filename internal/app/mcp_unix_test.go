//go:build unix

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestMCPDisconnectCancelsAndIsNeverSuccess cancels a running mutating call
// from the client side: the tool's process is killed and the ledger records
// the call as cancelled, never as a success.
//
// It waits on real signals only: the process itself says it runs by opening
// a FIFO the test reads (so the call is past its claims and its durable
// started event: a cancel that lands earlier is a not-started refusal that
// records nothing, which is what a wait on the kernel's in-flight count let
// through), and Kernel.Drain returns once the cancelled call has recorded
// its finish.
func TestMCPDisconnectCancelsAndIsNeverSuccess(t *testing.T) {
	// The FIFO lies outside the project, so no workspace walk ever opens
	// it; the sandbox lets the process write it.
	proj, fifoDir := t.TempDir(), t.TempDir()
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.SandboxExtraWrite = []string{fifoDir} }, "p="+proj)
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": "agent:local:p", "instruction": "long run"}, nil)
	var id string
	json.Unmarshal(w.Output["session_id"], &id)

	running := filepath.Join(fifoDir, "running")
	if err := syscall.Mkfifo(running, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_process", Arguments: map[string]any{
			"project": "agent:local:p", "argv": []string{"sh", "-c", `echo running > "$1"; sleep 30; touch finished`, "sh", running},
			"recording_session_id": id}})
		done <- err
	}()
	started := make(chan error, 1)
	go func() {
		// Opening a FIFO for reading blocks until the process opens it
		// for writing; EOF comes when it has written and closed it.
		b, err := os.ReadFile(running)
		if err == nil && string(b) != "running\n" {
			err = fmt.Errorf("read %q from the FIFO", b)
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-done:
		t.Fatalf("run_process returned before its process ran: %v", err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	// The test's own calls are over: wait for the cancelled one to finish
	// recording (Drain stops admitting calls and waits for in-flight ones).
	s.a.Kernel.Drain(context.Background())

	evs, err := s.a.Sessions.Store().Events(context.Background(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[0]; last.Kind != workflow.EventToolCallFinished || last.Tool != "run_process" || last.Outcome != workflow.OutcomeCancelled {
		t.Fatalf("last event %+v, want run_process finished as cancelled", last)
	}
	if _, err := os.Stat(filepath.Join(proj, "finished")); err == nil {
		t.Fatal("the process was not killed")
	}
}
