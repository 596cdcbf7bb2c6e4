// Package gitrepo runs git and reads a repository: it finds git, runs it
// with a fixed argv through a [runner.Host], probes whether a directory is
// inside a work tree, gives git a private copy of the index, and reads the
// work tree's status. The git tools and the closeout snapshot
// (finish_coding_task, session_handoff_summary) all read git through it, so
// each of these facts is decided here once.
//
// # Contract
//
// git is the binary found on the server's PATH, run with no shell, in the
// given directory, with the global arguments --no-pager,
// --no-optional-locks, core.fsmonitor=false, core.quotepath=false and
// color.ui=false. Its environment is the runner's scrubbed base (PATH,
// HOME and the few other variables runner inherits, never a GIT_* or
// XDG_* variable of the server, never a credential; see
// [runner.ChildEnv]) plus LANG=C, LC_ALL=C, GIT_TERMINAL_PROMPT=0,
// GIT_OPTIONAL_LOCKS=0, GIT_LITERAL_PATHSPECS=1, GIT_PAGER=cat and, for a
// private index, GIT_INDEX_FILE. The base also holds TERM=dumb, NO_COLOR=1,
// PAGER=cat and, when the server has them, USER, LOGNAME, LC_CTYPE, TZ,
// TMPDIR and toolchain directories; none of them changes what git status,
// diff, ls-files or rev-parse print here (LC_ALL overrides LC_CTYPE, the
// argv disables pager and colour, and no date or identity is printed).
//
// Standard output is read up to a bound given per call; when git writes
// more, the output is cut at the bound, reported truncated and git is
// stopped at once. Diagnostics keep the first MaxStderrBytes. A call is
// bounded by [Timeout] (see [WithTimeout]).
//
// Because git runs through runner.Host, the host's sandbox confines git
// too: git runs read-only (whatever the project's mode), and may write
// only the private index directory.
//
// Errors: a missing git is failure.Unavailable; a git that exits
// unsuccessfully (for example on a repository it refuses as of dubious
// ownership) is operation_failed with the detail git_exit_code; a timeout
// is operation_failed with the detail timeout=true; a cancelled call is
// interrupted.
//
// Limitation: git itself may run clean/smudge filter drivers configured by
// the repository while it computes status or diff. Those are the
// repository's own configuration; this package cannot disable them.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds.
const (
	// Timeout bounds one call (all of its git processes).
	Timeout = 30 * time.Second
	// MaxStderrBytes bounds the git diagnostics kept for an error message.
	MaxStderrBytes = 4096
	// MaxIndexCopyBytes bounds the index PrivateIndex copies.
	MaxIndexCopyBytes = 64 << 20
	// maxProbeBytes bounds the output of the repository probe.
	maxProbeBytes = 64 << 10
)

// errTimeout is the cancellation cause of a call that ran out of time.
var errTimeout = errors.New("git timed out")

// globalArgs precede every git subcommand: no pager, no optional locks, no
// fsmonitor hook, no colour and unquoted non-ASCII paths.
var globalArgs = []string{
	"--no-pager", "--no-optional-locks",
	"-c", "core.fsmonitor=false",
	"-c", "core.quotepath=false",
	"-c", "color.ui=false",
}

// gitEnv is what git gets on top of the runner's scrubbed base.
var gitEnv = map[string]string{
	"LANG":                  "C",
	"LC_ALL":                "C",
	"GIT_TERMINAL_PROMPT":   "0",
	"GIT_OPTIONAL_LOCKS":    "0",
	"GIT_LITERAL_PATHSPECS": "1",
	"GIT_PAGER":             "cat",
}

// WithTimeout returns ctx bounded by Timeout; a call that runs out of it
// fails as a timeout rather than as a cancellation.
func WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return withTimeout(ctx, Timeout)
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

// git runs git in one directory through one host.
type git struct {
	host runner.Host
	path string
	dir  string
	// index, when set, is the GIT_INDEX_FILE of a private index copy, in
	// the private directory indexDir.
	index, indexDir string
	// write lists further paths git may write (a worktree's creation or
	// removal); empty for every read.
	write []string
}

// newGit finds git on the server's PATH (the PATH runner.Local gives its
// children). A missing git is failure.Unavailable. A nil host is a
// runner.Local.
func newGit(host runner.Host, dir string) (git, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return git{}, failure.Wrap(failure.Unavailable, err, "git is not installed on the server (not found on PATH)")
	}
	if host == nil {
		host = &runner.Local{}
	}
	return git{host: host, path: path, dir: dir}, nil
}

func (g git) env() map[string]string {
	env := make(map[string]string, len(gitEnv)+1)
	for k, v := range gitEnv {
		env[k] = v
	}
	if g.index != "" {
		env["GIT_INDEX_FILE"] = g.index
	}
	return env
}

// sandbox is git's confinement: read-only over its directory, writable
// only in the private index directory.
func (g git) sandbox() runner.Sandbox {
	sb := runner.Sandbox{Mode: runner.ReadOnly, Project: g.dir}
	if g.indexDir != "" {
		sb.Write = []string{g.indexDir}
	}
	sb.Write = append(sb.Write, g.write...)
	return sb
}

// exitError is a git process that exited unsuccessfully.
type exitError struct {
	code   int
	stderr string
}

func (e *exitError) Error() string { return fmt.Sprintf("git exited with %d: %s", e.code, e.stderr) }

// run runs git args and returns at most limit bytes of its standard output;
// truncated reports that git produced more (it is then stopped). The error
// is an *exitError for a failing git, or a *failure.Error for a timeout,
// a cancellation or a process that could not start or ended otherwise.
func (g git) run(ctx context.Context, limit int, args ...string) (out []byte, truncated bool, err error) {
	procCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The runner's own tails are not read: TailBytes 1 keeps them minimal.
	// Stdout stops the process (through procCtx) and cuts the pipe when
	// the bound is reached; stderr keeps its head and discards the rest.
	stdout := &limitWriter{max: limit, full: stop}
	stderr := &limitWriter{max: MaxStderrBytes}
	res, err := runner.Run(procCtx, g.host, runner.Spec{
		Argv:    append(append([]string{g.path}, globalArgs...), args...),
		Dir:     g.dir,
		Env:     g.env(),
		Timeout: Timeout, TailBytes: 1,
		Stdout: stdout, Stderr: stderr,
		Sandbox: g.sandbox(),
	})
	if err != nil {
		return nil, false, failure.Wrap(failure.OperationFailed, err, "cannot run git")
	}
	switch {
	case context.Cause(ctx) == errTimeout || res.Ending == runner.TimedOut:
		return nil, false, failure.New(failure.OperationFailed, "git %s did not finish within %s", args[0], Timeout).
			WithDetail("timeout", true)
	case ctx.Err() != nil:
		return nil, false, failure.Wrap(failure.Interrupted, ctx.Err(), "git %s was cancelled", args[0])
	case stdout.truncated:
		return stdout.buf.Bytes(), true, nil
	case res.Ending == runner.Exited && res.ExitCode != 0, res.Ending == runner.Signaled:
		return nil, false, &exitError{code: res.ExitCode, stderr: stderr.buf.String()}
	case res.Ending != runner.Exited:
		return nil, false, failure.New(failure.OperationFailed, "git %s failed: %s", args[0], res.Ending)
	}
	return stdout.buf.Bytes(), false, nil
}

// errFull stops the copy of a process output that exceeded its bound.
var errFull = errors.New("output bound reached")

// limitWriter keeps the first max bytes written to it. When more arrive it
// marks itself truncated, calls full (if set) and, when full is set,
// fails the write so that the producer is cut off; without full it
// silently discards the excess.
type limitWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
	full      func()
}

func (w *limitWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if len(p) <= room {
		return w.buf.Write(p)
	}
	w.buf.Write(p[:max(room, 0)])
	w.truncated = true
	if w.full != nil {
		w.full()
		return 0, errFull
	}
	return len(p), nil
}

// asFailure turns an error of run into a caller-safe failure.
func asFailure(err error, what string) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return failure.Wrap(failure.OperationFailed, err, "git %s failed: %s", what, firstLine(ee.stderr)).
			WithDetail("git_exit_code", ee.code)
	}
	return err
}

// firstLine returns the first non-empty line of s, bounded to 300 bytes.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	return "no diagnostics"
}
