package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shellView is the part of a persistent shell's view these tests read.
type shellView struct {
	ShellID     string `json:"shell_id"`
	Project     string `json:"project"`
	State       string `json:"state"`
	EndReason   string `json:"end_reason"`
	CommandsRun int64  `json:"commands_run"`
	Sandbox     string `json:"sandbox"`
}

// shellExec is the part of a session_shell_exec result these tests read.
type shellExec struct {
	ExitCode int    `json:"exit_code"`
	Ending   string `json:"ending"`
	Cwd      string `json:"cwd"`
	Stdout   struct {
		Text string `json:"text"`
	} `json:"stdout"`
	Sandbox string `json:"sandbox"`
}

// shellClient calls the persistent-shell tools of one server.
type shellClient struct {
	t    *testing.T
	base string
}

func (c shellClient) call(tool string, args map[string]any) toolResult {
	c.t.Helper()
	r, err := callTool(context.Background(), c.base, tool, args, "")
	if err != nil {
		c.t.Fatalf("%s: %v", tool, err)
	}
	return r
}

// refused checks that a call failed with kind.
func (c shellClient) refused(what string, r toolResult, kind string) {
	c.t.Helper()
	if r.Success || r.Error == nil || r.Error.Kind != kind {
		c.t.Fatalf("%s: want %s, got %+v %s", what, kind, r.Error, r.Output)
	}
}

func (c shellClient) exec(sess, id, command string) toolResult {
	c.t.Helper()
	return c.call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": id, "command": command})
}

func (c shellClient) execOK(sess, id, command string) shellExec {
	c.t.Helper()
	r := c.exec(sess, id, command)
	if !r.Success {
		c.t.Fatalf("session_shell_exec %q: %+v %s", command, r.Error, r.Output)
	}
	var out shellExec
	if err := json.Unmarshal(r.Output, &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c shellClient) status(sess, id string) shellView {
	c.t.Helper()
	r := c.call("session_shell_status", map[string]any{"session_id": sess, "shell_id": id})
	if !r.Success {
		c.t.Fatalf("session_shell_status: %+v", r.Error)
	}
	var v shellView
	if err := json.Unmarshal(r.Output, &v); err != nil {
		c.t.Fatal(err)
	}
	return v
}

func (c shellClient) open(sess string, args map[string]any) shellView {
	c.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["session_id"] = sess
	r := c.call("open_session_shell", args)
	if !r.Success {
		c.t.Fatalf("open_session_shell: %+v", r.Error)
	}
	var out struct {
		Shell shellView `json:"shell"`
	}
	if err := json.Unmarshal(r.Output, &out); err != nil {
		c.t.Fatal(err)
	}
	return out.Shell
}

func (c shellClient) session() string {
	c.t.Helper()
	var start struct {
		SessionID string `json:"session_id"`
	}
	call(c.t, c.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "use a persistent shell"}, &start)
	return start.SessionID
}

// TestRunnerSessionShellEndToEnd: a persistent shell of a runner's project
// lives in the runner process. Its state persists between commands, the
// session records the calls (never the command text), it survives a cut
// and re-made connection of the same runner process, and a runner killed
// and restarted has lost it: its id then answers not_found, saying so.
// Bad inputs fail with their exact kinds and change nothing.
func TestRunnerSessionShellEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	f := newRunnerFixture(t)
	cfg, err := os.ReadFile(f.toml)
	if err != nil {
		t.Fatal(err)
	}
	// A resource that is never dialled: it is incomplete (no user), so a
	// shell on it is refused before any connection.
	if err := os.WriteFile(f.toml, append(cfg, "\n[ssh.resources.db]\nhost = \"db.invalid\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := startCutProxy(t, strings.TrimPrefix(f.srv.base, "http://"), "cut-the-connection-here", false)
	r := startRunner(t, "http://"+proxy.ln.Addr().String(), f.toml, f.token)
	c := shellClient{t: t, base: f.srv.base}

	s1, s2 := c.session(), c.session()
	sh := c.open(s1, map[string]any{"shell": "bash"})
	if sh.State != "ready" || sh.Project != remoteProject || sh.Sandbox != "workspace-write" {
		t.Fatalf("the opened shell: %+v", sh)
	}
	// cd and export persist: the shell is one process on the runner.
	if out := c.execOK(s1, sh.ShellID, "cd notes && export WC_FOO=persisted"); out.Cwd != "notes" {
		t.Fatalf("after cd: %+v", out)
	}
	out := c.execOK(s1, sh.ShellID, "pwd; echo \"$WC_FOO\"")
	if out.Stdout.Text != filepath.Join(f.dir, "notes")+"\npersisted\n" || out.Cwd != "notes" || out.Sandbox != "workspace-write" {
		t.Fatalf("the shell's state did not persist: %+v", out)
	}
	c.refused("a failing command", c.exec(s1, sh.ShellID, "exit_code_3() { return 3; }; exit_code_3"), "command_failed")

	refuseBadShellCalls(t, c, f, s1, s2, sh)
	// s2 has no shell: every refused open opened nothing.
	sh2 := c.open(s2, nil)

	// The connection is cut right after an exec was sent: the call is
	// outcome_unknown; the runner reconnects and its shell is still there,
	// with its state.
	c.refused("an exec whose connection was cut", c.exec(s1, sh.ShellID, "echo cut-the-connection-here"), "outcome_unknown")
	r.waitConnected(t)
	if out := c.execOK(s1, sh.ShellID, "pwd; echo \"$WC_FOO\""); out.Stdout.Text != filepath.Join(f.dir, "notes")+"\npersisted\n" {
		t.Fatalf("the shell after a reconnect: %+v", out)
	}

	// The session records the shell's calls, never the command text.
	sum, err := callTool(context.Background(), f.srv.base, "session_summary", map[string]any{"session_id": s1}, "")
	if err != nil || !sum.Success {
		t.Fatalf("session_summary: %v %+v", err, sum.Error)
	}
	for _, want := range []string{`"session_shell_exec"`, `"open_session_shell"`, sh.ShellID, "outcome_unknown"} {
		if !strings.Contains(string(sum.Output), want) {
			t.Errorf("the session's summary does not hold %s: %s", want, sum.Output)
		}
	}
	if strings.Contains(string(sum.Output), "WC_FOO") {
		t.Errorf("the session's summary holds command text: %s", sum.Output)
	}

	// Closing a session closes its shell on the runner.
	if r := c.call("close_session", map[string]any{"session_id": s2}); !r.Success {
		t.Fatalf("close_session: %+v", r.Error)
	}
	if v := c.status(s2, sh2.ShellID); v.State != "closed" || v.EndReason != "session_closed" {
		t.Fatalf("the shell of a closed session: %+v", v)
	}

	// kill -9 of the runner: with no connection nothing is sent; the
	// restarted runner has lost the shell, and says so.
	r.cmd.Process.Kill()
	<-r.done
	waitRunnerState(t, f.srv.base, false)
	c.refused("an exec with the runner gone", c.exec(s1, sh.ShellID, "touch gone-ran"), "runner_unavailable")
	startRunner(t, f.srv.base, f.toml, f.token)
	lost := c.exec(s1, sh.ShellID, "touch lost-ran")
	c.refused("an exec on a shell of a restarted runner", lost, "not_found")
	if !strings.Contains(lost.Error.Message, "runner") {
		t.Fatalf("the lost shell's message does not name the runner: %s", lost.Error.Message)
	}
	st := c.call("session_shell_status", map[string]any{"session_id": s1, "shell_id": sh.ShellID})
	c.refused("the status of a shell of a restarted runner", st, "not_found")
	for _, name := range []string{"notes/gone-ran", "notes/lost-ran", "gone-ran", "lost-ran", "notes/resource-ran"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); !os.IsNotExist(err) {
			t.Fatalf("a refused call ran: %s: %v", name, err)
		}
	}
	// The session opens a new shell on the restarted runner.
	again := c.open(s1, nil)
	if out := c.execOK(s1, again.ShellID, "pwd; echo \"[$WC_FOO]\""); out.Stdout.Text != f.dir+"\n[]\n" {
		t.Fatalf("a new shell on the restarted runner: %+v", out)
	}
	// A command that times out is interrupted on the runner; the shell
	// stays, with its state.
	c.execOK(s1, again.ShellID, "export WC_BAR=kept")
	timed := c.call("session_shell_exec", map[string]any{"session_id": s1, "shell_id": again.ShellID, "command": "sleep 30", "timeout_seconds": 1})
	c.refused("a command that timed out", timed, "timed_out")
	if out := c.execOK(s1, again.ShellID, "echo \"$WC_BAR\""); out.Stdout.Text != "kept\n" {
		t.Fatalf("the shell after a timeout: %+v", out)
	}
	if r := c.call("close_session_shell", map[string]any{"session_id": s1, "shell_id": again.ShellID}); !r.Success ||
		!strings.Contains(string(r.Output), `"changed":true`) {
		t.Fatalf("close_session_shell: %+v %s", r.Error, r.Output)
	}
	if r := c.call("close_session_shell", map[string]any{"session_id": s1, "shell_id": again.ShellID}); !r.Success ||
		!strings.Contains(string(r.Output), `"changed":false`) {
		t.Fatalf("close_session_shell again: %+v %s", r.Error, r.Output)
	}
	// A command that ends the shell: the shell is lost, and a later
	// command is refused shell_reset_required, run nowhere.
	ended := c.open(s1, nil)
	exited := c.exec(s1, ended.ShellID, "exit 7")
	c.refused("a command that ended the shell", exited, "command_failed")
	if !strings.Contains(string(exited.Output), `"shell_exited":true`) {
		t.Fatalf("the exit did not say it ended the shell: %s", exited.Output)
	}
	c.refused("a command in a lost shell", c.exec(s1, ended.ShellID, "touch reset-ran"), "shell_reset_required")
	if v := c.status(s1, ended.ShellID); v.State != "lost" || v.CommandsRun != 1 {
		t.Fatalf("the ended shell: %+v", v)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "reset-ran")); !os.IsNotExist(err) {
		t.Fatalf("a command in a lost shell ran: %v", err)
	}
}

// refuseBadShellCalls makes the bad calls on shell sh of session s1 (s2
// has none): each fails with its exact kind, runs nothing and opens no
// shell.
func refuseBadShellCalls(t *testing.T, c shellClient, f *runnerFixture, s1, s2 string, sh shellView) {
	t.Helper()
	// Bad inputs: exact kinds, nothing run, no shell opened.
	before := c.status(s1, sh.ShellID).CommandsRun
	if before != 3 {
		t.Fatalf("commands run: %d, want 3", before)
	}
	second := c.call("open_session_shell", map[string]any{"session_id": s1})
	c.refused("a second shell for the session", second, "conflict")
	if !strings.Contains(second.Error.Message, sh.ShellID) {
		t.Fatalf("the conflict does not name the live shell: %s", second.Error.Message)
	}
	c.refused("a malformed shell id", c.exec(s1, "wc_shell_nothex", "echo x"), "invalid_arguments")
	c.refused("an empty command", c.exec(s1, sh.ShellID, " "), "invalid_arguments")
	c.refused("a zero timeout", c.call("session_shell_exec", map[string]any{"session_id": s1, "shell_id": sh.ShellID,
		"command": "touch timeout-ran", "timeout_seconds": 0}), "invalid_arguments")
	// Within the 16,000-byte bound, but over a frame once encoded.
	c.refused("a command over a frame", c.exec(s1, sh.ShellID, "touch frame-ran #"+strings.Repeat("\x01", 15000)), "request_too_large")
	c.refused("another session's shell", c.exec(s2, sh.ShellID, "touch other-ran"), "permission_denied")
	c.refused("an unknown shell", c.exec(s1, "wc_shell_"+strings.Repeat("0", 32), "touch unknown-ran"), "not_found")
	c.refused("a cwd outside the project", c.call("open_session_shell", map[string]any{"session_id": s2, "cwd": "../"}), "invalid_arguments")
	// The runner confines the cwd against its own files: a link out of the
	// project is refused there.
	if err := os.Symlink(t.TempDir(), filepath.Join(f.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	c.refused("a cwd through a link out of the project", c.call("open_session_shell", map[string]any{"session_id": s2, "cwd": "escape"}), "permission_denied")
	c.refused("a missing cwd", c.call("open_session_shell", map[string]any{"session_id": s2, "cwd": "no/such/dir"}), "invalid_arguments")
	c.refused("a bad shell", c.call("open_session_shell", map[string]any{"session_id": s2, "shell": "zsh"}), "invalid_arguments")
	if n := c.status(s1, sh.ShellID).CommandsRun; n != before {
		t.Fatalf("a refused call ran a command: %d commands, want %d", n, before)
	}
	for _, name := range []string{"notes/timeout-ran", "notes/other-ran", "notes/unknown-ran", "notes/frame-ran"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); !os.IsNotExist(err) {
			t.Fatalf("a refused call ran: %s: %v", name, err)
		}
	}

	// With an SSH resource selected, a shell opens on it (here an
	// incomplete one: refused before any connection), and a shell opened
	// on the runner's host no longer runs (runner_ssh_shell_unix_test.go
	// runs shells on a real one).
	update := func(sess string, args map[string]any) {
		args["session_id"] = sess
		if r := c.call("update_session_context", args); !r.Success {
			t.Fatalf("update_session_context: %+v", r.Error)
		}
	}
	update(s2, map[string]any{"resource": "db"})
	c.refused("open on an incomplete resource", c.call("open_session_shell", map[string]any{"session_id": s2}), "invalid_arguments")
	update(s1, map[string]any{"resource": "db"})
	c.refused("exec with a resource", c.exec(s1, sh.ShellID, "touch resource-ran"), "resource_not_allowed")
	update(s1, map[string]any{})
	update(s2, map[string]any{})
	if n := c.status(s1, sh.ShellID).CommandsRun; n != before {
		t.Fatalf("a refused exec ran a command: %d commands, want %d", n, before)
	}
}
