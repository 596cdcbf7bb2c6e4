package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sandboxaudit"
	"github.com/webcodex/webcodex/internal/sandboxaudit/audittest"
)

// TestSandboxDenialsReachTheAuditLog runs a confined child that writes
// outside its project (refused) and waits for the audit reader to count
// the denial: the sandbox asks the kernel to log the exec'd program's
// denials (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON) and the reader
// attributes them to this process. Turns audit on for the test's duration
// when it is off.
func TestSandboxDenialsReachTheAuditLog(t *testing.T) {
	e := newSandboxEnv(t)
	if runner.LandlockABI() < sandboxaudit.MinLandlockABI {
		t.Skipf("Landlock ABI %d logs no denials to audit (needs 7)", runner.LandlockABI())
	}
	audittest.Enable(t)
	r, err := sandboxaudit.Start(context.Background(), os.Getpid())
	if err != nil {
		t.Skipf("audit read-log unavailable: %v", err)
	}
	defer r.Close()
	l := e.local(runner.WorkspaceWrite, runner.NetworkOff)
	res := e.sh(t, l, runner.WorkspaceWrite, "echo x > "+filepath.Join(e.outside, "y"))
	if res.ExitCode == 0 {
		t.Fatal("the child wrote outside its project")
	}
	if err := r.Wait(t.Context(), 1); err != nil {
		t.Fatalf("no denial counted: %v (counts %+v)", err, r.Counts())
	}
	if c := r.Counts(); c.Denials[0] < 1 {
		t.Errorf("denials %v, want at least one fs denial", c.Denials)
	}
	if ok, err := r.Observed(); !ok {
		t.Errorf("not observed with audit on: %v", err)
	}
}
