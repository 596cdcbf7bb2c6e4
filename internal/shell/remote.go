package shell

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// Remote shells, in detail.
//
// A shell opened with OpenSpec.Remote runs on an SSH resource: the local
// process is the system ssh client (through the ControlMaster its caller
// chose, see Remote), whose remote command execs the shell:
//
//	cd '<cwd>' && eval 'exec bash --noprofile --norc'     (or exec sh)
//
// Its stdin, stdout and stderr are the ssh client's, which carry the
// remote shell's over the SSH channel. No other descriptor crosses ssh,
// so the control channel of a local shell (fd 3) does not exist; instead
// the remote shell first duplicates its own stdout and stderr
// (remotePreamble: exec 4>&1 5>&2, as fds 4 and 5 of a local shell) and
// the wrapper prints the exit status after the stdout sentinel:
//
//	__wc_run "$@" 4>&- 5>&- </dev/null; __wc_s=$?; ...
//	\command printf '%s%s' '<half>' '<half>' >&5               (stderr sentinel)
//	\command printf '%s%s %d\n' '<half>' '<half>' "$__wc_s" >&4  (stdout token and status)
//
// The token is a fresh 128-bit random value per command, written only in
// the wrapper line, which the shell reads and parses whole before it runs
// the command: it is not in the command's text, environment or
// variables, so the command's output cannot contain it by accident or by
// guessing, and text that imitates framing is plain output. The stdout
// stream is cut at the token and the status line after it is read as the
// status (stream.arm withStatus); a command is complete when that line
// and the stderr sentinel have been read. SSH carries stdout and stderr
// on one channel, in order, so the stderr sentinel (printed first) is
// already on its way when the status arrives. A command that deliberately
// reads or writes the shell's own saved descriptors can damage the
// framing, as it can kill the shell: the result is then a desync (the
// shell requires a reset), never a made-up success.
//
// Interrupt: the runner cannot signal a remote process directly. The
// handshake reads the remote shell's pid ($$): sshd starts each
// session's command as a new session (setsid), and exec keeps that pid,
// so the remote shell leads its own process group, as a local shell
// does. A timeout or cancellation runs `kill -s INT -- -<pid>` on the
// resource through a second ssh invocation on the same connection
// (Remote.Command), repeated as the local interrupt is; the shell's INT
// trap returns from the command, and the result is timed_out with the
// shell kept, or, when the status never arrives within ResyncWait, the
// shell is lost and the call fails shell_reset_required, as for a local
// shell. Release (close, session close, idle expiry, shutdown, loss)
// first signals the remote group (TERM when graceful, else KILL), then
// ends the ssh client as a local shell's group. Processes that left the
// remote group (setsid, daemons) are not tracked on the resource.
//
// Connection: the shell keeps the connection it was opened on. When that
// connection ends (its master retired by a newer connection generation,
// the session's close, a dead host) the ssh client exits with
// sshresource.ExitConnectionFailed: the shell is lost (connection_lost)
// and a command running then fails outcome_unknown (the remote process is
// not stopped by the end of its channel). It is never redirected to
// another connection. A remote `exit 255` cannot be told from this and is
// reported the same way, never as a success.
//
// Cwd after a command is unknown for a remote shell (Result.Cwd is
// empty): the remote directory is the caller's to print.

// Remote runs a shell on an SSH resource. Its argv builders come from the
// holder of the resource (the runner) and bind every ssh invocation to
// one connection; only Resource is ever shown.
type Remote struct {
	// Resource is the resource's name.
	Resource string
	// Cwd is the remote directory the caller chose, shown as the shell's
	// Cwd ("" when left to the resource).
	Cwd string
	// Argv returns the ssh client argv that runs the shell text text in
	// the shell's remote directory.
	Argv func(text string) ([]string, error)
	// Command returns the ssh client argv that runs text (a signal to the
	// shell's process group) on the same connection, in the login
	// directory.
	Command func(text string) ([]string, error)
}

// remoteSignalTimeout bounds one remote signal (a second ssh on the same
// connection, or a new connection when that one ended).
const remoteSignalTimeout = sshresource.ConnectTimeout + 5*time.Second

// remotePreamble is written once to a remote shell, before the handshake:
// fds 4 and 5 become the framing's own view of stdout and stderr, and an
// interrupt returns from the command's function.
const remotePreamble = "exec 4>&1 5>&2; " + preamble

// pidCommand is the handshake of a remote shell: it prints the shell's pid.
const pidCommand = `\command printf '%s' "$$"`

// remoteWrapper is the text written to a remote shell for one command; see
// the package documentation and the comment above.
func remoteWrapper(command, token, errSentinel string) string {
	var b strings.Builder
	b.Grow(len(command) + 512)
	defineRun(&b, command)
	b.WriteString("__wc_run \"$@\" 4>&- 5>&- </dev/null; __wc_s=$?; __wc_in=; \\command unset __wc_c; ")
	b.WriteString("\\command printf '%s%s' " + split(errSentinel) + " >&5; ")
	b.WriteString("\\command printf '%s%s %d\\n' " + split(token) + " \"$__wc_s\" >&4\n")
	return b.String()
}

// program is the remote shell text: the shell exec'ed in place of the
// login shell that runs the remote command, so that it keeps its pid.
func (d Dialect) program() string {
	if d == Bash {
		return "exec bash --noprofile --norc"
	}
	return "exec sh"
}

// resource is the shell's resource name, "" for a local shell.
func (s *shell) resource() string {
	if s.remote == nil {
		return ""
	}
	return s.remote.Resource
}

// exitReason is why a shell whose process ended on its own is lost.
func (s *shell) exitReason() string {
	if s.remote != nil && s.exitCode == sshresource.ExitConnectionFailed {
		return EndConnectionLost
	}
	return EndExited
}

// handshake sets a new shell up and proves its framing works; a remote
// shell also reports its pid. A remote shell whose connection failed is
// classified naming only the resource (sshresource.Classify).
func (s *shell) handshake(ctx context.Context) error {
	if s.remote == nil {
		_, err := s.run(ctx, ":", openTimeout, preamble)
		return err
	}
	res, err := s.run(ctx, pidCommand, openTimeout, remotePreamble)
	if err != nil {
		if failure.Is(err, failure.OutcomeUnknown) {
			return sshresource.Classify(s.remote.Resource, []byte(res.Stderr.Text))
		}
		return err
	}
	if res.ShellExited {
		return failure.New(failure.NotStarted, "the shell on ssh resource %q ended as it started (status %d): is its remote cwd an existing directory?",
			s.remote.Resource, res.ExitCode)
	}
	pid, perr := strconv.Atoi(res.Stdout.Text)
	if perr != nil || pid <= 1 || res.ExitCode != 0 {
		return failure.New(failure.NotStarted, "the shell on ssh resource %q did not report its process id", s.remote.Resource)
	}
	s.remotePID.Store(int64(pid))
	return nil
}

// interrupt sends SIGINT to the shell's process group: directly for a local
// shell, through a second ssh invocation (in the background) for a remote
// one.
func (s *shell) interrupt() {
	if s.remote == nil {
		signalGroup(s.pid, syscall.SIGINT)
		return
	}
	s.m.wg.Go(func() { s.signalRemote("INT") })
}

// signalRemote sends sig to the remote shell's process group and waits for
// the ssh invocation that carries it, at most remoteSignalTimeout. Nothing
// is sent before the handshake has told the pid. Failures are ignored:
// the caller's bound (ResyncWait, the release) decides what follows.
func (s *shell) signalRemote(sig string) {
	pid := s.remotePID.Load()
	if pid <= 1 {
		return
	}
	argv, err := s.remote.Command("kill -s " + sig + " -- -" + strconv.FormatInt(pid, 10) + " 2>/dev/null; :")
	if err != nil {
		return
	}
	env := sshresource.ClientEnv(runner.ChildEnv(s.m.opt.Getenv, nil))
	path, err := runner.LookPath(argv[0], env)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteSignalTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Env, cmd.Dir = env, s.root
	_ = cmd.Run()
}

// releaseRemote signals a remote shell's process group before its ssh
// client is ended: TERM when graceful, else KILL. It skips a shell whose
// ssh client already ended with the remote shell's own status (the remote
// shell exited).
func (s *shell) releaseRemote(graceful bool) {
	if s.remote == nil {
		return
	}
	select {
	case <-s.exited:
		if s.exitCode != sshresource.ExitConnectionFailed {
			return
		}
	default:
	}
	if graceful {
		s.signalRemote("TERM")
	} else {
		s.signalRemote("KILL")
	}
}
