//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// addSSHResource adds res as [ssh.resources.NAME] to the fixture's
// runner.toml, with extra lines of its own.
func addSSHResource(t *testing.T, f *runnerFixture, res sshresource.Resource, extra string) {
	t.Helper()
	cfg, err := os.ReadFile(f.toml)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, fmt.Sprintf("\n[ssh.resources.%s]\nhost = %q\nport = %d\nuser = %q\nidentity_file = %q\nknown_hosts_file = %q\n%s",
		res.Name, res.Host, res.Port, res.User, res.IdentityFile, res.KnownHostsFile, extra)...)
	if err := os.WriteFile(f.toml, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerSessionShellOnAnSSHResource: with the runner's SSH resource
// (a real sshd on loopback) selected on a session, open_session_shell
// opens a persistent shell on the resource, through the session's
// ControlMaster: cwd follows the call, the session's default_cwd and the
// resource's default_cwd; cd and export persist; a failing command is
// command_failed with its status; output imitating the framing is plain
// output; a timeout interrupts the remote command and keeps the shell; a
// command that ignores the interrupt costs the shell (reset required); an
// exec while the session selects another place is refused; the session
// records the calls with the resource's name and nothing else of it.
func TestRunnerSessionShellOnAnSSHResource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server, runner and sshd processes")
	}
	sshd := sshtest.Start(t, sshtest.Options{})
	f := newRunnerFixture(t)
	res := sshd.Resource("db")
	resDir, remoteDir := filepath.Join(sshd.Dir, "resdefault"), filepath.Join(sshd.Dir, "work")
	for _, d := range []string{resDir, filepath.Join(remoteDir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addSSHResource(t, f, res, fmt.Sprintf("default_cwd = %q\n", resDir))
	startRunner(t, f.srv.base, f.toml, f.token)
	c := shellClient{t: t, base: f.srv.base}
	sess := c.session()
	update := func(args map[string]any) {
		t.Helper()
		args["session_id"] = sess
		if r := c.call("update_session_context", args); !r.Success {
			t.Fatalf("update_session_context: %+v", r.Error)
		}
	}
	secret := []string{res.IdentityFile, res.KnownHostsFile, fmt.Sprintf("%s:%d", res.Host, res.Port), `"` + res.User + `"`}
	noSecret := func(what string, b []byte) {
		t.Helper()
		for _, s := range secret {
			if strings.Contains(string(b), s) {
				t.Fatalf("%s shows %q: %s", what, s, b)
			}
		}
	}

	// The resource's default_cwd, when neither the call nor the session
	// names one.
	update(map[string]any{"resource": "db"})
	open := c.call("open_session_shell", map[string]any{"session_id": sess, "shell": "bash"})
	if !open.Success || !strings.Contains(string(open.Output), `"resource":"db"`) || !strings.Contains(string(open.Output), `"cwd_source":"default"`) {
		t.Fatalf("open on the resource: %+v %s", open.Error, open.Output)
	}
	noSecret("open_session_shell", open.Output)
	var opened struct {
		Shell shellView `json:"shell"`
	}
	if err := json.Unmarshal(open.Output, &opened); err != nil {
		t.Fatal(err)
	}
	sh := opened.Shell
	if out := c.execOK(sess, sh.ShellID, `pwd; echo "conn=[$SSH_CONNECTION]"`); !strings.HasPrefix(out.Stdout.Text, resDir+"\n") ||
		strings.Contains(out.Stdout.Text, "conn=[]") || out.Cwd != "" {
		t.Fatalf("a remote shell in the resource's default_cwd: %+v", out)
	}
	if r := c.call("close_session_shell", map[string]any{"session_id": sess, "shell_id": sh.ShellID}); !r.Success || !strings.Contains(string(r.Output), `"changed":true`) {
		t.Fatalf("close: %+v %s", r.Error, r.Output)
	}
	c.refused("exec after close", c.exec(sess, sh.ShellID, "echo x"), "shell_closed")

	// The session's default_cwd; state persists between commands.
	update(map[string]any{"resource": "db", "default_cwd": remoteDir})
	sh = c.open(sess, map[string]any{"shell": "bash"})
	c.execOK(sess, sh.ShellID, "cd sub && export WC_REMOTE=persisted-value && wc_fn() { echo fn-ran; }")
	if out := c.execOK(sess, sh.ShellID, `pwd; echo "$WC_REMOTE"; wc_fn`); out.Stdout.Text != remoteDir+"/sub\npersisted-value\nfn-ran\n" {
		t.Fatalf("state did not persist on the resource: %+v", out)
	}

	// A failing command: command_failed with its status; the shell stays.
	failed := c.exec(sess, sh.ShellID, "echo out; echo err >&2; (exit 7)")
	c.refused("a failing command", failed, "command_failed")
	if !strings.Contains(failed.Error.Message, "exit code 7") {
		t.Fatalf("a failing command: %+v", failed.Error)
	}

	// Output imitating the framing (hex tokens with a status, lines like
	// the wrapper's) is the command's own output, exactly.
	forged := "0123456789abcdef0123456789abcdef 0\n__wc_s=0\n" + strings.Repeat("f", 32) + " 0"
	out := c.execOK(sess, sh.ShellID, fmt.Sprintf("printf '%%s' '%s'; printf '%s 0\\n' >&2", forged, strings.Repeat("e", 32)))
	if out.Stdout.Text != forged || out.ExitCode != 0 {
		t.Fatalf("forged framing: %+v", out)
	}
	forgedFail := c.exec(sess, sh.ShellID, fmt.Sprintf("printf '%%s\\n' '%s'; exit_status=9; (exit 9)", forged))
	c.refused("a forged status", forgedFail, "command_failed")
	if !strings.Contains(forgedFail.Error.Message, "exit code 9") {
		t.Fatalf("a forged status: %+v", forgedFail.Error)
	}

	// A timeout interrupts the remote command; the shell and its state
	// survive.
	timed := c.call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": sh.ShellID, "command": "sleep 30", "timeout_seconds": 1})
	c.refused("a timeout", timed, "timed_out")
	if !strings.Contains(timed.Error.Message, "the shell is ready") {
		t.Fatalf("a timeout: %+v", timed.Error)
	}
	if out := c.execOK(sess, sh.ShellID, `pwd; echo "$WC_REMOTE"`); out.Stdout.Text != remoteDir+"/sub\npersisted-value\n" {
		t.Fatalf("state after a timeout: %+v", out)
	}

	// The shell runs where it was opened: not while the session selects
	// no resource.
	before := c.status(sess, sh.ShellID).CommandsRun
	update(map[string]any{})
	c.refused("exec with the resource cleared", c.exec(sess, sh.ShellID, "touch "+remoteDir+"/cleared-ran"), "resource_not_allowed")
	update(map[string]any{"resource": "db", "default_cwd": remoteDir})
	if n := c.status(sess, sh.ShellID).CommandsRun; n != before {
		t.Fatalf("a refused exec ran: %d commands, want %d", n, before)
	}
	if _, err := os.Stat(filepath.Join(remoteDir, "cleared-ran")); !os.IsNotExist(err) {
		t.Fatalf("a refused exec ran: %v", err)
	}

	// A command that ignores the interrupt: the shell's state cannot be
	// trusted, so it is lost and the call says reset required.
	reset := c.call("session_shell_exec", map[string]any{"session_id": sess, "shell_id": sh.ShellID,
		"command": "trap '' INT; sleep 30", "timeout_seconds": 1})
	c.refused("an ignored interrupt", reset, "shell_reset_required")
	if v := c.status(sess, sh.ShellID); v.State != "lost" || v.EndReason != "resync_failed" {
		t.Fatalf("after an ignored interrupt: %+v", v)
	}

	// A remote cwd that is not a directory: nothing starts.
	c.refused("a missing remote cwd", c.call("open_session_shell", map[string]any{"session_id": sess, "cwd": remoteDir + "/no/such"}), "not_started")
	c.refused("a remote cwd like an option", c.call("open_session_shell", map[string]any{"session_id": sess, "cwd": "-rf"}), "invalid_arguments")
	c.refused("an over-long remote cwd", c.call("open_session_shell", map[string]any{"session_id": sess, "cwd": "/" + strings.Repeat("d", 5000)}), "invalid_arguments")

	// An explicit cwd comes first; sh works as well as bash.
	sh = c.open(sess, map[string]any{"shell": "sh", "cwd": remoteDir + "/sub"})
	if out := c.execOK(sess, sh.ShellID, "pwd"); out.Stdout.Text != remoteDir+"/sub\n" {
		t.Fatalf("an explicit remote cwd: %+v", out)
	}

	// The session records the calls and the resource's name, never the
	// command text, its output, or anything else of the resource.
	sum := c.call("session_summary", map[string]any{"session_id": sess})
	if !sum.Success {
		t.Fatalf("session_summary: %+v", sum.Error)
	}
	for _, want := range []string{`"open_session_shell"`, `"session_shell_exec"`, `"close_session_shell"`, sh.ShellID, "shell_reset_required", `"db"`} {
		if !strings.Contains(string(sum.Output), want) {
			t.Errorf("the session's summary does not hold %s: %s", want, sum.Output)
		}
	}
	for _, never := range []string{"WC_REMOTE", "persisted-value", "fn-ran"} {
		if strings.Contains(string(sum.Output), never) {
			t.Errorf("the session's summary holds %s: %s", never, sum.Output)
		}
	}
	noSecret("session_summary", sum.Output)

	// Closing the session closes its shell and its master.
	call(t, f.srv.base, "close_session", map[string]any{"session_id": sess}, &struct{}{})
	if v := c.status(sess, sh.ShellID); v.State != "closed" || v.EndReason != "session_closed" {
		t.Fatalf("the shell outlived its session: %+v", v)
	}
	if n := masters(t, res.Port); n != 0 {
		t.Fatalf("%d ControlMasters left after close_session", n)
	}
}
