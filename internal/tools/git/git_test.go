package git_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/git"
	"github.com/webcodex/webcodex/internal/workspace"
)

const projectID = "agent:local:repo"

// isolate keeps the user's git configuration away from the test: the
// tools take HOME from the environment.
func isolate(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// repo is a git work tree made by the test with the real git binary.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	isolate(t)
	dir, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{t: t, dir: dir}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=Test", "-c", "user.email=test@example.com",
		"-c", "commit.gpgsign=false", "-c", "core.autocrlf=false",
	}, args...)...)
	cmd.Dir = r.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// gitMayFail runs git and ignores its exit status (for merges that
// conflict).
func (r *repo) gitMayFail(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)...)
	cmd.Dir = r.dir
	cmd.Run()
}

func (r *repo) write(rel, content string) {
	r.t.Helper()
	abs := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) commitAll(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "-m", msg)
}

func dispatch(t *testing.T, root, tool string, args map[string]any) kernel.Result {
	t.Helper()
	return dispatchOn(t, &runner.Local{}, root, tool, args)
}

func dispatchOn(t *testing.T, host runner.Host, root, tool string, args map[string]any) kernel.Result {
	t.Helper()
	reg := kernel.NewRegistry()
	git.Register(reg, &git.Tools{Runners: workspace.LocalOnly(host)})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{projectID: {ID: projectID, Name: "repo", Root: root}}})
	if args == nil {
		args = map[string]any{}
	}
	args["project"] = projectID
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return k.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: raw, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
}

func decode[T any](t *testing.T, res kernel.Result) T {
	t.Helper()
	if !res.Success {
		t.Fatalf("call failed: %+v %v", res.Error, res.Output)
	}
	b, _ := json.Marshal(res.Output)
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func failed(t *testing.T, res kernel.Result, kind failure.Kind) map[string]any {
	t.Helper()
	if res.Success {
		t.Fatalf("call succeeded, want %s: %v", kind, res.Output)
	}
	if res.Error.Kind != kind {
		t.Fatalf("error kind = %s (%s), want %s", res.Error.Kind, res.Error.Message, kind)
	}
	b, _ := json.Marshal(res.Output)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func status(t *testing.T, root string) git.StatusOutput {
	t.Helper()
	return decode[git.StatusOutput](t, dispatch(t, root, "git_status", nil))
}

func diff(t *testing.T, root string, args map[string]any) git.DiffOutput {
	t.Helper()
	return decode[git.DiffOutput](t, dispatch(t, root, "git_diff", args))
}

func byPath(entries []git.StatusEntry) map[string]git.StatusEntry {
	m := map[string]git.StatusEntry{}
	for _, e := range entries {
		m[e.Path] = e
	}
	return m
}

func TestRegistration(t *testing.T) {
	reg := kernel.NewRegistry()
	git.Register(reg, &git.Tools{Runners: workspace.LocalOnly(&runner.Local{})})
	for _, name := range []string{"git_status", "git_diff"} {
		tool, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if tool.Category != "git" || !slices.Equal(tool.Scopes, []auth.Scope{auth.ScopeProjectRead}) ||
			tool.Mutates || tool.Writes || tool.Session != kernel.SessionOptional ||
			tool.Annotations != (kernel.Annotations{ReadOnly: true, Idempotent: true}) {
			t.Errorf("%s: unexpected declaration %+v", name, tool)
		}
	}
}

// recordingHost is a runner.Host that records the git subcommands it
// starts.
type recordingHost struct {
	runner.Local
	mu       sync.Mutex
	commands []string
}

func (h *recordingHost) Start(ctx context.Context, s runner.Spec) (runner.Process, error) {
	h.mu.Lock()
	for _, a := range s.Argv[1:] {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			h.commands = append(h.commands, a)
			break
		}
	}
	h.mu.Unlock()
	return h.Local.Start(ctx, s)
}

// TestGitRunsThroughTheHost: every git process of both tools is started
// by the Host the tools were given.
func TestGitRunsThroughTheHost(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("one")
	r.write("a.txt", "b\n")
	h := &recordingHost{}
	if st := decode[git.StatusOutput](t, dispatchOn(t, h, r.dir, "git_status", nil)); st.Total != 1 {
		t.Fatalf("status = %+v", st)
	}
	if d := decode[git.DiffOutput](t, dispatchOn(t, h, r.dir, "git_diff", nil)); d.TotalFiles != 1 {
		t.Fatalf("diff = %+v", d)
	}
	// Each Open reads the repository's filter drivers (config) to empty
	// them in every later git.
	want := []string{"rev-parse", "config", "status", "rev-parse", "config", "diff", "diff", "ls-files"}
	if !slices.Equal(h.commands, want) {
		t.Fatalf("host started %q, want %q", h.commands, want)
	}
}

func TestBoundConstants(t *testing.T) {
	if git.GitTimeout != 30*time.Second {
		t.Fatalf("GitTimeout = %v", git.GitTimeout)
	}
	got := []int{git.MaxStatusEntries, git.MaxStatusOutputBytes, git.MaxDiffPaths, git.DefaultContextLines,
		git.MaxContextLines, git.DefaultDiffBytes, git.MaxDiffBytes, git.MaxDiffFiles, git.MaxDiffListBytes,
		git.MaxUntracked, git.MaxStderrBytes, git.MaxUntrackedOutputBytes, git.MaxIndexCopyBytes}
	want := []int{500, 4 << 20, 32, 3, 10, 64 << 10, 512 << 10, 500, 4 << 20, 100, 4096, 1 << 20, 64 << 20}
	if !slices.Equal(got, want) {
		t.Fatalf("bounds = %v, want %v", got, want)
	}
}

func notARepo(t *testing.T) string {
	t.Helper()
	isolate(t)
	dir, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("git", "-C", dir, "rev-parse", "--git-dir").Run() == nil {
		t.Skip("the temporary directory is inside a git work tree")
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	return dir
}

func TestStatusNotARepo(t *testing.T) {
	dir := notARepo(t)
	st := status(t, dir)
	if st.IsGitRepo || st.Clean || st.Total != 0 || st.Entries == nil || len(st.Entries) != 0 {
		t.Fatalf("status = %+v", st)
	}
}

func TestDiffNotARepo(t *testing.T) {
	dir := notARepo(t)
	out := failed(t, dispatch(t, dir, "git_diff", nil), failure.InvalidArguments)
	if out["is_git_repo"] != false {
		t.Fatalf("detail = %v", out)
	}
}

func TestGitMissingIsUnavailable(t *testing.T) {
	r := newRepo(t)
	t.Setenv("PATH", t.TempDir())
	failed(t, dispatch(t, r.dir, "git_status", nil), failure.Unavailable)
	failed(t, dispatch(t, r.dir, "git_diff", nil), failure.Unavailable)
}

func TestStatusCleanAndInitial(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	st := status(t, r.dir)
	if !st.IsGitRepo || st.Head != "" || st.Branch != "main" || st.Clean || st.Total != 1 ||
		st.Entries[0] != (git.StatusEntry{Path: "a.txt", IndexStatus: "?", WorktreeStatus: "?", Kind: git.KindUntracked}) {
		t.Fatalf("initial status = %+v", st)
	}
	r.commitAll("one")
	st = status(t, r.dir)
	want := git.StatusOutput{IsGitRepo: true, Branch: "main", Head: r.git("rev-parse", "HEAD"), Entries: []git.StatusEntry{}, Clean: true}
	if !equalJSON(st, want) {
		t.Fatalf("clean status = %+v", st)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestStatusKinds(t *testing.T) {
	r := newRepo(t)
	for _, f := range []string{"mod.txt", "del.txt", "ren.txt", "both.txt", "staged-del.txt"} {
		r.write(f, "content of "+f+"\nline 2\nline 3\n")
	}
	r.write("dir with space/ü.txt", "unicode\n")
	r.commitAll("base")
	r.write("mod.txt", "changed\n")
	os.Remove(filepath.Join(r.dir, "del.txt"))
	r.git("rm", "-q", "staged-del.txt")
	r.git("mv", "ren.txt", "renamed.txt")
	r.write("new.txt", "new\n")
	r.git("add", "new.txt")
	r.write("both.txt", "staged\n")
	r.git("add", "both.txt")
	r.write("both.txt", "staged and then modified\n")
	r.write("untracked.txt", "u\n")
	r.write("udir/a.txt", "u\n")
	r.write("udir/b.txt", "u\n")
	r.write("dir with space/ü.txt", "unicode changed\n")

	st := status(t, r.dir)
	want := map[string]git.StatusEntry{
		"mod.txt":              {Path: "mod.txt", IndexStatus: ".", WorktreeStatus: "M", Kind: git.KindModified},
		"del.txt":              {Path: "del.txt", IndexStatus: ".", WorktreeStatus: "D", Kind: git.KindDeleted},
		"staged-del.txt":       {Path: "staged-del.txt", IndexStatus: "D", WorktreeStatus: ".", Kind: git.KindDeleted},
		"renamed.txt":          {Path: "renamed.txt", OldPath: "ren.txt", IndexStatus: "R", WorktreeStatus: ".", Kind: git.KindRenamed},
		"new.txt":              {Path: "new.txt", IndexStatus: "A", WorktreeStatus: ".", Kind: git.KindAdded},
		"both.txt":             {Path: "both.txt", IndexStatus: "M", WorktreeStatus: "M", Kind: git.KindModified},
		"untracked.txt":        {Path: "untracked.txt", IndexStatus: "?", WorktreeStatus: "?", Kind: git.KindUntracked},
		"udir/":                {Path: "udir/", IndexStatus: "?", WorktreeStatus: "?", Kind: git.KindUntracked},
		"dir with space/ü.txt": {Path: "dir with space/ü.txt", IndexStatus: ".", WorktreeStatus: "M", Kind: git.KindModified},
	}
	got := byPath(st.Entries)
	if len(got) != len(want) || st.Total != len(want) || st.Clean || st.Truncated || st.Conflicted != 0 {
		t.Fatalf("status = %+v", st)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %+v, want %+v", p, got[p], w)
		}
	}
}

// conflicted sets up a merge conflict on f.txt.
func conflicted(t *testing.T) *repo {
	r := newRepo(t)
	r.write("f.txt", "a\nb\nc\n")
	r.commitAll("base")
	r.git("checkout", "-q", "-b", "other")
	r.write("f.txt", "a\nB1\nc\n")
	r.commitAll("other")
	r.git("checkout", "-q", "main")
	r.write("f.txt", "a\nB2\nc\n")
	r.commitAll("main")
	r.gitMayFail("merge", "other")
	return r
}

func TestStatusConflicted(t *testing.T) {
	r := conflicted(t)
	st := status(t, r.dir)
	if st.Conflicted != 1 || st.Total != 1 || st.Clean ||
		st.Entries[0] != (git.StatusEntry{Path: "f.txt", IndexStatus: "U", WorktreeStatus: "U", Kind: git.KindConflicted}) {
		t.Fatalf("status = %+v", st)
	}
}

func TestStatusUpstreamAheadBehind(t *testing.T) {
	origin := newRepo(t)
	origin.write("a.txt", "a\n")
	origin.commitAll("one")
	cloneDir := filepath.Join(t.TempDir(), "clone")
	origin.git("clone", "-q", origin.dir, cloneDir)
	clone := &repo{t: t, dir: cloneDir}
	clone.write("b.txt", "b\n")
	clone.commitAll("local")
	origin.write("c.txt", "c\n")
	origin.commitAll("remote 1")
	origin.write("d.txt", "d\n")
	origin.commitAll("remote 2")
	clone.git("fetch", "-q")
	st := status(t, cloneDir)
	if st.Upstream != "origin/main" || st.Ahead != 1 || st.Behind != 2 || st.Branch != "main" || !st.Clean {
		t.Fatalf("status = %+v", st)
	}
}

func TestStatusDetached(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("one")
	head := r.git("rev-parse", "HEAD")
	r.git("checkout", "-q", "--detach")
	st := status(t, r.dir)
	if !st.Detached || st.Branch != "" || st.Head != head {
		t.Fatalf("status = %+v", st)
	}
}

func TestStatusMaxStatusEntries(t *testing.T) {
	r := newRepo(t)
	for i := 0; i <= git.MaxStatusEntries; i++ {
		r.write(fmt.Sprintf("u%04d.txt", i), "x")
	}
	st := status(t, r.dir)
	if st.Total != git.MaxStatusEntries+1 || len(st.Entries) != git.MaxStatusEntries || !st.Truncated || st.Clean {
		t.Fatalf("total %d entries %d truncated %v", st.Total, len(st.Entries), st.Truncated)
	}
	os.Remove(filepath.Join(r.dir, "u0000.txt"))
	st = status(t, r.dir)
	if st.Total != git.MaxStatusEntries || len(st.Entries) != git.MaxStatusEntries || st.Truncated {
		t.Fatalf("at the bound: total %d entries %d truncated %v", st.Total, len(st.Entries), st.Truncated)
	}
}

func TestStatusDoesNotTouchTheRepository(t *testing.T) {
	r := newRepo(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r.write("a.txt", "a\n")
	r.commitAll("one")
	// A stat-dirty file: a git status that may write would refresh the
	// index.
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(r.dir, "a.txt"), future, future)
	index := filepath.Join(r.dir, ".git", "index")
	before, _ := os.ReadFile(index)
	fi0, _ := os.Stat(index)
	if st := status(t, r.dir); !st.Clean {
		t.Fatalf("status = %+v", st)
	}
	if d := diff(t, r.dir, nil); d.TotalFiles != 0 {
		t.Fatalf("diff = %+v", d)
	}
	after, _ := os.ReadFile(index)
	fi1, _ := os.Stat(index)
	if !bytes.Equal(before, after) || !fi0.ModTime().Equal(fi1.ModTime()) {
		t.Fatal("the index was rewritten")
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "index.lock")); !os.IsNotExist(err) {
		t.Fatal("index.lock left behind")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

func TestSubdirectoryProject(t *testing.T) {
	r := newRepo(t)
	r.write("top.txt", "top\n")
	r.write("sub/a.txt", "a\n")
	r.write("sub/inner/b.txt", "b\n")
	r.commitAll("one")
	r.write("top.txt", "top changed\n")
	r.write("sub/a.txt", "a changed\n")
	r.write("sub/new.txt", "n\n")
	r.write("outside-new.txt", "o\n")
	sub := filepath.Join(r.dir, "sub")

	st := status(t, sub)
	got := byPath(st.Entries)
	if st.Total != 2 || got["a.txt"].Kind != git.KindModified || got["new.txt"].Kind != git.KindUntracked {
		t.Fatalf("status = %+v", st)
	}
	d := diff(t, sub, nil)
	if d.TotalFiles != 1 || d.Files[0].Path != "a.txt" || !slices.Equal(d.Untracked, []string{"new.txt"}) {
		t.Fatalf("diff = %+v", d)
	}
}

const tenLines = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n"

func TestDiffHunks(t *testing.T) {
	r := newRepo(t)
	r.write("f.txt", tenLines)
	r.write("g.txt", "g\n")
	r.commitAll("one")
	r.write("f.txt", strings.Replace(tenLines, "l5\n", "L5\n", 1))
	r.write("u.txt", "untracked\n")

	d := diff(t, r.dir, nil)
	want := git.DiffFile{
		Path: "f.txt", Status: git.StatusModified, Additions: 1, Deletions: 1,
		Hunks: []git.Hunk{{
			Header: "@@ -2,7 +2,7 @@ l1", OldStart: 2, OldLines: 7, NewStart: 2, NewLines: 7,
			Lines: " l2\n l3\n l4\n-l5\n+L5\n l6\n l7\n l8\n",
		}},
	}
	if d.TotalFiles != 1 || d.Truncated || d.Staged || d.ContextLines != 3 || d.Additions != 1 || d.Deletions != 1 ||
		!equalJSON(d.Files[0], want) || !slices.Equal(d.Untracked, []string{"u.txt"}) || d.UntrackedTotal != 1 {
		t.Fatalf("diff = %+v", d)
	}

	d = diff(t, r.dir, map[string]any{"context_lines": 0})
	h := d.Files[0].Hunks[0]
	if h.Header != "@@ -5 +5 @@ l4" || h.OldStart != 5 || h.OldLines != 1 || h.NewStart != 5 || h.NewLines != 1 || h.Lines != "-l5\n+L5\n" || d.ContextLines != 0 {
		t.Fatalf("hunk = %+v", h)
	}
}

func TestDiffStagedAndPaths(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.write("b.txt", "b\n")
	r.write("dir/c.txt", "c\n")
	r.commitAll("one")
	r.write("a.txt", "a staged\n")
	r.git("add", "a.txt")
	r.write("b.txt", "b unstaged\n")
	r.write("dir/c.txt", "c unstaged\n")
	r.write("dir/new.txt", "n\n")
	r.write("other-new.txt", "n\n")

	paths := func(d git.DiffOutput) []string {
		var ps []string
		for _, f := range d.Files {
			ps = append(ps, f.Path)
		}
		return ps
	}
	if d := diff(t, r.dir, map[string]any{"staged": true}); !slices.Equal(paths(d), []string{"a.txt"}) || !d.Staged ||
		d.Files[0].Hunks[0].Lines != "-a\n+a staged\n" {
		t.Fatalf("staged = %+v", d)
	}
	if d := diff(t, r.dir, nil); !slices.Equal(paths(d), []string{"b.txt", "dir/c.txt"}) {
		t.Fatalf("unstaged = %+v", d)
	}
	d := diff(t, r.dir, map[string]any{"paths": []string{"dir"}})
	if !slices.Equal(paths(d), []string{"dir/c.txt"}) || !slices.Equal(d.Untracked, []string{"dir/new.txt"}) {
		t.Fatalf("paths=dir: %+v", d)
	}
	// Paths are literal, not globs.
	if d := diff(t, r.dir, map[string]any{"paths": []string{"*.txt"}}); d.TotalFiles != 0 || len(d.Untracked) != 0 {
		t.Fatalf("paths=*.txt: %+v", d)
	}
	if d := diff(t, r.dir, map[string]any{"paths": []string{"b.txt", "./dir/c.txt"}}); !slices.Equal(paths(d), []string{"b.txt", "dir/c.txt"}) {
		t.Fatalf("two paths: %+v", d)
	}
}

func TestDiffStatuses(t *testing.T) {
	r := newRepo(t)
	r.write("keep.txt", "k\n")
	r.write("gone.txt", "g1\ng2\n")
	r.write("old name.txt", "same content\nline two\nline three\n")
	r.write("bin.dat", "\x00\x01\x02binary")
	r.write("tab\tand\"quote.txt", "q\n")
	r.commitAll("one")
	r.git("rm", "-q", "gone.txt")
	r.git("mv", "old name.txt", "new name.txt")
	r.write("added.txt", "x\ny\n")
	r.write("bin.dat", "\x00\x03\x04binary changed")
	r.write("tab\tand\"quote.txt", "q2\n")
	r.git("add", "-A")

	d := diff(t, r.dir, map[string]any{"staged": true})
	files := map[string]git.DiffFile{}
	for _, f := range d.Files {
		files[f.Path] = f
	}
	if len(files) != 5 || d.TotalFiles != 5 {
		t.Fatalf("files = %+v", d.Files)
	}
	if f := files["added.txt"]; f.Status != git.StatusAdded || f.Additions != 2 || len(f.Hunks) != 1 || f.Hunks[0].Lines != "+x\n+y\n" {
		t.Errorf("added: %+v", f)
	}
	if f := files["gone.txt"]; f.Status != git.StatusDeleted || f.Deletions != 2 || len(f.Hunks) != 1 || f.Hunks[0].Lines != "-g1\n-g2\n" {
		t.Errorf("deleted: %+v", f)
	}
	if f := files["new name.txt"]; f.Status != git.StatusRenamed || f.OldPath != "old name.txt" || f.Additions != 0 || len(f.Hunks) != 0 {
		t.Errorf("renamed: %+v", f)
	}
	if f := files["bin.dat"]; f.Status != git.StatusModified || !f.Binary || len(f.Hunks) != 0 {
		t.Errorf("binary: %+v", f)
	}
	if f := files["tab\tand\"quote.txt"]; f.Status != git.StatusModified || len(f.Hunks) != 1 || f.Hunks[0].Lines != "-q\n+q2\n" {
		t.Errorf("quoted path: %+v", f)
	}
}

func TestDiffUnmerged(t *testing.T) {
	r := conflicted(t)
	d := diff(t, r.dir, nil)
	if d.TotalFiles != 1 {
		t.Fatalf("diff = %+v", d)
	}
	f := d.Files[0]
	if f.Path != "f.txt" || f.Status != git.StatusUnmerged || len(f.Hunks) != 1 || !strings.HasPrefix(f.Hunks[0].Header, "@@@ ") ||
		!strings.Contains(f.Hunks[0].Lines, "++<<<<<<< HEAD\n") || f.Hunks[0].OldStart != 1 || f.Hunks[0].NewStart != 1 {
		t.Fatalf("unmerged file = %+v", f)
	}
}

func TestDiffMaxBytesTruncation(t *testing.T) {
	r := newRepo(t)
	var a, b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&a, "line %03d\n", i)
		fmt.Fprintf(&b, "LINE %03d\n", i)
	}
	r.write("big.txt", a.String())
	r.write("z-later.txt", "z\n")
	r.commitAll("one")
	r.write("big.txt", b.String())
	r.write("z-later.txt", "Z\n")

	d := diff(t, r.dir, map[string]any{"max_bytes": 100})
	if !d.Truncated || d.TotalFiles != 2 || d.Additions != 201 || d.Deletions != 201 {
		t.Fatalf("diff = %+v", d)
	}
	big, later := d.Files[0], d.Files[1]
	total := 0
	for _, f := range d.Files {
		for _, h := range f.Hunks {
			total += len(h.Lines)
		}
	}
	if total > 100 || !big.HunksTruncated || len(big.Hunks) != 1 || !big.Hunks[0].Truncated ||
		!strings.HasSuffix(big.Hunks[0].Lines, "\n") || big.Hunks[0].Lines == "" {
		t.Fatalf("big = %+v (total %d)", big, total)
	}
	if later.Path != "z-later.txt" || len(later.Hunks) != 0 || !later.HunksTruncated || later.Additions != 1 {
		t.Fatalf("later = %+v", later)
	}
	// The default bound holds the whole diff.
	d = diff(t, r.dir, nil)
	if d.Truncated || len(d.Files[0].Hunks) != 1 || d.Files[0].Hunks[0].Truncated || len(d.Files[1].Hunks) != 1 {
		t.Fatalf("default diff = %+v", d)
	}
}

func TestDiffMaxDiffFilesAndMaxUntracked(t *testing.T) {
	r := newRepo(t)
	for i := 0; i <= git.MaxDiffFiles; i++ {
		r.write(fmt.Sprintf("f%04d.txt", i), "x\n")
	}
	r.commitAll("one")
	for i := 0; i <= git.MaxDiffFiles; i++ {
		r.write(fmt.Sprintf("f%04d.txt", i), "y\n")
	}
	for i := 0; i <= git.MaxUntracked; i++ {
		r.write(fmt.Sprintf("u%04d.txt", i), "u\n")
	}
	d := diff(t, r.dir, map[string]any{"max_bytes": git.MaxDiffBytes})
	if d.TotalFiles != git.MaxDiffFiles+1 || len(d.Files) != git.MaxDiffFiles || !d.Truncated ||
		d.Additions != git.MaxDiffFiles+1 {
		t.Fatalf("total %d files %d truncated %v additions %d", d.TotalFiles, len(d.Files), d.Truncated, d.Additions)
	}
	if d.UntrackedTotal != git.MaxUntracked+1 || len(d.Untracked) != git.MaxUntracked || !d.UntrackedTruncated || d.Untracked[0] != "u0000.txt" {
		t.Fatalf("untracked total %d listed %d truncated %v", d.UntrackedTotal, len(d.Untracked), d.UntrackedTruncated)
	}
}

func TestDiffInvalidArguments(t *testing.T) {
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("one")
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(r.dir, "escape"))
	many := make([]string, git.MaxDiffPaths+1)
	for i := range many {
		many[i] = "a.txt"
	}
	for name, tc := range map[string]struct {
		args map[string]any
		kind failure.Kind
	}{
		"context_lines -1":    {map[string]any{"context_lines": -1}, failure.InvalidArguments},
		"context_lines max+1": {map[string]any{"context_lines": git.MaxContextLines + 1}, failure.InvalidArguments},
		"max_bytes 0":         {map[string]any{"max_bytes": 0}, failure.InvalidArguments},
		"max_bytes max+1":     {map[string]any{"max_bytes": git.MaxDiffBytes + 1}, failure.InvalidArguments},
		"paths max+1":         {map[string]any{"paths": many}, failure.InvalidArguments},
		"traversal":           {map[string]any{"paths": []string{"../x"}}, failure.InvalidArguments},
		"absolute":            {map[string]any{"paths": []string{"/etc"}}, failure.InvalidArguments},
		"symlink escape":      {map[string]any{"paths": []string{"escape/x"}}, failure.PermissionDenied},
		"unknown field":       {map[string]any{"cached": true}, failure.InvalidArguments},
	} {
		t.Run(name, func(t *testing.T) {
			failed(t, dispatch(t, r.dir, "git_diff", tc.args), tc.kind)
		})
	}
	// The inclusive limits are accepted.
	diff(t, r.dir, map[string]any{"context_lines": git.MaxContextLines, "max_bytes": git.MaxDiffBytes, "paths": many[:git.MaxDiffPaths]})
	diff(t, r.dir, map[string]any{"context_lines": 0, "max_bytes": 1})
}

func TestDubiousOwnershipIsOperationFailed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the repository another owner")
	}
	r := newRepo(t)
	r.write("a.txt", "a\n")
	r.commitAll("one")
	if err := filepath.Walk(r.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 12345, 12345)
	}); err != nil {
		t.Skipf("cannot chown: %v", err)
	}
	out := failed(t, dispatch(t, r.dir, "git_status", nil), failure.OperationFailed)
	if out["git_exit_code"] == nil {
		t.Fatalf("detail = %v", out)
	}
}

// TestDiffSeesRacilyCleanEdit makes git's racy-clean check the only way to
// see an edit: the file keeps its size, inode and mtime, ctime is not
// trusted, and the index was written in the same instant as the file. The
// tool diffs against a copy of the index, which must keep the index's
// mtime or git would take the entry as clean.
func TestDiffSeesRacilyCleanEdit(t *testing.T) {
	r := newRepo(t)
	r.git("config", "core.trustctime", "false")
	file := filepath.Join(r.dir, "a.txt")
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	r.write("a.txt", "one\n")
	// An old mtime keeps git from smudging the entry when it commits.
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	r.commitAll("one")
	// Same size, same inode, same mtime; and an index written in that
	// same instant: only the racy-clean content check can see the edit.
	if err := os.WriteFile(file, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(r.dir, ".git", "index"), past, past); err != nil {
		t.Fatal(err)
	}
	d := diff(t, r.dir, nil)
	if d.TotalFiles != 1 || d.Additions != 1 {
		t.Fatalf("racily clean edit not seen: %+v", d)
	}
}
