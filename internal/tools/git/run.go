package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
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

// runner runs git in one directory with one deadline.
type runner struct {
	git string
	dir string
	// extraEnv is added to env() (GIT_INDEX_FILE of a private index copy).
	extraEnv []string
}

// newRunner finds git on PATH. A missing git is failure.Unavailable.
func newRunner(dir string) (runner, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return runner{}, failure.Wrap(failure.Unavailable, err, "git is not installed on the server (not found on PATH)")
	}
	return runner{git: path, dir: dir}, nil
}

// withTimeout returns ctx bounded by d, whose cause is errTimeout when d
// elapses.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

// env is the whole environment of a git process: nothing of the server's
// environment but PATH and HOME.
func env() []string {
	e := []string{
		"PATH=" + os.Getenv("PATH"),
		"LANG=C",
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_PAGER=cat",
	}
	if home, err := os.UserHomeDir(); err == nil {
		e = append(e, "HOME="+home)
	}
	return e
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
// a cancellation or a process that could not start.
func (r runner) run(ctx context.Context, limit int, args ...string) (out []byte, truncated bool, err error) {
	procCtx, stop := context.WithCancel(ctx)
	defer stop()
	argv := append(append([]string{}, globalArgs...), args...)
	cmd := exec.CommandContext(procCtx, r.git, argv...)
	cmd.Dir = r.dir
	cmd.Env = append(env(), r.extraEnv...)
	// Stdin stays nil (the null device). Stdout and Stderr are not files,
	// so exec copies them; WaitDelay bounds the wait for a descendant that
	// keeps the pipes open after git is killed.
	stdout := &limitWriter{max: limit, full: stop}
	stderr := &limitWriter{max: MaxStderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, false, failure.Wrap(failure.OperationFailed, err, "cannot run git")
	}
	waitErr := cmd.Wait()
	switch {
	case context.Cause(ctx) == errTimeout:
		return nil, false, failure.New(failure.OperationFailed, "git %s did not finish within %s", args[0], GitTimeout).
			WithDetail("timeout", true)
	case ctx.Err() != nil:
		return nil, false, failure.Wrap(failure.Interrupted, ctx.Err(), "git %s was cancelled", args[0])
	case stdout.truncated:
		return stdout.buf.Bytes(), true, nil
	case waitErr != nil:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			return nil, false, &exitError{code: ee.ExitCode(), stderr: stderr.buf.String()}
		}
		return nil, false, failure.Wrap(failure.OperationFailed, waitErr, "git %s failed", args[0])
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

// repoInfo is what git says about the project directory.
type repoInfo struct {
	// inside reports whether the directory is inside a git work tree.
	inside bool
	// prefix is the directory's path relative to the work tree root, with
	// a trailing slash, or "" at the root.
	prefix string
	// index is the path of the repository's index file, relative to the
	// directory or absolute.
	index string
}

// probe asks git whether r.dir is inside a work tree.
func (r runner) probe(ctx context.Context) (repoInfo, error) {
	out, _, err := r.run(ctx, 64<<10, "rev-parse", "--is-inside-work-tree", "--show-prefix", "--git-path", "index")
	var ee *exitError
	if errors.As(err, &ee) && strings.Contains(ee.stderr, "not a git repository") {
		return repoInfo{}, nil
	}
	if err != nil {
		return repoInfo{}, asFailure(err, "rev-parse")
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 || lines[0] != "true" {
		return repoInfo{}, nil
	}
	info := repoInfo{inside: true}
	if len(lines) > 1 {
		info.prefix = lines[1]
	}
	if len(lines) > 2 {
		info.index = lines[2]
	}
	return info, nil
}

// privateIndex copies the repository's index to a temporary file and
// returns a runner whose git uses the copy, and a cleanup function.
//
// Porcelain `git diff` refreshes the stat information of the index and
// writes it back (taking index.lock) whenever it finds stat-dirty entries,
// ignoring GIT_OPTIONAL_LOCKS; on a private copy that write is harmless.
// A missing index needs no copy, and an index larger than
// MaxIndexCopyBytes is used in place (git may then refresh it, as a
// user's own `git diff` would).
func (r runner) privateIndex(info repoInfo) (runner, func(), error) {
	noop := func() {}
	if info.index == "" {
		return r, noop, nil
	}
	src := info.index
	if !filepath.IsAbs(src) {
		src = filepath.Join(r.dir, src)
	}
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return r, noop, nil
	}
	if err != nil {
		return r, noop, failure.Wrap(failure.OperationFailed, err, "cannot read the git index")
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || fi.Size() > MaxIndexCopyBytes {
		return r, noop, nil
	}
	tmp, err := os.CreateTemp("", "webcodex-git-index-*")
	if err != nil {
		return r, noop, failure.Wrap(failure.OperationFailed, err, "cannot copy the git index")
	}
	cleanup := func() {
		os.Remove(tmp.Name())
		os.Remove(tmp.Name() + ".lock")
	}
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	// Keep the index's modification time: git treats an entry whose file
	// changed in the same second as the index was written as "racily
	// clean" and compares contents. A copy with a fresh mtime would lose
	// that and miss same-size edits made right after a commit.
	if err == nil {
		err = os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime())
	}
	if err != nil {
		cleanup()
		return r, noop, failure.Wrap(failure.OperationFailed, err, "cannot copy the git index")
	}
	r.extraEnv = append(append([]string{}, r.extraEnv...), "GIT_INDEX_FILE="+tmp.Name())
	return r, cleanup, nil
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
