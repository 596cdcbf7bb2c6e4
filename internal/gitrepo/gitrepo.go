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
// --no-optional-locks, core.fsmonitor=false, core.hooksPath=/dev/null,
// core.quotepath=false and color.ui=false, and, once [Open] has found
// the repository's filter drivers, every one of them emptied (see
// "Programs a repository configures" below). Its environment is the
// runner's scrubbed base (PATH, HOME and the few other variables runner
// inherits, never a GIT_* or XDG_* variable of the server, never a
// credential; see [runner.ChildEnv]) plus LANG=C, LC_ALL=C,
// GIT_TERMINAL_PROMPT=0, GIT_OPTIONAL_LOCKS=0, GIT_LITERAL_PATHSPECS=1,
// GIT_PAGER=cat, the two values the emptied drivers read
// (WC_GIT_EMPTY="" and WC_GIT_FALSE=false) and, for a private index,
// GIT_INDEX_FILE; a git pinned to one repository (a worktree's creation
// or its clean check) also gets GIT_DIR (and GIT_WORK_TREE). The base
// also holds TERM=dumb, NO_COLOR=1,
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
// only the private index directory, or, for [Repo.AddWorktree], the new
// worktree's directory and the repository's own worktrees directory,
// each granted only while no symbolic link lies on its path
// ([runner.Sandbox.Exact]).
//
// Errors: a missing git is failure.Unavailable; a git that exits
// unsuccessfully (for example on a repository it refuses as of dubious
// ownership) is operation_failed with the detail git_exit_code; a timeout
// is operation_failed with the detail timeout=true; a cancelled call is
// interrupted.
//
// # Programs a repository configures
//
// A repository's configuration is content its project's agents can
// write, so no program it names runs with the server's authority where
// git lets the server say so: hooks are off (core.hooksPath=/dev/null),
// the fsmonitor hook is off, there is no pager, git_diff passes
// --no-ext-diff and --no-textconv, and every filter driver the
// configuration defines when Open reads it (filter.<name>.clean, smudge
// and process) is emptied with --config-env, which git reads last, and
// made not required, so that git converts nothing. git has no switch for
// a driver defined after that read (a child racing the server), for the
// programs of a submodule's own configuration, or for attributes as a
// whole: such a program still runs, but under the sandbox above, which
// lets it write nothing but what the command itself writes. See
// docs/decisions/0047-server-git-confined.md.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
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
// fsmonitor hook, no hooks, no colour and unquoted non-ASCII paths.
var globalArgs = []string{
	"--no-pager", "--no-optional-locks",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.quotepath=false",
	"-c", "color.ui=false",
}

// The environment variables --config-env reads to empty a filter driver
// (an empty command is no filter) and to make it not required.
const (
	emptyEnv = "WC_GIT_EMPTY"
	falseEnv = "WC_GIT_FALSE"
)

// MaxFilterDrivers bounds the filter drivers a repository's configuration
// may define; git refuses to run for one with more (operation_failed),
// since the rest could not be emptied.
const MaxFilterDrivers = 64

// gitEnv is what git gets on top of the runner's scrubbed base.
var gitEnv = map[string]string{
	"LANG":                  "C",
	"LC_ALL":                "C",
	"GIT_TERMINAL_PROMPT":   "0",
	"GIT_OPTIONAL_LOCKS":    "0",
	"GIT_LITERAL_PATHSPECS": "1",
	"GIT_PAGER":             "cat",
	emptyEnv:                "",
	falseEnv:                "false",
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
	// write lists further paths git may write (a worktree's creation);
	// empty for every read.
	write []string
	// neutral holds the --config-env arguments that empty the
	// repository's filter drivers (see filterDrivers).
	neutral []string
	// gitDir and workTree, when set, pin git to one repository
	// (GIT_DIR, GIT_WORK_TREE) instead of the one it would discover.
	gitDir, workTree string
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
	if g.gitDir != "" {
		env["GIT_DIR"] = g.gitDir
	}
	if g.workTree != "" {
		env["GIT_WORK_TREE"] = g.workTree
	}
	return env
}

// filterDrivers reads the names of the filter drivers the configuration
// defines (every scope, includes followed) and sets g.neutral to empty
// each: its clean, smudge and process commands become "" and required
// false. --config-env (unlike -c) takes the name up to the last '=', so
// any name git accepts is emptied. A configuration with more than
// MaxFilterDrivers drivers is operation_failed.
func (g *git) filterDrivers(ctx context.Context) error {
	out, truncated, err := g.run(ctx, maxProbeBytes, "config", "-z", "--name-only", "--get-regexp", `^filter\..*\.(clean|smudge|process)$`)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == 1 {
		return nil // no driver defined
	}
	if err != nil {
		return asFailure(err, "config")
	}
	var names []string
	for _, key := range strings.Split(string(out), "\x00") {
		name, ok := strings.CutPrefix(key, "filter.")
		dot := strings.LastIndexByte(name, '.')
		if !ok || dot < 0 || slices.Contains(names, name[:dot]) {
			continue
		}
		names = append(names, name[:dot])
	}
	if truncated || len(names) > MaxFilterDrivers {
		return failure.New(failure.OperationFailed, "the repository's configuration defines more than %d filter drivers; the server runs no git there", MaxFilterDrivers)
	}
	g.neutral = g.neutral[:0]
	for _, n := range names {
		for _, v := range []string{"clean", "smudge", "process"} {
			g.neutral = append(g.neutral, "--config-env=filter."+n+"."+v+"="+emptyEnv)
		}
		g.neutral = append(g.neutral, "--config-env=filter."+n+".required="+falseEnv)
	}
	return nil
}

// sandbox is git's confinement: read-only over its directory, writable
// only in the private index directory.
func (g git) sandbox() runner.Sandbox {
	sb := runner.Sandbox{Mode: runner.ReadOnly, Project: g.dir}
	if g.indexDir != "" {
		sb.Write = []string{g.indexDir}
	}
	sb.Write = append(sb.Write, g.write...)
	// A worktree's creation grants paths inside a project its children
	// can rearrange: each is granted only while it holds no link.
	sb.Exact = len(g.write) > 0
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
		Argv:    append(append(append([]string{g.path}, globalArgs...), g.neutral...), args...),
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
