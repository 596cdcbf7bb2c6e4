package shell

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// shell is one live or ended shell process.
type shell struct {
	m        *Manager
	id       string
	session  string
	project  string
	root     string
	cwdRel   string
	dialect  Dialect
	openedAt time.Time
	// sandbox is what the shell asked of its confinement, mode the mode
	// in force (set by start).
	sandbox runner.Sandbox
	mode    runner.Mode
	// remote is set for a shell on an SSH resource (remote.go); remotePID
	// is its remote shell's pid once the handshake told it.
	remote    *Remote
	remotePID atomic.Int64

	cmd      *exec.Cmd
	unit     *runner.Unit // every process of the shell (runner containment)
	pid      int          // also the process group id
	stdin    *os.File
	ctrlR    *os.File
	ctrl     chan string // lines read from the control channel
	out      *stream
	errs     *stream
	exitCode int           // valid once exited is closed
	exited   chan struct{} // closed when the shell process has been reaped
	dying    chan struct{} // closed when release begins
	released chan struct{} // closed when the group is dead and the pipes closed

	mu        sync.Mutex
	state     State
	endReason string
	endedAt   time.Time
	lastUsed  time.Time
	commands  int64
}

// start spawns the shell process with its pipes; the caller holds m.mu.
func (s *shell) start(cwd string) (err error) {
	if err := platformSupport(); err != nil {
		return failure.Wrap(failure.Unavailable, err, "persistent shells are not available on this system")
	}
	env := runner.ChildEnv(s.m.opt.Getenv, nil)
	argv := []string{string(s.dialect)}
	if s.dialect == Bash {
		argv = append(argv, "--noprofile", "--norc")
	}
	if s.remote != nil {
		// The ssh client, whose remote command is the shell.
		if argv, err = s.remote.Argv(s.dialect.program()); err != nil {
			return err
		}
		env = sshresource.ClientEnv(env)
	}
	path, err := runner.LookPath(argv[0], env)
	if err != nil {
		return failure.New(failure.NotStarted, "%s: not found on PATH", argv[0])
	}
	conf, err := s.m.opt.Sandbox.Confine(s.sandbox)
	if err != nil {
		return failure.Wrap(failure.NotStarted, err, "cannot confine the shell")
	}
	defer conf.Close(s.m.opt.Sandbox)
	env = conf.Env(env)
	var files []*os.File // every pipe end, closed on failure
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return failure.Wrap(failure.NotStarted, err, "cannot create the shell's pipes")
	}
	outR, outW, err := pipe()
	if err != nil {
		return failure.Wrap(failure.NotStarted, err, "cannot create the shell's pipes")
	}
	errR, errW, err := pipe()
	if err != nil {
		return failure.Wrap(failure.NotStarted, err, "cannot create the shell's pipes")
	}
	var ctlR, ctlW *os.File
	var extra []*os.File
	if s.remote == nil {
		if ctlR, ctlW, err = pipe(); err != nil {
			return failure.Wrap(failure.NotStarted, err, "cannot create the shell's pipes")
		}
		// fd 3: control; fds 4 and 5: the framing's view of stdout and
		// stderr. A remote shell makes its own 4 and 5 (remote.go).
		extra = []*os.File{ctlW, outW, errW}
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: cwd, Env: env,
		Stdin: inR, Stdout: outW, Stderr: errW,
		ExtraFiles: extra, SysProcAttr: groupAttr(),
	}
	contain := s.m.opt.Contain
	if contain == nil {
		contain = runner.Setup()
	}
	if s.unit, err = contain.Start(cmd, s.id, conf.Start); err != nil {
		return failure.Wrap(failure.NotStarted, err, "cannot start %s", s.dialect)
	}
	s.mode = conf.Mode()
	// The child holds its ends now.
	for _, f := range []*os.File{inR, outW, errW, ctlW} {
		if f != nil {
			f.Close()
		}
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	s.stdin, s.ctrlR = inW, ctlR
	s.out = newStream(outR, s.m.opt.TailBytes)
	s.errs = newStream(errR, s.m.opt.TailBytes)
	s.exited = make(chan struct{})
	s.dying = make(chan struct{})
	s.released = make(chan struct{})
	s.m.wg.Add(3)
	go func() { defer s.m.wg.Done(); s.out.loop() }()
	go func() { defer s.m.wg.Done(); s.errs.loop() }()
	if s.remote == nil {
		s.ctrl = make(chan string, 8)
		s.m.wg.Go(s.readControl)
	}
	go func() {
		defer s.m.wg.Done()
		cmd.Wait()
		s.unit.Release()
		s.exitCode = cmd.ProcessState.ExitCode()
		close(s.exited)
		// A shell that ended on its own (exit, a signal from outside,
		// a lost connection) is lost; a no-op when it already ended.
		s.m.end(s, Lost, s.exitReason(), false)
	}()
	return nil
}

// readControl forwards the control channel's lines. Over-long lines are
// dropped: a real control line is short.
func (s *shell) readControl() {
	defer close(s.ctrl)
	r := bufio.NewReaderSize(s.ctrlR, 256)
	skipping := false
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			skipping = true
			continue
		}
		if err != nil {
			return
		}
		if skipping {
			skipping = false
			continue
		}
		select {
		case s.ctrl <- string(line[:len(line)-1]):
		case <-s.dying:
			return
		}
	}
}

// quote returns s as one single-quoted shell word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// split returns a random value as two quoted printf arguments, so that no
// trace or echo of the wrapper ever contains the value contiguously.
func split(v string) string {
	h := len(v) / 2
	return "'" + v[:h] + "' '" + v[h:] + "'"
}

// preamble is written once, before the handshake: an interrupt returns
// from the command's function (see wrapper) instead of ending the shell.
const preamble = "trap 'case ${__wc_in-} in 1) return 130;; esac' INT\n"

// wrapper is the text written to the shell for one command; see the
// package documentation.
func wrapper(command, token, outSentinel, errSentinel string) string {
	var b strings.Builder
	b.Grow(len(command) + 640)
	defineRun(&b, command)
	b.WriteString("__wc_run \"$@\" 3>&- 4>&- 5>&- </dev/null; __wc_s=$?; __wc_in=; \\command unset __wc_c; ")
	b.WriteString("\\command printf '%s%s' " + split(outSentinel) + " >&4; ")
	b.WriteString("\\command printf '%s%s' " + split(errSentinel) + " >&5; ")
	b.WriteString("\\command printf '%s%s %d\\n' " + split(token) + " \"$__wc_s\" >&3\n")
	return b.String()
}

// defineRun writes the start of a wrapper: the command as data and the
// function that evals it.
func defineRun(b *strings.Builder, command string) {
	b.WriteString("__wc_c=")
	b.WriteString(quote(command))
	b.WriteString("; __wc_run() { __wc_in=1; \\command eval \"$__wc_c\"; }; ")
}

// parseControl returns the status carried by a control line with token.
// Text before the token (a partial line some process wrote to the
// channel) is ignored; the token itself cannot be forged.
func parseControl(line, token string) (int, bool) {
	i := strings.LastIndex(line, token+" ")
	if i < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(line[i+len(token)+1:])
	if err != nil {
		return 0, false
	}
	return n, true
}

// run sends one framed command (after init, raw shell text of the
// Manager's own) and waits for it. The caller has marked the shell busy.
func (s *shell) run(ctx context.Context, command string, timeout time.Duration, init string) (Result, error) {
	m := s.m
	token, outSentinel, errSentinel := m.newToken(), randomHex(), randomHex()
	// A remote shell's stdout carries the token and the status instead
	// of the control channel (remote.go); status is closed when they have
	// been read.
	var text string
	var status <-chan struct{}
	if s.remote == nil {
		text = init + wrapper(command, token, outSentinel, errSentinel)
	} else {
		outSentinel, text = token, init+remoteWrapper(command, token, errSentinel)
	}
	outTail, outSeen := s.out.arm(outSentinel, s.remote != nil)
	errTail, errSeen := s.errs.arm(errSentinel, false)
	if s.remote != nil {
		status = outSeen
	}
	res := Result{ExitCode: -1}
	start := time.Now()
	finish := func() {
		res.Duration = time.Since(start)
		res.Stdout, res.Stderr = outTail.Snapshot(), errTail.Snapshot()
	}

	ctrl := s.ctrl
	var damaged, resync <-chan time.Time
	s.stdin.SetWriteDeadline(start.Add(writeTimeout))
	if _, err := io.WriteString(s.stdin, text); err != nil {
		// The shell is gone, or not reading: unless it exited, nothing
		// proves where its input stands.
		ctrl, damaged = nil, time.After(outputDrain)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	guard := time.NewTicker(runner.GuardInterval)
	defer guard.Stop()
	done := ctx.Done()
	// The interrupt is repeated during the resync window: each one ends
	// the current foreground process and returns from one function level.
	var again <-chan time.Time
	stopAgain := func() {}
	defer func() { stopAgain() }()
	interrupt := func() {
		s.interrupt()
		resync = time.After(m.opt.ResyncWait)
		t := time.NewTicker(m.opt.ResyncWait / 4)
		stopAgain = t.Stop
		again = t.C
	}
wait:
	for {
		select {
		case line, ok := <-ctrl:
			if !ok {
				ctrl, damaged = nil, time.After(outputDrain)
				continue
			}
			if code, ok := parseControl(line, token); ok {
				res.ExitCode = code
				break wait
			}
		case <-status:
			status, outSeen = nil, nil
			code, ok := s.out.status()
			if !ok {
				return s.fail(&res, finish, EndDesync, "the command's status could not be read")
			}
			res.ExitCode = code
			break wait
		case <-s.exited:
			return s.exitedDuring(&res, finish)
		case <-timer.C:
			if resync == nil {
				res.TimedOut = true
				interrupt()
			}
		case <-done:
			done = nil
			if resync == nil {
				res.Cancelled = true
				interrupt()
			}
		case <-again:
			s.interrupt()
		case <-resync:
			return s.fail(&res, finish, EndResyncFailed, "the interrupted command did not return control")
		case <-damaged:
			return s.fail(&res, finish, EndDesync, "the shell's control channel failed")
		case <-guard.C:
			if s.unit.Track() > runner.MaxProcesses {
				return s.fail(&res, finish, EndProcessLimit, "more than "+strconv.Itoa(runner.MaxProcesses)+" processes")
			}
		}
	}
	// The token arrived, so both sentinels are already in the pipes.
	sync := time.NewTimer(syncWait)
	defer sync.Stop()
	for outSeen != nil || errSeen != nil {
		select {
		case <-outSeen:
			outSeen = nil
		case <-errSeen:
			errSeen = nil
		case <-sync.C:
			return s.fail(&res, finish, EndDesync, "the command's output could not be delimited")
		}
	}
	finish()
	res.Cwd, res.CwdOutsideProject = s.currentDir()
	return res, nil
}

// exitedDuring returns the result of a command during which the shell
// process ended: ShellExited with the shell's status, or, for a remote
// shell whose connection ended, outcome_unknown (see remote.go).
func (s *shell) exitedDuring(res *Result, finish func()) (Result, error) {
	reason := s.exitReason()
	s.m.end(s, Lost, reason, false)
	<-s.released
	finish()
	res.ShellExited, res.ExitCode = true, s.exitCode
	if err := s.closedError(); err != nil {
		return *res, err
	}
	if reason == EndConnectionLost {
		res.ExitCode = -1
		return *res, failure.New(failure.OutcomeUnknown, "shell %s: the connection to ssh resource %q ended while the command ran; "+
			"whether it completed there is unknown (it may still run); open a new shell", s.id, s.remote.Resource).
			WithDetail("shell_end_reason", reason)
	}
	return *res, nil
}

// fail ends the shell as lost, waits for its release and returns the
// partial result with shell_reset_required (or shell_closed when a close
// won the race).
func (s *shell) fail(res *Result, finish func(), reason, msg string) (Result, error) {
	s.m.end(s, Lost, reason, false)
	<-s.released
	finish()
	if err := s.closedError(); err != nil {
		return *res, err
	}
	return *res, failure.New(failure.ShellResetRequired, "shell %s: %s; its process group was killed, open a new shell", s.id, msg).
		WithDetail("shell_end_reason", reason)
}

// closedError reports a close that ended the shell while a command ran.
func (s *shell) closedError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == Closed {
		return failure.New(failure.ShellClosed, "shell %s was closed (%s) while the command ran", s.id, s.endReason)
	}
	return nil
}

// currentDir reads the shell's working directory, project-relative.
func (s *shell) currentDir() (rel string, outside bool) {
	if s.remote != nil {
		return "", false
	}
	dir, err := os.Readlink("/proc/" + strconv.Itoa(s.pid) + "/cwd")
	if err != nil || strings.HasSuffix(dir, " (deleted)") {
		return "", false
	}
	r, err := filepath.Rel(s.root, dir)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", true
	}
	return filepath.ToSlash(r), false
}

// release kills the process group (TERM first when graceful, KILL after
// runner.KillGrace), then every other process of the shell's containment
// unit, and closes every pipe. It runs once per shell.
func (s *shell) release(graceful bool) {
	close(s.dying)
	s.releaseRemote(graceful)
	if graceful {
		s.stdin.Close() // an idle shell ends at end of input
		signalGroup(s.pid, syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(runner.KillGrace):
		}
	}
	signalGroup(s.pid, syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
	}
	// Whatever the shell left goes with it: in its group or not (setsid,
	// double forks, daemons), see runner.Unit.Kill.
	s.unit.Kill()
	drained := make(chan struct{})
	t := time.AfterFunc(outputDrain, func() { close(drained) })
	for _, d := range []<-chan struct{}{s.out.done, s.errs.done} {
		select {
		case <-d:
		case <-drained:
		}
	}
	t.Stop()
	for _, f := range []*os.File{s.stdin, s.ctrlR, s.out.f, s.errs.f} {
		if f != nil {
			f.Close()
		}
	}
	close(s.released)
}

func (s *shell) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{
		ShellID: s.id, SessionID: s.session, Project: s.project, Shell: s.dialect, Cwd: s.cwdRel,
		State: s.state, EndReason: s.endReason, OpenedAt: s.openedAt, LastUsedAt: s.lastUsed,
		EndedAt: s.endedAt, CommandsRun: s.commands, Sandbox: s.mode, Resource: s.resource(),
	}
}
