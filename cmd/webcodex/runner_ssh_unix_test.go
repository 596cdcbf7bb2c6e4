//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// TestRunnerRunsShellCommandsOnAnSSHResource: a session of a runner's
// project selects the runner's SSH resource (a real sshd on loopback);
// run_shell then runs there, in the session's remote cwd; run_process is
// refused; an unknown resource name changes nothing.
func TestRunnerRunsShellCommandsOnAnSSHResource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server, runner and sshd processes")
	}
	sshd := sshtest.Start(t, sshtest.Options{})
	f := newRunnerFixture(t)
	res := sshd.Resource("db")
	addSSHResource(t, f, res, "")
	startRunner(t, f.srv.base, f.toml, f.token)
	var start struct {
		SessionID string `json:"session_id"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "work on the database host"}, &start)
	ctx := context.Background()
	update := func(args map[string]any) toolResult {
		t.Helper()
		args["session_id"] = start.SessionID
		r, err := callTool(ctx, f.srv.base, "update_session_context", args, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := update(map[string]any{"resource": "nope"}); r.Success || r.Error.Kind != "resource_not_allowed" || strings.Contains(r.Error.Message, res.Host+":") {
		t.Fatalf("an unknown resource: %+v", r)
	}
	// Nothing changed: run_shell still runs on the runner's host.
	local, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "session_id": start.SessionID, "command": `echo "conn=[$SSH_CONNECTION]"`}, "")
	if err != nil || !local.Success || !strings.Contains(string(local.Output), "conn=[]") {
		t.Fatalf("run_shell before a resource: %v %+v %s", err, local.Error, local.Output)
	}

	remoteDir := filepath.Join(sshd.Dir, "work")
	if err := os.MkdirAll(remoteDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := update(map[string]any{"resource": "db", "default_cwd": remoteDir}); !r.Success || !strings.Contains(string(r.Output), `"resource":"db"`) ||
		strings.Contains(string(r.Output), res.IdentityFile) {
		t.Fatalf("selecting the resource: %+v %s", r.Error, r.Output)
	}
	for range 2 { // the second goes through the same ControlMaster
		run, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "session_id": start.SessionID, "command": `pwd; echo "conn=[$SSH_CONNECTION]"`}, "")
		if err != nil || !run.Success || !strings.Contains(string(run.Output), remoteDir) || strings.Contains(string(run.Output), "conn=[]") {
			t.Fatalf("run_shell through the resource: %v %+v %s", err, run.Error, run.Output)
		}
	}
	proc, err := callTool(ctx, f.srv.base, "run_process", map[string]any{"project": remoteProject, "session_id": start.SessionID, "argv": []string{"true"}}, "")
	if err != nil || proc.Success || proc.Error.Kind != "resource_not_allowed" {
		t.Fatalf("run_process with a resource selected: %v %+v", err, proc)
	}
	// Closing the session closes its master: no ssh of it is left.
	if n := masters(t, res.Port); n != 1 {
		t.Fatalf("%d ControlMasters to the resource, want 1", n)
	}
	call(t, f.srv.base, "close_session", map[string]any{"session_id": start.SessionID}, &struct{}{})
	if n := masters(t, res.Port); n != 0 {
		t.Fatalf("%d ControlMasters left after close_session", n)
	}
}

// masters counts the live ssh ControlMaster processes to port.
func masters(t *testing.T, port int) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "ssh" && strings.Contains(string(b), "ControlMaster=yes") &&
			strings.Contains(string(b), fmt.Sprintf("\x00%d\x00", port)) {
			n++
		}
	}
	return n
}
