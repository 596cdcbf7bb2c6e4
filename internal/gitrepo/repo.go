package gitrepo

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// A Repo is what git says about a directory, and runs git there.
type Repo struct {
	// Inside reports whether the directory is inside a git work tree.
	Inside bool
	// Prefix is the directory's path relative to the work tree root, with
	// a trailing slash, or "" at the root.
	Prefix string
	// indexPath is the repository's index file, absolute.
	indexPath string
	// gitDir and commonDir are the absolute git directory and common git
	// directory git reports (symbolic links not resolved).
	gitDir, commonDir string
	git               git
}

// Open finds git and asks it whether dir is inside a work tree, and reads
// the filter drivers the repository configures, which every later git of
// the Repo empties. A directory outside any repository is a Repo with
// Inside false, not an error. A nil host is a runner.Local.
func Open(ctx context.Context, host runner.Host, dir string) (Repo, error) {
	g, err := newGit(host, dir)
	if err != nil {
		return Repo{}, err
	}
	return g.probe(ctx)
}

func (g git) probe(ctx context.Context) (Repo, error) {
	out, _, err := g.run(ctx, maxProbeBytes, "rev-parse", "--is-inside-work-tree", "--show-prefix",
		"--path-format=absolute", "--git-path", "index", "--absolute-git-dir", "--git-common-dir")
	var ee *exitError
	if errors.As(err, &ee) && strings.Contains(ee.stderr, "not a git repository") {
		return Repo{git: g}, nil
	}
	if err != nil {
		return Repo{}, asFailure(err, "rev-parse")
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 || lines[0] != "true" {
		return Repo{git: g}, nil
	}
	if len(lines) != 5 {
		return Repo{}, failure.New(failure.OperationFailed, "git rev-parse printed %d lines, want 5", len(lines))
	}
	if err := g.filterDrivers(ctx); err != nil {
		return Repo{}, err
	}
	return Repo{Inside: true, Prefix: lines[1], indexPath: lines[2], gitDir: lines[3], commonDir: lines[4], git: g}, nil
}

// Run runs git args in the directory (after the global arguments) and
// returns at most limit bytes of its standard output; truncated reports
// that git wrote more and was stopped. A git that exits unsuccessfully is
// operation_failed "git <args[0]> failed: <first line of its
// diagnostics>" with the detail git_exit_code.
func (r Repo) Run(ctx context.Context, limit int, args ...string) (out []byte, truncated bool, err error) {
	out, truncated, err = r.git.run(ctx, limit, args...)
	if err != nil {
		return nil, false, asFailure(err, args[0])
	}
	return out, truncated, nil
}

// PrivateIndex copies the repository's index to a file in a private
// temporary directory (the one place a sandboxed git may write) and
// returns a Repo whose git uses the copy, and a cleanup function.
//
// Porcelain `git diff` refreshes the stat information of the index and
// writes it back (taking index.lock) whenever it finds stat-dirty entries,
// ignoring GIT_OPTIONAL_LOCKS; on a private copy that write is harmless.
// A missing index needs no copy, and an index larger than
// MaxIndexCopyBytes is used in place (git may then refresh it, as a
// user's own `git diff` would).
func (r Repo) PrivateIndex() (Repo, func(), error) {
	noop := func() {}
	if r.indexPath == "" {
		return r, noop, nil
	}
	src := r.indexPath
	if !filepath.IsAbs(src) {
		src = filepath.Join(r.git.dir, src)
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
	dir, err := os.MkdirTemp("", "webcodex-git-index-")
	if err != nil {
		return r, noop, failure.Wrap(failure.OperationFailed, err, "cannot copy the git index")
	}
	cleanup := func() { os.RemoveAll(dir) }
	tmp, err := os.OpenFile(filepath.Join(dir, "index"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		cleanup()
		return r, noop, failure.Wrap(failure.OperationFailed, err, "cannot copy the git index")
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
	r.git.index, r.git.indexDir = tmp.Name(), dir
	return r, cleanup, nil
}
