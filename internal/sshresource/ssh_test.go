//go:build unix

package sshresource_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// runBound bounds one ssh invocation in these tests: a hung client is a
// failure, never a hang of the suite.
const runBound = 2 * sshresource.ReadyTimeout

type result struct {
	stdout, stderr string
	code           int
}

// run starts argv with env (nil: the scrubbed environment of the test
// process) and stdin from /dev/null, and waits for it.
func run(t *testing.T, argv []string, env []string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if env == nil {
		env = sshresource.ClientEnv(os.Environ())
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q did not end within %s (it hung)", argv[len(argv)-1], runBound)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %q: %v", argv, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.ExitCode()}
}

// direct returns the argv of command on r over its own connection.
func direct(t *testing.T, r sshresource.Resource, cwd, command string) []string {
	t.Helper()
	remote, err := sshresource.RemoteCommand(cwd, command)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := r.Argv(remote)
	if err != nil {
		t.Fatal(err)
	}
	return argv
}

func through(t *testing.T, m *sshresource.Master, cwd, command string) []string {
	t.Helper()
	remote, err := sshresource.RemoteCommand(cwd, command)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := m.Argv(remote)
	if err != nil {
		t.Fatal(err)
	}
	return argv
}

func newPool(t *testing.T) *sshresource.Pool {
	t.Helper()
	p, err := sshresource.NewPool("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.CloseAll(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func master(t *testing.T, p *sshresource.Pool, r sshresource.Resource, session string, gen uint64) *sshresource.Master {
	t.Helper()
	m, err := p.Master(context.Background(), sshresource.Key{Session: session, Resource: r.Name, Generation: gen}, r)
	if err != nil {
		t.Fatalf("Master(%s, %d): %v", session, gen, err)
	}
	return m
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestCommandRunsRemotely(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("local")
	m := master(t, newPool(t), r, "wc_sess_a", 1)
	for name, argv := range map[string][]string{
		"direct": direct(t, r, "", "echo out; echo err >&2; exit 3"),
		"master": through(t, m, "", "echo out; echo err >&2; exit 3"),
	} {
		got := run(t, argv, nil)
		if got.stdout != "out\n" || got.stderr != "err\n" || got.code != 3 {
			t.Errorf("%s: got %+v, want out/err/3", name, got)
		}
	}
}

func TestRemoteCwdPrecedenceOnAHost(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	base := t.TempDir()
	dirs := map[string]string{}
	for _, n := range []string{"call", "session", "it's resource"} {
		dirs[n] = filepath.Join(base, n)
		if err := os.Mkdir(dirs[n], 0o700); err != nil {
			t.Fatal(err)
		}
	}
	home, err := filepath.EvalSymlinks(s.Home)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Resource("local")
	r.DefaultCwd = dirs["it's resource"]
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	noDefault := s.Resource("local")
	for _, c := range []struct {
		name, call, session string
		r                   sshresource.Resource
		want                string
	}{
		{"per-call", dirs["call"], dirs["session"], r, dirs["call"]},
		{"session", "", dirs["session"], r, dirs["session"]},
		{"resource", "", "", r, dirs["it's resource"]},
		{"login directory", "", "", noDefault, home},
	} {
		t.Run(c.name, func(t *testing.T) {
			cwd := sshresource.RemoteCwd(c.call, c.session, c.r.DefaultCwd)
			got := run(t, direct(t, c.r, cwd, "pwd -P"), nil)
			want, _ := filepath.EvalSymlinks(c.want)
			if got.code != 0 || got.stdout != want+"\n" {
				t.Errorf("pwd = %+v, want %q", got, want)
			}
		})
	}
	t.Run("missing cwd runs nothing", func(t *testing.T) {
		marker := filepath.Join(base, "ran")
		got := run(t, direct(t, r, filepath.Join(base, "nope"), "echo one\ntouch "+sshresource.Quote(marker)), nil)
		if got.code == 0 || strings.Contains(got.stdout, "one") {
			t.Errorf("a command ran after a failed cd: %+v", got)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the second line ran after a failed cd: %v", err)
		}
	})
}

func TestWrongHostKeyIsRefused(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	dir := t.TempDir()
	_, otherPub := sshtest.Keygen(t, dir, "other_host")
	wrong := filepath.Join(dir, "known_hosts_wrong")
	empty := filepath.Join(dir, "known_hosts_empty")
	if err := os.WriteFile(wrong, []byte(fmt.Sprintf("[%s]:%d %s\n", s.Host, s.Port, otherPub)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, kh := range map[string]string{"another key": wrong, "unknown host": empty} {
		t.Run(name, func(t *testing.T) {
			before, _ := os.ReadFile(kh)
			r := s.Resource("local")
			r.KnownHostsFile = kh
			marker := filepath.Join(t.TempDir(), "ran")
			got := run(t, direct(t, r, "", "touch "+sshresource.Quote(marker)), nil)
			if got.code != sshresource.ExitConnectionFailed {
				t.Errorf("exit %d, want %d (%s)", got.code, sshresource.ExitConnectionFailed, got.stderr)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the command ran on a host with the wrong key")
			}
			if k := failure.KindOf(sshresource.Classify(r.Name, []byte(got.stderr))); k != failure.PermissionDenied {
				t.Errorf("Classify = %q, want %q (stderr %q)", k, failure.PermissionDenied, got.stderr)
			}
			_, err := newPool(t).Master(context.Background(), sshresource.Key{Session: "s", Resource: r.Name}, r)
			if failure.KindOf(err) != failure.PermissionDenied {
				t.Errorf("Master = %v, want %q", err, failure.PermissionDenied)
			}
			if err != nil && strings.Contains(err.Error(), s.Host) {
				t.Errorf("the error shows the host: %v", err)
			}
			if after, _ := os.ReadFile(kh); !bytes.Equal(before, after) {
				t.Errorf("known_hosts_file was written: %q", after)
			}
		})
	}
}

// BatchMode: a key the server does not accept fails at once. The server
// accepts passwords and an askpass program is offered through the
// environment; the control run, with BatchMode off, shows the askpass
// program would be asked.
func TestNoPasswordPrompt(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{PasswordAuthentication: true})
	dir := t.TempDir()
	stranger, _ := sshtest.Keygen(t, dir, "stranger")
	asked := filepath.Join(dir, "asked")
	askpass := filepath.Join(dir, "askpass")
	if err := os.WriteFile(askpass, []byte("#!/bin/sh\necho asked >> "+sshresource.Quote(asked)+"\necho not-the-password\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	r := s.Resource("local")
	r.IdentityFile = stranger
	argv := direct(t, r, "", "true")

	got := run(t, argv, env)
	if got.code != sshresource.ExitConnectionFailed {
		t.Errorf("exit %d, want %d (%s)", got.code, sshresource.ExitConnectionFailed, got.stderr)
	}
	if _, err := os.Stat(asked); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the client prompted for a password")
	}
	if k := failure.KindOf(sshresource.Classify(r.Name, []byte(got.stderr))); k != failure.PermissionDenied {
		t.Errorf("Classify = %q, want %q (stderr %q)", k, failure.PermissionDenied, got.stderr)
	}

	control := slices.Clone(argv)
	for i, a := range control {
		switch a {
		case "BatchMode=yes":
			control[i] = "BatchMode=no"
		case "PreferredAuthentications=publickey":
			control[i] = "PreferredAuthentications=publickey,password"
		}
	}
	run(t, control, env)
	if _, err := os.Stat(asked); err != nil {
		t.Fatalf("control: without BatchMode the askpass program was not asked, so this test proves nothing: %v", err)
	}
}

// startAgent starts a real ssh-agent in the foreground and returns its
// socket once it listens (it prints the socket after binding it).
func startAgent(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, sock) {
		t.Fatalf("ssh-agent: %q, %v", line, err)
	}
	return sock
}

func TestNoAgentForwarding(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	sock := startAgent(t)
	env := append(sshresource.ClientEnv(os.Environ()), "SSH_AUTH_SOCK="+sock)
	r := s.Resource("local")
	const probe = `echo "agent=${SSH_AUTH_SOCK:-none}"`
	m := master(t, newPool(t), r, "wc_sess_a", 1)
	for name, argv := range map[string][]string{
		"direct": direct(t, r, "", probe),
		"master": through(t, m, "", probe),
	} {
		if got := run(t, argv, env); got.code != 0 || got.stdout != "agent=none\n" {
			t.Errorf("%s: %+v, want agent=none", name, got)
		}
	}
	// Control: the same argv asking for forwarding gets an agent, so the
	// server would forward one.
	control := slices.DeleteFunc(direct(t, r, "", probe), func(a string) bool { return a == "-a" })
	control[slices.Index(control, "ForwardAgent=no")] = "ForwardAgent=yes"
	if got := run(t, control, env); got.code != 0 || got.stdout == "agent=none\n" {
		t.Fatalf("control: forwarding on still shows no agent (%+v), so this test proves nothing", got)
	}
}

// connection is the client side of the remote shell's SSH_CONNECTION
// (address and port): one TCP connection, one value.
const connection = `set -- $SSH_CONNECTION; echo "$1:$2"`

func TestMasterServesOneShotCommandsEachOnItsOwnChannel(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("local")
	m := master(t, newPool(t), r, "wc_sess_a", 1)
	if m.ControlPath() == "" || !slices.Contains(through(t, m, "", "true"), "ControlMaster=no") {
		t.Fatalf("master argv does not name the master: %q", through(t, m, "", "true"))
	}

	// Every command through the master shares its one connection; every
	// direct command has its own.
	var viaMaster, viaDirect []string
	for range 3 {
		viaMaster = append(viaMaster, run(t, through(t, m, "", connection), nil).stdout)
		viaDirect = append(viaDirect, run(t, direct(t, r, "", connection), nil).stdout)
	}
	if len(slices.Compact(slices.Clone(viaMaster))) != 1 || viaMaster[0] == "" {
		t.Errorf("commands through the master used several connections: %q", viaMaster)
	}
	for _, d := range viaDirect {
		if d == viaMaster[0] || d == "" {
			t.Errorf("a direct command used the master's connection: %q", d)
		}
	}
	if slices.Sort(viaDirect); len(slices.Compact(viaDirect)) != 3 {
		t.Errorf("direct commands shared a connection: %q", viaDirect)
	}

	// Two commands at once, each its own channel: the first waits on a
	// FIFO the second writes, and each has its own output and status.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
		t.Fatalf("mkfifo: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	argv := through(t, m, "", "read line < "+sshresource.Quote(fifo)+"; echo got $line; "+connection+"; exit 4")
	first := exec.CommandContext(ctx, argv[0], argv[1:]...)
	first.Env = sshresource.ClientEnv(os.Environ())
	var firstOut bytes.Buffer
	first.Stdout = &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	second := run(t, through(t, m, "", "echo ping > "+sshresource.Quote(fifo)+"; "+connection+"; exit 5"), nil)
	err := first.Wait()
	if second.code != 5 || second.stdout != viaMaster[0] {
		t.Errorf("second command: %+v", second)
	}
	if first.ProcessState.ExitCode() != 4 || firstOut.String() != "got ping\n"+viaMaster[0] {
		t.Errorf("first command: %v %q", err, firstOut.String())
	}
}

func TestCloseEndsTheMaster(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("local")
	m := master(t, newPool(t), r, "wc_sess_a", 1)
	path := m.ControlPath()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("control socket: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("control directory: %v %v", fi, err)
	}
	if len(path) > sshresource.MaxControlPathBytes {
		t.Errorf("control path is %d bytes, more than %d", len(path), sshresource.MaxControlPathBytes)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(m.Exited()) {
		t.Error("the master's process still runs after Close")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the control socket remains: %v", err)
	}
	if err := m.Check(context.Background()); failure.KindOf(err) != failure.Unavailable {
		t.Errorf("Check after Close = %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestGenerationChangeRetiresTheMaster(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("local")
	p := newPool(t)
	old := master(t, p, r, "wc_sess_a", 1)
	if again := master(t, p, r, "wc_sess_a", 1); again != old {
		t.Fatal("the same key started a second master")
	}

	// A command in flight on the old master.
	runs := filepath.Join(t.TempDir(), "runs")
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	argv := through(t, old, "", "echo run >> "+sshresource.Quote(runs)+"; echo started; read x; echo after")
	inflight := exec.CommandContext(ctx, argv[0], argv[1:]...)
	inflight.Env = sshresource.ClientEnv(os.Environ())
	stdin, err := inflight.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := inflight.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := inflight.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "started\n" {
		t.Fatalf("in-flight command: %q %v", line, err)
	}

	next := master(t, p, r, "wc_sess_a", 2)
	if next == old || next.ControlPath() == old.ControlPath() {
		t.Fatal("the new generation reused the old master")
	}
	if !closed(old.Exited()) {
		t.Error("the old master still runs")
	}
	if _, err := os.Stat(old.ControlPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old control socket remains: %v", err)
	}
	rest, _ := io.ReadAll(out)
	_ = inflight.Wait()
	if code := inflight.ProcessState.ExitCode(); code != sshresource.ExitConnectionFailed || len(rest) != 0 {
		t.Errorf("the in-flight command exited %d with %q after its master closed, want %d and nothing", code, rest, sshresource.ExitConnectionFailed)
	}
	if got, _ := os.ReadFile(runs); string(got) != "run\n" {
		t.Errorf("the in-flight command ran %q, want once", got)
	}

	if _, err := p.Master(context.Background(), sshresource.Key{Session: "wc_sess_a", Resource: r.Name, Generation: 1}, r); failure.KindOf(err) != failure.Conflict {
		t.Errorf("an older generation = %v, want %q", err, failure.Conflict)
	}
	if got := run(t, through(t, next, "", "echo new"), nil); got.stdout != "new\n" {
		t.Errorf("the new master: %+v", got)
	}
	if again := master(t, p, r, "wc_sess_a", 2); again != next {
		t.Error("the current generation started a second master")
	}
}

func TestPoolCloseSession(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	p := newPool(t)
	a1 := master(t, p, s.Resource("one"), "wc_sess_a", 1)
	a2 := master(t, p, s.Resource("two"), "wc_sess_a", 1)
	b := master(t, p, s.Resource("one"), "wc_sess_b", 1)
	p.Close("wc_sess_a")
	for _, m := range []*sshresource.Master{a1, a2} {
		if !closed(m.Exited()) {
			t.Errorf("%s: master still runs after Close(session)", m.Key().Resource)
		}
		if _, err := os.Stat(m.ControlPath()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: socket remains: %v", m.Key().Resource, err)
		}
	}
	if err := b.Check(context.Background()); err != nil || p.Len() != 1 {
		t.Errorf("another session's master: %v, Len %d", err, p.Len())
	}
	dir := filepath.Dir(b.ControlPath())
	if err := p.CloseAll(); err != nil {
		t.Fatal(err)
	}
	if !closed(b.Exited()) {
		t.Error("CloseAll left a master running")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CloseAll left the socket directory: %v", err)
	}
}

func TestMaxMasters(t *testing.T) {
	s := sshtest.Start(t, sshtest.Options{})
	r := s.Resource("local")
	p := newPool(t)
	for i := range sshresource.MaxMasters {
		master(t, p, r, fmt.Sprintf("wc_sess_%d", i), 1)
	}
	_, err := p.Master(context.Background(), sshresource.Key{Session: "wc_sess_over", Resource: r.Name, Generation: 1}, r)
	if failure.KindOf(err) != failure.Unavailable {
		t.Fatalf("master %d = %v, want %q", sshresource.MaxMasters+1, err, failure.Unavailable)
	}
	if p.Len() != sshresource.MaxMasters {
		t.Errorf("Len() = %d, want %d", p.Len(), sshresource.MaxMasters)
	}
	p.Close("wc_sess_0")
	master(t, p, r, "wc_sess_over", 1)
}

// A host that accepts the connection and never speaks SSH fails the
// master's start within ConnectTimeout, instead of hanging.
func TestSilentHostFailsWithinConnectTimeout(t *testing.T) {
	t.Parallel()                             // it waits, idle, for ConnectTimeout
	s := sshtest.Start(t, sshtest.Options{}) // only for its key files
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	r := s.Resource("silent")
	r.Port = l.Addr().(*net.TCPAddr).Port

	// A start its caller gives up on ends at once: the master, still
	// waiting for the banner, takes no exit request and is killed
	// without CloseTimeout's wait.
	p := newPool(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := p.Master(ctx, sshresource.Key{Session: "s", Resource: r.Name}, r); failure.KindOf(err) != failure.Cancelled {
		t.Errorf("a cancelled start = %v, want %q", err, failure.Cancelled)
	}
	if d := time.Since(start); d >= sshresource.CloseTimeout || p.Len() != 0 {
		t.Errorf("a cancelled start took %s and left %d masters", d, p.Len())
	}

	start = time.Now()
	_, err = newPool(t).Master(context.Background(), sshresource.Key{Session: "s", Resource: r.Name}, r)
	if failure.KindOf(err) != failure.Unavailable {
		t.Errorf("Master = %v, want %q", err, failure.Unavailable)
	}
	if d := time.Since(start); d >= sshresource.ReadyTimeout {
		t.Errorf("the start took %s, not bounded by ConnectTimeout %s", d, sshresource.ConnectTimeout)
	}
}

// A master sees none of the runner's environment beyond what ssh needs:
// a credential planted in the runner's environment is not in the master's
// (read from /proc, Linux only).
func TestMasterEnvironmentIsMinimal(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc to read a process's environment from")
	}
	const canary = "wc_pat_canary_for_the_master_environment"
	t.Setenv("WEBCODEX_TOKEN", canary)
	t.Setenv("SSH_AUTH_SOCK", "/nonexistent/agent")
	s := sshtest.Start(t, sshtest.Options{})
	m := master(t, newPool(t), s.Resource("local"), "wc_sess_a", 1)
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var environ []byte
	for _, p := range pids {
		cmdline, err := os.ReadFile(p)
		if err == nil && bytes.Contains(cmdline, []byte("ControlPath="+m.ControlPath()+"\x00-N\x00")) {
			if environ, err = os.ReadFile(filepath.Join(filepath.Dir(p), "environ")); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if environ == nil {
		t.Fatal("the master's process was not found in /proc")
	}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		k, _, _ := strings.Cut(string(kv), "=")
		if k != "" && !slices.Contains([]string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}, k) {
			t.Errorf("the master's environment holds %s", k)
		}
	}
	if bytes.Contains(environ, []byte(canary)) {
		t.Error("the master's environment holds the runner's credential")
	}
}
