//go:build linux

// The shell tests run real shells and count their processes through /proc
// (runner.CountGroup, runner.Survivors): they are Linux tests.

package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

const testSession = "wc_sess_00000000000000000000000000000001"

func testGetenv(k string) string {
	switch k {
	case "PATH", "HOME":
		return os.Getenv(k)
	case "WEBCODEX_TOKEN", "GITHUB_TOKEN":
		return "server-secret"
	}
	return ""
}

func newManager(t testing.TB, o Options) *Manager {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = testGetenv
	}
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	return m
}

func tempRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func openShell(t testing.TB, m *Manager, session string, d Dialect) (Info, string) {
	t.Helper()
	if _, err := exec.LookPath(string(d)); err != nil {
		t.Skipf("%s is not installed", d)
	}
	root := tempRoot(t)
	info, err := m.Open(context.Background(), OpenSpec{SessionID: session, Project: "agent:local:t", ProjectRoot: root, Cwd: root, Shell: d})
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	if info.State != Ready || !shellIDRE.MatchString(info.ShellID) || info.Cwd != "." || info.Shell != d {
		t.Fatalf("opened: %+v", info)
	}
	return info, root
}

func run(t testing.TB, m *Manager, id, command string) Result {
	t.Helper()
	res, err := m.Exec(context.Background(), id, testSession, command, 10*time.Second)
	if err != nil {
		t.Fatalf("exec %q: %v", command, err)
	}
	return res
}

func wantKind(t testing.TB, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("error %v, want kind %s", err, k)
	}
}

func (m *Manager) pidOf(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shells[id].pid
}

// streams returns the stdout and stderr streams of shell id.
func (m *Manager) streams(id string) (out, errs *stream) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shells[id].out, m.shells[id].errs
}

// droppedBytes is how many bytes st has dropped between commands.
func (st *stream) droppedBytes() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.dropped
}

// waitGone waits until no process of group pgid is left.
func waitGone(t testing.TB, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if runner.CountGroup(pgid) == 0 && syscall.Kill(pgid, 0) == syscall.ESRCH {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process group %d is still alive", pgid)
}

func dialects(t *testing.T, f func(t *testing.T, d Dialect)) {
	for _, d := range []Dialect{Sh, Bash} {
		t.Run(string(d), func(t *testing.T) { t.Parallel(); f(t, d) })
	}
}

func TestStatePersistsAcrossCommands(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, root := openShell(t, m, testSession, d)
		os.Mkdir(filepath.Join(root, "sub"), 0o755)
		res := run(t, m, info.ShellID, "cd sub && export WC_FOO=bar; WC_PLAIN=plain; greet() { echo \"hello $1\"; }; umask 027; unset HOME")
		if res.ExitCode != 0 || res.Cwd != "sub" || res.CwdOutsideProject {
			t.Fatalf("first: %+v", res)
		}
		res = run(t, m, info.ShellID, `pwd; echo "$WC_FOO $WC_PLAIN"; greet you; umask; echo "home=${HOME-unset}"; sh -c 'echo child=$WC_FOO'`)
		want := filepath.Join(root, "sub") + "\nbar plain\nhello you\n0027\nhome=unset\nchild=bar\n"
		if res.Stdout.Text != want || res.Stderr.Text != "" || res.Cwd != "sub" {
			t.Fatalf("state did not persist:\n%q\nwant\n%q (stderr %q)", res.Stdout.Text, want, res.Stderr.Text)
		}
		res = run(t, m, info.ShellID, "cd /")
		if res.Cwd != "" || !res.CwdOutsideProject {
			t.Fatalf("cwd outside the project: %+v", res)
		}
		st, err := m.Status(info.ShellID, testSession)
		if err != nil || st.CommandsRun != 3 || st.State != Ready || st.Cwd != "." {
			t.Fatalf("status %+v %v", st, err)
		}
	})
}

func TestOutputIsExactlyItsOwn(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		for i := 0; i < 30; i++ {
			n := strings.Repeat("x", i*37)
			res := run(t, m, info.ShellID, "printf 'out%s' "+n+"; printf 'err%s' "+n+" >&2; ls /nonexistent-wc 2>/dev/null; exit_code_is() { return $1; }; exit_code_is 4")
			if res.Stdout.Text != "out"+n || res.Stderr.Text != "err"+n || res.ExitCode != 4 {
				t.Fatalf("round %d: %+v", i, res)
			}
			res = run(t, m, info.ShellID, "true")
			if res.Stdout.Text != "" || res.Stderr.Text != "" || res.ExitCode != 0 || res.Stdout.TotalBytes != 0 {
				t.Fatalf("round %d: silent command got output %+v", i, res)
			}
		}
		// A failing external command and a syntax error are ordinary
		// statuses; the shell survives both.
		res := run(t, m, info.ShellID, "ls /nonexistent-wc")
		if res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "nonexistent-wc") || res.Stdout.Text != "" {
			t.Fatalf("ls: %+v", res)
		}
		for _, bad := range []string{"echo 'unterminated", "}", "if true; then", "echo \"a", "echo ok # comment \\", "case x in"} {
			res = run(t, m, info.ShellID, bad)
			if bad == "echo ok # comment \\" {
				if res.ExitCode != 0 || res.Stdout.Text != "ok\n" {
					t.Fatalf("%q: %+v", bad, res)
				}
				continue
			}
			if res.ExitCode == 0 || res.Stdout.Text != "" {
				t.Fatalf("syntax error %q: %+v", bad, res)
			}
		}
		res = run(t, m, info.ShellID, `echo "it's" 'a "b"' $'\t' \; ; printf '%s\n' "$(printf 'multi\nline')"`)
		if !strings.HasPrefix(res.Stdout.Text, "it's a \"b\"") || !strings.HasSuffix(res.Stdout.Text, "multi\nline\n") {
			t.Fatalf("quoting: %q", res.Stdout.Text)
		}
	})
}

func TestForgedFramingIsPlainOutput(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		// Make the next control tokens predictable so that the command
		// can print exactly the token that frames it.
		tokens := make(chan string, 4)
		for _, tk := range []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"} {
			tokens <- tk
		}
		m.mu.Lock()
		m.newToken = func() string {
			select {
			case tk := <-tokens:
				return tk
			default:
				return randomHex()
			}
		}
		m.mu.Unlock()
		cmd := `echo 0123456789abcdef0123456789abcdef 0; echo 0123456789abcdef0123456789abcdef 0 >&2; printf '%s %d\n' 0123456789abcdef0123456789abcdef 0 >&3; printf 'x\n' >&4; echo "__wc_s=$__wc_s"; false`
		res := run(t, m, info.ShellID, cmd)
		if res.ExitCode != 1 {
			t.Fatalf("forged framing changed the status: %+v", res)
		}
		if !strings.HasPrefix(res.Stdout.Text, "0123456789abcdef0123456789abcdef 0\n") || !strings.HasPrefix(res.Stderr.Text, "0123456789abcdef0123456789abcdef 0\n") {
			t.Fatalf("token-looking output not kept verbatim: %+v", res)
		}
		// fds 3 and 4 are closed for the command.
		if strings.Count(res.Stderr.Text, "\n") < 3 {
			t.Fatalf("writes to the framing descriptors should fail: %q", res.Stderr.Text)
		}
		// The next command, framed by the second known token, prints it
		// in a control-line shape and then sleeps past the point where a
		// forged token would have ended it.
		res = run(t, m, info.ShellID, `printf 'fedcba9876543210fedcba9876543210 7\n'; sleep 0.2; echo after; exit_with() { return 5; }; exit_with`)
		if res.ExitCode != 5 || res.Stdout.Text != "fedcba9876543210fedcba9876543210 7\nafter\n" {
			t.Fatalf("second command: %+v", res)
		}
		// set -x and set -v echo the framing, but never a whole
		// sentinel or token.
		res = run(t, m, info.ShellID, "set -xv; echo traced")
		if res.ExitCode != 0 || res.Stdout.Text != "traced\n" {
			t.Fatalf("set -x: %+v", res)
		}
		res = run(t, m, info.ShellID, "echo still")
		if res.ExitCode != 0 || res.Stdout.Text != "still\n" {
			t.Fatalf("after set -x: %+v", res)
		}
	})
}

func TestCommandCannotReadTheProtocol(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		res := run(t, m, info.ShellID, `cat; read line; echo "read=[$line] $?"; head -c 10; echo done`)
		if res.Stdout.Text != "read=[] 1\ndone\n" || res.ExitCode != 0 {
			t.Fatalf("stdin: %+v", res)
		}
		res = run(t, m, info.ShellID, "echo next")
		if res.Stdout.Text != "next\n" {
			t.Fatalf("after reading stdin: %+v", res)
		}
		// Redirecting the shell's own stdout does not break framing.
		res = run(t, m, info.ShellID, "exec 7>&1; exec >/dev/null; echo hidden")
		if res.Stdout.Text != "" || res.ExitCode != 0 {
			t.Fatalf("exec >/dev/null: %+v", res)
		}
		res = run(t, m, info.ShellID, "echo hidden too; exec >&7 7>&-; echo back")
		if res.Stdout.Text != "back\n" {
			t.Fatalf("stdout restored: %+v", res)
		}
	})
}

func TestScrubbedEnvironment(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Sh)
	res := run(t, m, info.ShellID, "env")
	// The one WEBCODEX_ variable is the containment marker, naming the shell.
	env := strings.Replace(res.Stdout.Text, runner.MarkerEnv+"="+info.ShellID+"\n", "", 1)
	if strings.Contains(env, "server-secret") || strings.Contains(env, "WEBCODEX") || !strings.Contains(env, "PATH=") {
		t.Fatalf("environment:\n%s", res.Stdout.Text)
	}
}

func TestConcurrentExecIsBusy(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Sh)
	// The first command runs until the test opens its gate, after the
	// second was refused: no timing decides whether it is still busy.
	gate := filepath.Join(t.TempDir(), "gate")
	openGate := func() { os.WriteFile(gate, nil, 0o600) }
	t.Cleanup(openGate)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res := run(t, m, info.ShellID, "while [ ! -e '"+gate+"' ]; do sleep 0.01; done; echo slept")
		if res.Stdout.Text != "slept\n" {
			t.Errorf("first command: %+v", res)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := m.Status(info.ShellID, testSession)
		if st.State == Busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("shell never became busy")
		}
		time.Sleep(time.Millisecond)
	}
	_, err := m.Exec(context.Background(), info.ShellID, testSession, "echo second", time.Second)
	wantKind(t, err, failure.ShellBusy)
	openGate()
	wg.Wait()
	res := run(t, m, info.ShellID, "echo third")
	if res.Stdout.Text != "third\n" {
		t.Fatalf("after busy: %+v", res)
	}
}

func TestTimeoutResyncKeepsTheShell(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		run(t, m, info.ShellID, "KEEP=kept; sleep 60 & BG=$!")
		start := time.Now()
		res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo before; sleep 30; echo never", 300*time.Millisecond)
		if err != nil {
			t.Fatalf("timeout: %v", err)
		}
		if !res.TimedOut || res.State != Ready || res.ExitCode == 0 || res.Stdout.Text != "before\n" || time.Since(start) > 5*time.Second {
			t.Fatalf("timed-out result: %+v", res)
		}
		res = run(t, m, info.ShellID, "echo $KEEP; kill -0 $BG && echo background-alive")
		if res.Stdout.Text != "kept\nbackground-alive\n" {
			t.Fatalf("shell after resync: %+v", res)
		}
		// The interrupt unwinds function levels: f returns, the rest of
		// the command is then quick.
		res, err = m.Exec(context.Background(), info.ShellID, testSession, "f() { sleep 30; echo in-f; }; f; echo after-f", 300*time.Millisecond)
		if err != nil || !res.TimedOut || res.State != Ready || strings.Contains(res.Stdout.Text, "in-f") {
			t.Fatalf("nested: %+v %v", res, err)
		}
		res = run(t, m, info.ShellID, "return 7")
		if res.ExitCode != 7 || res.State != Ready {
			t.Fatalf("return: %+v", res)
		}
	})
}

func TestSetEFailureEndsTheShell(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Bash)
	run(t, m, info.ShellID, "set -e")
	res, err := m.Exec(context.Background(), info.ShellID, testSession, "false", 5*time.Second)
	if err != nil || !res.ShellExited || res.ExitCode != 1 || res.State != Lost {
		t.Fatalf("set -e: %+v %v", res, err)
	}
}

func TestTimeoutWithoutResyncResets(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{ResyncWait: 300 * time.Millisecond})
		info, _ := openShell(t, m, testSession, d)
		pid := m.pidOf(info.ShellID)
		run(t, m, info.ShellID, "sleep 60 &")
		res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo partial; trap '' INT; sleep 60", 300*time.Millisecond)
		wantKind(t, err, failure.ShellResetRequired)
		if !res.TimedOut || res.State != Lost || res.Stdout.Text != "partial\n" {
			t.Fatalf("reset result: %+v", res)
		}
		waitGone(t, pid) // the background sleep too
		_, err = m.Exec(context.Background(), info.ShellID, testSession, "echo again", time.Second)
		wantKind(t, err, failure.ShellResetRequired)
		st, _ := m.Status(info.ShellID, testSession)
		if st.State != Lost || st.EndReason != EndResyncFailed {
			t.Fatalf("status: %+v", st)
		}
		// A lost shell no longer counts: the session may open another.
		openShell(t, m, testSession, d)
	})
}

func TestCancellationInterrupts(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Sh)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := m.Exec(ctx, info.ShellID, testSession, "sleep 30", time.Minute)
	if err != nil || !res.Cancelled || res.TimedOut || res.State != Ready {
		t.Fatalf("cancelled: %+v %v", res, err)
	}
}

func TestExitEndsTheShell(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		pid := m.pidOf(info.ShellID)
		res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo bye; echo err >&2; sleep 60 & exit 3", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !res.ShellExited || res.ExitCode != 3 || res.State != Lost || res.Stdout.Text != "bye\n" || res.Stderr.Text != "err\n" {
			t.Fatalf("exit: %+v", res)
		}
		waitGone(t, pid)
		_, err = m.Exec(context.Background(), info.ShellID, testSession, "echo", time.Second)
		wantKind(t, err, failure.ShellResetRequired)
		if m.Live() != 0 {
			t.Fatalf("%d live shells", m.Live())
		}
	})
}

func TestCloseIsTerminalAndIdempotent(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Bash)
	pid := m.pidOf(info.ShellID)
	st, changed, err := m.CloseShell(info.ShellID, testSession)
	if err != nil || !changed || st.State != Closed || st.EndReason != EndClosed {
		t.Fatalf("close: %+v %v %v", st, changed, err)
	}
	waitGone(t, pid)
	st, changed, err = m.CloseShell(info.ShellID, testSession)
	if err != nil || changed || st.State != Closed {
		t.Fatalf("second close: %+v %v %v", st, changed, err)
	}
	_, err = m.Exec(context.Background(), info.ShellID, testSession, "echo", time.Second)
	wantKind(t, err, failure.ShellClosed)
	// A new shell for the session gets a new id; the old one stays
	// closed.
	next, _ := openShell(t, m, testSession, Sh)
	if next.ShellID == info.ShellID {
		t.Fatal("id reused")
	}
	_, err = m.Exec(context.Background(), info.ShellID, testSession, "echo", time.Second)
	wantKind(t, err, failure.ShellClosed)
	if !m.CloseSession(testSession) || m.CloseSession(testSession) {
		t.Fatal("CloseSession")
	}
	st, _ = m.Status(next.ShellID, testSession)
	if st.State != Closed || st.EndReason != EndSessionClosed {
		t.Fatalf("after CloseSession: %+v", st)
	}
}

func TestCloseDuringCommand(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Sh)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Exec(context.Background(), info.ShellID, testSession, "trap '' TERM; sleep 60", time.Minute)
		errc <- err
	}()
	for st, _ := m.Status(info.ShellID, testSession); st.State != Busy; st, _ = m.Status(info.ShellID, testSession) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if _, changed, _ := m.CloseShell(info.ShellID, testSession); !changed {
		t.Fatal("not closed")
	}
	select {
	case err := <-errc:
		wantKind(t, err, failure.ShellClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("exec did not return after close")
	}
}

func TestOwnershipAndLimits(t *testing.T) {
	m := newManager(t, Options{MaxShells: 2})
	info, root := openShell(t, m, testSession, Sh)
	_, err := m.Open(context.Background(), OpenSpec{SessionID: testSession, ProjectRoot: root, Cwd: root})
	wantKind(t, err, failure.Conflict)
	if failure.DetailOf(err)["shell_id"] != info.ShellID {
		t.Fatalf("conflict detail: %v", failure.DetailOf(err))
	}
	other := "wc_sess_00000000000000000000000000000002"
	marker := filepath.Join(root, "ran")
	_, err = m.Exec(context.Background(), info.ShellID, other, "touch "+marker, time.Second)
	wantKind(t, err, failure.PermissionDenied)
	_, err = m.Status(info.ShellID, other)
	wantKind(t, err, failure.PermissionDenied)
	_, _, err = m.CloseShell(info.ShellID, other)
	wantKind(t, err, failure.PermissionDenied)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a foreign session's command ran")
	}
	openShell(t, m, other, Sh)
	_, err = m.Open(context.Background(), OpenSpec{SessionID: "wc_sess_00000000000000000000000000000003", ProjectRoot: root, Cwd: root})
	wantKind(t, err, failure.Unavailable)
	_, err = m.Exec(context.Background(), "wc_shell_00000000000000000000000000000000", testSession, "echo", time.Second)
	wantKind(t, err, failure.NotFound)
	_, err = m.Exec(context.Background(), "bogus", testSession, "echo", time.Second)
	wantKind(t, err, failure.InvalidArguments)
	for _, bad := range []string{"", "  ", strings.Repeat("x", MaxCommandBytes+1), "a\x00b", "\xff"} {
		_, err = m.Exec(context.Background(), info.ShellID, testSession, bad, time.Second)
		wantKind(t, err, failure.InvalidArguments)
	}
	res := run(t, m, info.ShellID, "echo "+strings.Repeat("y", MaxCommandBytes-5))
	if res.Stdout.TotalBytes != MaxCommandBytes-5+1 {
		t.Fatalf("largest command: %d bytes of output", res.Stdout.TotalBytes)
	}
	// The largest command made of quotes (each grows fourfold when
	// quoted for the wrapper).
	quotes := strings.Repeat("'", MaxCommandBytes-8)
	res = run(t, m, info.ShellID, `echo "`+quotes+`"`)
	if res.ExitCode != 0 || res.Stdout.TotalBytes != int64(len(quotes)+1) {
		t.Fatalf("quote-dense command: %+v", res.Stdout.TotalBytes)
	}
	_, err = m.Open(context.Background(), OpenSpec{SessionID: "s", ProjectRoot: root, Cwd: "/"})
	wantKind(t, err, failure.PermissionDenied)
	_, err = m.Open(context.Background(), OpenSpec{SessionID: "s", ProjectRoot: root, Cwd: filepath.Join(root, "missing")})
	wantKind(t, err, failure.NotStarted)
	_, err = m.Open(context.Background(), OpenSpec{SessionID: "s", ProjectRoot: root, Cwd: root, Shell: "zsh"})
	wantKind(t, err, failure.InvalidArguments)
}

func TestIdleExpiryReleasesTheProcess(t *testing.T) {
	m := newManager(t, Options{IdleTimeout: 500 * time.Millisecond})
	info, _ := openShell(t, m, testSession, Sh)
	pid := m.pidOf(info.ShellID)
	run(t, m, info.ShellID, "sleep 1.2") // a running command is never idle
	waitGone(t, pid)
	st, _ := m.Status(info.ShellID, testSession)
	if st.State != Closed || st.EndReason != EndIdleExpired {
		t.Fatalf("status: %+v", st)
	}
	_, err := m.Exec(context.Background(), info.ShellID, testSession, "echo", time.Second)
	wantKind(t, err, failure.ShellClosed)
}

func TestManagerCloseKillsEverything(t *testing.T) {
	m := NewManager(Options{Getenv: testGetenv})
	var pids []int
	var ids []string
	for i, sess := range []string{testSession, "wc_sess_00000000000000000000000000000002"} {
		info, _ := openShell(t, m, sess, []Dialect{Sh, Bash}[i])
		pids = append(pids, m.pidOf(info.ShellID))
		ids = append(ids, info.ShellID)
	}
	run(t, m, ids[0], "sleep 60 &")
	errc := make(chan error, 1)
	go func() {
		_, err := m.Exec(context.Background(), ids[1], "wc_sess_00000000000000000000000000000002", "sleep 60", time.Minute)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	m.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %s", d)
	}
	for _, pid := range pids {
		if runner.CountGroup(pid) != 0 {
			t.Fatalf("group %d survived Close", pid)
		}
	}
	wantKind(t, <-errc, failure.ShellClosed)
	_, err := m.Open(context.Background(), OpenSpec{SessionID: "x", ProjectRoot: "/tmp", Cwd: "/tmp"})
	wantKind(t, err, failure.Unavailable)
	m.Close()
}

func TestHugeOutputIsBounded(t *testing.T) {
	m := newManager(t, Options{TailBytes: 4096})
	info, _ := openShell(t, m, testSession, Sh)
	res := run(t, m, info.ShellID, "yes 0123456789 | head -c 3000000; yes e | head -c 500000 >&2; printf END")
	if !res.Stdout.Truncated || res.Stdout.TotalBytes != 3000003 || len(res.Stdout.Text) > 4096 || !strings.HasSuffix(res.Stdout.Text, "END") {
		t.Fatalf("stdout: truncated=%v total=%d len=%d", res.Stdout.Truncated, res.Stdout.TotalBytes, len(res.Stdout.Text))
	}
	if !res.Stderr.Truncated || res.Stderr.TotalBytes != 500000 || len(res.Stderr.Text) > 4096 {
		t.Fatalf("stderr: %+v", res.Stderr.TotalBytes)
	}
	res = run(t, m, info.ShellID, "echo small")
	if res.Stdout.Text != "small\n" || res.Stdout.Truncated {
		t.Fatalf("after huge output: %+v", res)
	}
}

func TestBackgroundOutputBetweenCommandsIsDropped(t *testing.T) {
	m := newManager(t, Options{})
	info, _ := openShell(t, m, testSession, Sh)
	// The background job prints only once the first command has ended
	// (the gate), and the next command starts only once both lines were
	// read and dropped: no timing decides which command they follow.
	gate := filepath.Join(t.TempDir(), "gate")
	run(t, m, info.ShellID, "(while [ ! -e '"+gate+"' ]; do sleep 0.01; done; echo late; echo late >&2) &")
	out, errs := m.streams(info.ShellID)
	outBase, errBase := out.droppedBytes(), errs.droppedBytes()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); out.droppedBytes() < outBase+5 || errs.droppedBytes() < errBase+5; {
		if time.Now().After(deadline) {
			t.Fatalf("the background lines were not dropped: %d and %d bytes", out.droppedBytes()-outBase, errs.droppedBytes()-errBase)
		}
		time.Sleep(time.Millisecond)
	}
	res := run(t, m, info.ShellID, "echo mine")
	if res.Stdout.Text != "mine\n" || res.Stderr.Text != "" {
		t.Fatalf("background output bled: %+v", res)
	}
}

func TestStreamSplitsAtSentinelAcrossReads(t *testing.T) {
	r, w, _ := os.Pipe()
	st := newStream(r, 1024)
	go st.loop()
	sent := "ABCDEFGHIJKLMNOP"
	tail, seen := st.arm(sent, false)
	for _, chunk := range []string{"hello AB", "CDEFGH", "IJKLMNOP", "after"} {
		w.WriteString(chunk)
		time.Sleep(5 * time.Millisecond)
	}
	<-seen
	if got := tail.Snapshot().Text; got != "hello " {
		t.Fatalf("tail %q", got)
	}
	w.Close()
	<-st.done
	if st.dropped != 5 {
		t.Fatalf("dropped %d", st.dropped)
	}
	r.Close()
}

func TestNoDescriptorLeak(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	m := NewManager(Options{Getenv: testGetenv})
	// One shell first, so that what the process sets up once (the
	// runtime's poller, process containment) is not counted as a leak.
	warm, _ := openShell(t, m, testSession, Sh)
	if _, _, err := m.CloseShell(warm.ShellID, testSession); err != nil {
		t.Fatal(err)
	}
	before := count()
	for i := 0; i < 5; i++ {
		info, _ := openShell(t, m, testSession, Sh)
		run(t, m, info.ShellID, "echo hi; sleep 60 &")
		if _, _, err := m.CloseShell(info.ShellID, testSession); err != nil {
			t.Fatal(err)
		}
	}
	info, _ := openShell(t, m, testSession, Bash)
	m.Exec(context.Background(), info.ShellID, testSession, "exit 1", time.Second)
	m.Close()
	if after := count(); after > before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

// The framing's descriptors are restored after every command, whatever
// the command did to them or to the shell's stdin.
func TestFramingSurvivesDescriptorTampering(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect) {
		m := newManager(t, Options{})
		info, _ := openShell(t, m, testSession, d)
		for _, c := range []string{"exec 3>&- 4>&- 5>&-", "exec 3>/dev/null 4>/dev/null 5>/dev/null", "exec 0</dev/null", "exec 2>&1"} {
			if res := run(t, m, info.ShellID, c); res.ExitCode != 0 || res.State != Ready {
				t.Fatalf("%q: %+v", c, res)
			}
		}
		res := run(t, m, info.ShellID, "echo merged >&2; echo out")
		if res.Stdout.Text != "merged\nout\n" || res.Stderr.Text != "" {
			t.Fatalf("after exec 2>&1: %+v", res)
		}
	})
}

// An unknown shell id is not_found, and the message names what held the
// shells: a restarted server or runner has lost them.
func TestUnknownShellNamesItsHolder(t *testing.T) {
	id := IDPrefix + strings.Repeat("a", 32)
	for holder, want := range map[string]string{"": "previous run of the server", "runner": "previous run of the runner"} {
		m := NewManager(Options{Holder: holder})
		_, err := m.Status(id, "s")
		m.Close()
		if !failure.Is(err, failure.NotFound) || !strings.Contains(failure.MessageOf(err), want) {
			t.Errorf("holder %q: %v", holder, err)
		}
	}
}

// CapTimeout shortens a longer timeout (a runner's max_timeout_secs) instead
// of refusing it: the command times out at the cap and the shell stays.
func TestCapTimeoutShortensTheTimeout(t *testing.T) {
	m := newManager(t, Options{CapTimeout: 300 * time.Millisecond})
	info, _ := openShell(t, m, testSession, Sh)
	res, err := m.Exec(context.Background(), info.ShellID, testSession, "echo before; sleep 30; echo never", time.Hour)
	if err != nil || !res.TimedOut || res.State != Ready || res.Stdout.Text != "before\n" {
		t.Fatalf("a command past the cap: %v %+v", err, res)
	}
}
