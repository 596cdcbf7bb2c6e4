//go:build linux

package shell

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// loopback is a Remote whose "ssh client" is a local sh -c running the
// remote text as sshd would (cd, then eval): the remote framing, interrupt
// and release run for real, without a network. The real ssh path is
// cmd/webcodex/runner_ssh_shell_unix_test.go.
func loopback(cwd string) *Remote {
	in := func(dir string) func(string) ([]string, error) {
		return func(text string) ([]string, error) {
			remote, err := sshresource.RemoteCommand(dir, text)
			return []string{"sh", "-c", remote}, err
		}
	}
	return &Remote{Resource: "db", Cwd: cwd, Argv: in(cwd), Command: in("")}
}

func openRemote(t testing.TB, m *Manager, d Dialect, r *Remote) (Info, error) {
	t.Helper()
	root := tempRoot(t)
	return m.Open(context.Background(), OpenSpec{SessionID: testSession, Project: "agent:box:t", ProjectRoot: root, Cwd: root, Shell: d, Remote: r})
}

func TestRemoteShellFraming(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		dir := tempRoot(t)
		info, err := openRemote(t, m, d, loopback(dir))
		if err != nil {
			t.Fatal(err)
		}
		if info.Resource != "db" || info.Cwd != dir || info.State != Ready {
			t.Fatalf("opened: %+v", info)
		}
		run(t, m, info.ShellID, "mkdir sub && cd sub && export WC_X=kept")
		res := run(t, m, info.ShellID, `pwd; echo "$WC_X"; echo err >&2; (exit 7)`)
		if res.ExitCode != 7 || res.Stdout.Text != dir+"/sub\nkept\n" || res.Stderr.Text != "err\n" || res.Cwd != "" || res.State != Ready {
			t.Fatalf("state and status: %+v", res)
		}
		// Text shaped like the framing is output; output without a final
		// newline stays exact.
		forged := strings.Repeat("a", 32) + " 0\n" + strings.Repeat("b", 32) + " 1"
		res = run(t, m, info.ShellID, "printf '%s' '"+forged+"'; printf '%s' '"+forged+"' >&2; (exit 3)")
		if res.ExitCode != 3 || res.Stdout.Text != forged || res.Stderr.Text != forged {
			t.Fatalf("forged framing: %+v", res)
		}
		// Output is bounded as for a local shell.
		res = run(t, m, info.ShellID, "head -c 3000000 /dev/zero | tr '\\0' x")
		if !res.Stdout.Truncated || res.Stdout.TotalBytes != 3000000 || len(res.Stdout.Text) > runner.DefaultTailBytes {
			t.Fatalf("huge output: truncated %v, %d bytes, %d kept", res.Stdout.Truncated, res.Stdout.TotalBytes, len(res.Stdout.Text))
		}
		// The framing writes on its own descriptors: redirecting the
		// shell's stdout does not break it.
		res = run(t, m, info.ShellID, "exec >/dev/null; echo hidden")
		if res.ExitCode != 0 || res.Stdout.Text != "" {
			t.Fatalf("after exec >/dev/null: %+v", res)
		}
		if res = run(t, m, info.ShellID, "echo still >&2"); res.Stderr.Text != "still\n" {
			t.Fatalf("after exec >/dev/null: %+v", res)
		}
	})
}

func TestRemoteShellTimeout(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{ResyncWait: 500 * time.Millisecond})
		info, err := openRemote(t, m, d, loopback(""))
		if err != nil {
			t.Fatal(err)
		}
		run(t, m, info.ShellID, "KEEP=kept")
		res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo before; sleep 30; echo never", 300*time.Millisecond)
		if err != nil || !res.TimedOut || res.State != Ready || res.Stdout.Text != "before\n" {
			t.Fatalf("timed out: %+v %v", res, err)
		}
		if res = run(t, m, info.ShellID, "echo $KEEP"); res.Stdout.Text != "kept\n" {
			t.Fatalf("after the interrupt: %+v", res)
		}
		// An ignored interrupt: the shell cannot be trusted, it is lost
		// and its remote group killed.
		pid := m.pidOf(info.ShellID)
		res, err = m.Exec(context.Background(), info.ShellID, testSession, "trap '' INT; sleep 60", 300*time.Millisecond)
		wantKind(t, err, failure.ShellResetRequired)
		if !res.TimedOut || res.State != Lost {
			t.Fatalf("ignored interrupt: %+v", res)
		}
		waitGone(t, pid)
	})
}

func TestRemoteShellEnds(t *testing.T) {
	m := newManager(t, Options{})
	info, err := openRemote(t, m, Bash, loopback(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo bye; exit 4", 5*time.Second)
	if err != nil || !res.ShellExited || res.ExitCode != 4 || res.State != Lost || res.Stdout.Text != "bye\n" {
		t.Fatalf("exit 4: %+v %v", res, err)
	}
	// ssh's own failure status: the connection ended, the command's
	// outcome is unknown, never a success.
	m.CloseSession(testSession)
	info, err = openRemote(t, m, Bash, loopback(""))
	if err != nil {
		t.Fatal(err)
	}
	res, err = m.Exec(context.Background(), info.ShellID, testSession, "exit 255", 5*time.Second)
	wantKind(t, err, failure.OutcomeUnknown)
	if !res.ShellExited || res.ExitCode != -1 || res.State != Lost {
		t.Fatalf("connection lost: %+v", res)
	}
	if st, _ := m.Status(info.ShellID, testSession); st.EndReason != EndConnectionLost {
		t.Fatalf("status: %+v", st)
	}
}

// Bad remotes fail with their kinds and leave no shell.
func TestRemoteShellRefusals(t *testing.T) {
	m := newManager(t, Options{})
	refused := errors.New("refused")
	for _, c := range []struct {
		r    *Remote
		kind failure.Kind
	}{
		{&Remote{Resource: "db"}, failure.InvalidArguments},
		{&Remote{Argv: loopback("").Argv, Command: loopback("").Command}, failure.InvalidArguments},
		{&Remote{Resource: "db", Argv: func(string) ([]string, error) { return nil, failure.Wrap(failure.InvalidArguments, refused, "bad cwd") },
			Command: loopback("").Command}, failure.InvalidArguments},
		{loopback("/no/such/dir"), failure.NotStarted},
	} {
		_, err := openRemote(t, m, Sh, c.r)
		wantKind(t, err, c.kind)
		if m.Live() != 0 {
			t.Fatalf("%+v left %d shells", c.r, m.Live())
		}
	}
}
