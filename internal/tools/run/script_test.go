package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/workspace"
)

// A script of run.MaxScriptBytes runs in process; one byte more is
// invalid_arguments and runs nothing.
func TestScriptBoundInProcess(t *testing.T) {
	e := newEnv(t)
	body := "touch ran\n"
	ok := body + strings.Repeat("#", run.MaxScriptBytes-len(body))
	kerneltest.OK[run.Output](t, e.Call("run_script", map[string]any{"interpreter": "sh", "script": ok}))
	if err := os.Remove(filepath.Join(e.Project.Root, "ran")); err != nil {
		t.Fatalf("a script at the bound did not run: %v", err)
	}
	kerneltest.Fails(t, e.Call("run_script", map[string]any{"interpreter": "sh", "script": ok + "#"}), failure.InvalidArguments)
	if _, err := os.Stat(filepath.Join(e.Project.Root, "ran")); !os.IsNotExist(err) {
		t.Fatalf("a script over the bound ran: %v", err)
	}
}

// The bound a runner takes with a start is the wire's; in process, the
// host's.
func TestMaxScriptBytesPerRunner(t *testing.T) {
	if n := workspace.MaxScriptBytes(workspace.Local{Host: &runner.Local{}}); n != runner.MaxScriptBytes {
		t.Fatalf("in process: %d", n)
	}
	if n := workspace.MaxScriptBytes(remoteStub{}); n != runnerwire.MaxScriptBytes {
		t.Fatalf("through a runner: %d", n)
	}
}

// remoteStub is a workspace.Remote that is never called.
type remoteStub struct{ workspace.Remote }
