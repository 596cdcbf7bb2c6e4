//go:build unix

package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
)

// TestCancelledCallKillsRun: a caller that goes away during the sync
// grace cancels the run, as before jobs.
func TestCancelledCallKillsRun(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	pidFile := filepath.Join(e.Project.Root, "pid")
	go func() {
		for {
			if _, err := os.Stat(pidFile); err == nil {
				time.Sleep(50 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := e.Kernel.Dispatch(ctx, kernelCall(e, "run_shell", `{"command":"echo $$ > pid; sleep 30"}`))
	kerneltest.Fails(t, res, failure.Cancelled)
	b, _ := os.ReadFile(pidFile)
	// The cancelled run was answered inline, so it left no job record
	// (records are made durable only at a handoff); its process is gone.
	list, _, err := e.m.List(context.Background(), e.access(), jobs.ListFilter{})
	if err != nil || len(list) != 0 {
		t.Fatalf("jobs %+v %v (pid %s)", list, err, b)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || syscall.Kill(pid, 0) == nil {
		t.Fatalf("the run's process %q survived the cancellation", b)
	}
}
