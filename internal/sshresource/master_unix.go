//go:build unix

package sshresource

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Multiplexed reports whether this system runs ControlMaster connections;
// without them every command connects on its own.
const Multiplexed = true

// masterProc is the master's `ssh -N` child process.
type masterProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	stderr *tailBuffer
}

// masterEnvKeys are the only variables of the runner's environment a
// master and its control requests see: what ssh needs to find itself, its
// user and its locale. Nothing else (a runner's credentials, an agent
// socket, an askpass program) reaches them.
var masterEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}

func masterEnv() []string {
	var env []string
	for _, k := range masterEnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// newControlDir makes the Pool's private socket directory (0700).
func newControlDir(parent string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
		// The directory adds "/wcssh-" and up to 10 digits, the socket
		// "/" and its hashed name.
		if len(parent)+len("/wcssh-")+10+1+controlNameBytes > MaxControlPathBytes {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, "wcssh-")
	if err != nil {
		return "", failure.Wrap(failure.Unavailable, err, "cannot make the directory of ssh control sockets")
	}
	if len(dir)+1+controlNameBytes > MaxControlPathBytes {
		_ = os.Remove(dir)
		return "", failure.New(failure.InvalidArguments, "the directory of ssh control sockets makes socket paths longer than %d bytes", MaxControlPathBytes)
	}
	// MkdirTemp makes it 0700; say so rather than trust the umask.
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.Remove(dir)
		return "", failure.Wrap(failure.Unavailable, err, "cannot make the directory of ssh control sockets private")
	}
	return dir, nil
}

// startMaster starts `ssh -N` as a ControlMaster on path and returns once
// `ssh -O check` answers on it. On failure nothing is left running.
func startMaster(ctx context.Context, r Resource, key Key, path string) (*Master, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, failure.Wrap(failure.Unavailable, err, "ssh resource %q: cannot remove a stale control socket", r.Name)
	}
	argv := append(r.options(),
		"-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-o", "ControlPath="+path,
		"-N", "--", r.Host)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = masterEnv()
	cmd.SysProcAttr = masterProcAttr()
	tail := &tailBuffer{max: MaxStderrBytes}
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return nil, failure.Wrap(failure.Unavailable, err, "ssh resource %q: cannot start %s", r.Name, Program)
	}
	p := &masterProc{cmd: cmd, exited: make(chan struct{}), stderr: tail}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	m := &Master{key: key, res: r, path: path, proc: p}
	if err := m.waitReady(ctx); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// waitReady probes until the master answers `ssh -O check`, the master
// exits, ctx ends or ReadyTimeout passes.
func (m *Master) waitReady(ctx context.Context) error {
	deadline := time.NewTimer(ReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if _, err := os.Stat(m.path); err == nil && m.Check(ctx) == nil {
			return nil
		}
		select {
		case <-m.proc.exited:
			return Classify(m.key.Resource, m.proc.stderr.Bytes())
		case <-ctx.Done():
			return failure.Wrap(failure.Cancelled, ctx.Err(), "ssh resource %q: cancelled while its master started", m.key.Resource)
		case <-deadline.C:
			return failure.New(failure.Unavailable, "ssh resource %q: its master did not become ready within %s", m.key.Resource, ReadyTimeout)
		case <-tick.C:
		}
	}
}

// controlArgv is the argv of a control request (check, exit) to the
// master.
func (m *Master) controlArgv(op string) []string {
	return []string{Program, "-F", os.DevNull, "-o", "BatchMode=yes",
		"-o", "ControlPath=" + m.path, "-O", op, "--", m.res.Host}
}

// Check asks the master whether it is running (`ssh -O check`);
// failure.Unavailable when it does not answer.
func (m *Master) Check(ctx context.Context) error {
	argv := m.controlArgv("check")
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = masterEnv()
	if err := cmd.Run(); err != nil {
		return failure.New(failure.Unavailable, "ssh resource %q: its master does not answer", m.key.Resource)
	}
	return nil
}

// Exited is closed when the master's process has exited (Close, a lost
// connection, a kill).
func (m *Master) Exited() <-chan struct{} { return m.proc.exited }

// alive reports whether the master's process is still running.
func (m *Master) alive() bool {
	select {
	case <-m.proc.exited:
		return false
	default:
		return true
	}
}

// stop asks the master to exit, kills it when it does not within
// CloseTimeout, and removes its socket.
func (m *Master) stop() error {
	if m.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		argv := m.controlArgv("exit")
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = masterEnv()
		asked := cmd.Run() == nil
		cancel()
		// A master that took the request exits at once; one that did
		// not (still connecting, or wedged) is killed without a wait.
		wait := time.Duration(0)
		if asked {
			wait = CloseTimeout
		}
		t := time.NewTimer(wait)
		select {
		case <-m.proc.exited:
		case <-t.C:
			_ = m.proc.cmd.Process.Kill()
			<-m.proc.exited
		}
		t.Stop()
	}
	if err := os.Remove(m.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return failure.Wrap(failure.Internal, err, "ssh resource %q: cannot remove its control socket", m.key.Resource)
	}
	// A master that died before its rename leaves path.XXXXXXXXXXXXXXXX.
	if stale, _ := filepath.Glob(m.path + ".*"); len(stale) > 0 {
		for _, s := range stale {
			_ = os.Remove(s)
		}
	}
	return nil
}
