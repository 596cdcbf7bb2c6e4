package walk_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project/walk"
)

// write creates the file rel under root with content, making parents.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
}

// walkIn walks start (no symlink leads to it) in a root opened on root.
func walkIn(t *testing.T, ctx context.Context, root, start string, opts walk.Options, fn func(walk.Entry) error) error {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return walk.Walk(ctx, r, start, filepath.FromSlash(start), opts, fn)
}

// collect walks start and returns "path kind" lines.
func collect(t *testing.T, root, start string, opts walk.Options) []string {
	t.Helper()
	var got []string
	err := walkIn(t, context.Background(), root, start, opts, func(e walk.Entry) error {
		got = append(got, e.Path+" "+string(e.Kind))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tree builds a project exercising nested ignore files and negation.
func tree(t *testing.T) string {
	root := t.TempDir()
	write(t, root, ".gitignore", "*.log\n!keep.log\nbuild/\n/top-only.txt\n")
	write(t, root, "a.txt", "a")
	write(t, root, "a/b.txt", "b")
	write(t, root, "app.log", "x")
	write(t, root, "keep.log", "k")
	write(t, root, "build/out.bin", "o")
	write(t, root, "top-only.txt", "t")
	write(t, root, "src/top-only.txt", "t")
	write(t, root, "src/.gitignore", "secret.txt\n!debug.log\n/local/\n")
	write(t, root, "src/secret.txt", "s")
	write(t, root, "src/debug.log", "d")
	write(t, root, "src/main.go", "package main")
	write(t, root, "src/local/x.go", "x")
	write(t, root, "src/deep/local/y.go", "y")
	write(t, root, ".git/HEAD", "ref")
	write(t, root, "sub/.git", "gitdir: elsewhere")
	return root
}

func TestWalkHonoursNestedIgnoreFiles(t *testing.T) {
	root := tree(t)
	got := collect(t, root, ".", walk.Options{})
	want := []string{
		".gitignore file",
		"a.txt file",
		"a dir",
		"a/b.txt file",
		"keep.log file",
		"src dir",
		"src/.gitignore file",
		"src/debug.log file",
		"src/deep dir",
		"src/deep/local dir",
		"src/deep/local/y.go file",
		"src/main.go file",
		"src/top-only.txt file",
		"sub dir",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("walk =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestWalkIncludeIgnoredStillSkipsGit(t *testing.T) {
	root := tree(t)
	got := collect(t, root, ".", walk.Options{IncludeIgnored: true})
	for _, must := range []string{"app.log file", "build dir", "build/out.bin file", "src/secret.txt file", "src/local/x.go file", "top-only.txt file"} {
		if !slices.Contains(got, must) {
			t.Errorf("IncludeIgnored walk lacks %q", must)
		}
	}
	for _, e := range got {
		path := strings.Fields(e)[0]
		if slices.Contains(strings.Split(path, "/"), walk.GitDirName) {
			t.Errorf("walk reported %q", e)
		}
	}
}

func TestWalkStartAppliesAncestorRules(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "*.tmp\n")
	write(t, root, "a/.gitignore", "skip/\n")
	write(t, root, "a/b/x.tmp", "")
	write(t, root, "a/b/x.go", "")
	write(t, root, "a/b/skip/y.go", "")
	got := collect(t, root, "a/b", walk.Options{})
	want := []string{"a/b/x.go file"}
	if !slices.Equal(got, want) {
		t.Fatalf("walk a/b = %v, want %v", got, want)
	}
}

func TestWalkExplicitStartIsWalkedEvenWhenIgnored(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".gitignore", "vendor/\n")
	write(t, root, "vendor/lib.go", "")
	if got := collect(t, root, ".", walk.Options{}); len(got) != 1 || got[0] != ".gitignore file" {
		t.Fatalf("root walk = %v", got)
	}
	got := collect(t, root, "vendor", walk.Options{})
	if !slices.Equal(got, []string{"vendor/lib.go file"}) {
		t.Fatalf("vendor walk = %v", got)
	}
}

func TestWalkOrderIsGitTreeOrder(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "")
	write(t, root, "a/z", "")
	write(t, root, "a-b", "")
	write(t, root, "B", "")
	got := collect(t, root, ".", walk.Options{})
	want := []string{"B file", "a-b file", "a.txt file", "a dir", "a/z file"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestWalkReportsSymlinksWithoutFollowing(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.txt", "s")
	root := t.TempDir()
	write(t, root, "f.txt", "hello")
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	var entries []walk.Entry
	err := walkIn(t, context.Background(), root, ".", walk.Options{}, func(e walk.Entry) error {
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("entries = %+v", entries)
	}
	if entries[0].Path != "f.txt" || entries[0].Kind != walk.KindFile || entries[0].Size != 5 ||
		entries[0].Loc != "f.txt" {
		t.Errorf("file entry = %+v", entries[0])
	}
	if entries[1].Path != "out" || entries[1].Kind != walk.KindSymlink || entries[1].Size != 0 {
		t.Errorf("link entry = %+v", entries[1])
	}
}

func TestWalkIgnoresSymlinkedIgnoreFile(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "rules", "*.go\n")
	root := t.TempDir()
	write(t, root, "x.go", "")
	write(t, root, "sub/y.go", "")
	for _, dir := range []string{".", "sub"} {
		if err := os.Symlink(filepath.Join(outside, "rules"), filepath.Join(root, dir, ".gitignore")); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, root, ".", walk.Options{})
	if !slices.Contains(got, "x.go file") || !slices.Contains(got, "sub/y.go file") {
		t.Fatalf("a symlinked .gitignore was applied: %v", got)
	}
}

func TestWalkHonoursInfoExclude(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".git/info/exclude", "*.secret\n")
	write(t, root, "a.secret", "")
	write(t, root, "a.txt", "")
	got := collect(t, root, ".", walk.Options{})
	if !slices.Equal(got, []string{"a.txt file"}) {
		t.Fatalf("walk = %v", got)
	}
}

func TestWalkSkipDirAndSkipAll(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/x", "")
	write(t, root, "b/y", "")
	write(t, root, "c", "")
	write(t, root, "d", "")
	var got []string
	err := walkIn(t, context.Background(), root, ".", walk.Options{}, func(e walk.Entry) error {
		got = append(got, e.Path)
		if e.Path == "a" {
			return walk.SkipDir
		}
		if e.Path == "c" {
			return walk.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Tree order compares "a/", "b/", "c", "d".
	want := []string{"a", "b", "b/y", "c"}
	if !slices.Equal(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}

	// SkipDir on a file skips the rest of its directory.
	got = nil
	write(t, root, "b/z", "")
	err = walkIn(t, context.Background(), root, ".", walk.Options{}, func(e walk.Entry) error {
		got = append(got, e.Path)
		if e.Path == "b/y" {
			return walk.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"a", "a/x", "b", "b/y", "c", "d"}
	if !slices.Equal(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
}

func TestWalkReturnsVisitErrorAndContextError(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/b", "")
	boom := errors.New("boom")
	err := walkIn(t, context.Background(), root, ".", walk.Options{}, func(walk.Entry) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = walkIn(t, ctx, root, ".", walk.Options{}, func(walk.Entry) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	err = walkIn(t, context.Background(), root, "missing", walk.Options{}, func(walk.Entry) error { return nil })
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not exist", err)
	}
}

func TestMaxIgnoreFileBytes(t *testing.T) {
	if walk.MaxIgnoreFileBytes != 1<<20 {
		t.Fatalf("MaxIgnoreFileBytes = %d", walk.MaxIgnoreFileBytes)
	}
	// Fill the ignore file so that "cut.txt" straddles the bound and
	// "late.txt" lies past it: neither may apply, in the start directory
	// or beneath it.
	filler := strings.Repeat("#"+strings.Repeat("x", 98)+"\n", (walk.MaxIgnoreFileBytes-4)/100)
	content := "early.txt\n" + filler
	pad := walk.MaxIgnoreFileBytes - len(content) - 3
	content += strings.Repeat("#", pad) + "\ncut.txt\nlate.txt\n"
	for _, dir := range []string{"", "sub/"} {
		root := t.TempDir()
		write(t, root, dir+".gitignore", content)
		write(t, root, dir+"early.txt", "")
		write(t, root, dir+"cut.txt", "")
		write(t, root, dir+"cut", "")
		write(t, root, dir+"late.txt", "")
		got := collect(t, root, ".", walk.Options{})
		want := []string{dir + ".gitignore file", dir + "cut file", dir + "cut.txt file", dir + "late.txt file"}
		if dir != "" {
			want = append([]string{"sub dir"}, want...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("walk = %v, want %v", got, want)
		}
	}
}

func TestIsBinary(t *testing.T) {
	if walk.BinarySniffBytes != 8<<10 {
		t.Fatalf("BinarySniffBytes = %d", walk.BinarySniffBytes)
	}
	text := bytes.Repeat([]byte("a"), walk.BinarySniffBytes)
	if walk.IsBinary(text) {
		t.Error("text reported binary")
	}
	nulLast := append(bytes.Repeat([]byte("a"), walk.BinarySniffBytes-1), 0)
	if !walk.IsBinary(nulLast) {
		t.Error("NUL at the last sniffed byte not reported")
	}
	nulPast := append(bytes.Repeat([]byte("a"), walk.BinarySniffBytes), 0)
	if walk.IsBinary(nulPast) {
		t.Error("NUL past the sniffed bytes reported")
	}
	if walk.IsBinary(nil) {
		t.Error("empty content reported binary")
	}
}

func TestGlobSet(t *testing.T) {
	g, err := walk.CompileGlobs("globs", []string{"*.go", "docs/**/*.md", "!*_test.go"})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		"main.go":             true,
		"a/b/c.go":            true,
		"a/b/c_test.go":       false,
		"docs/x.md":           true,
		"docs/a/b/x.md":       true,
		"x.md":                false,
		"README":              false,
		"internal/docs/a.md":  false,
		"internal/x_test.go":  false,
		"internal/x_test.goo": false,
	}
	for p, want := range cases {
		if got := g.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	var zero walk.GlobSet
	if !zero.Match("anything/at/all") {
		t.Error("zero GlobSet must match everything")
	}
	onlyExclude, err := walk.CompileGlobs("globs", []string{"!vendor/**"})
	if err != nil {
		t.Fatal(err)
	}
	if onlyExclude.Match("vendor/a.go") || !onlyExclude.Match("main.go") {
		t.Error("exclusion-only set misbehaves")
	}
}

func TestCompileGlobsRejects(t *testing.T) {
	if walk.MaxGlobs != 32 || walk.MaxGlobBytes != 256 {
		t.Fatalf("bounds changed: %d %d", walk.MaxGlobs, walk.MaxGlobBytes)
	}
	many := make([]string, walk.MaxGlobs+1)
	for i := range many {
		many[i] = "*.go"
	}
	if _, err := walk.CompileGlobs("globs", many[:walk.MaxGlobs]); err != nil {
		t.Fatalf("MaxGlobs patterns refused: %v", err)
	}
	long := strings.Repeat("a", walk.MaxGlobBytes)
	if _, err := walk.CompileGlobs("globs", []string{long}); err != nil {
		t.Fatalf("MaxGlobBytes pattern refused: %v", err)
	}
	cases := []struct {
		globs []string
		msg   string
	}{
		{many, "at most 32"},
		{[]string{long + "a"}, "globs[0] is longer"},
		{[]string{"*.go", "["}, `globs[1] "["`},
		{[]string{""}, "globs[0] is empty"},
		{[]string{"!"}, "globs[0] is empty"},
	}
	for _, c := range cases {
		_, err := walk.CompileGlobs("globs", c.globs)
		if failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("%v: kind %q, want invalid_arguments", c.globs, failure.KindOf(err))
			continue
		}
		if !strings.Contains(failure.MessageOf(err), c.msg) {
			t.Errorf("%v: message %q lacks %q", c.globs, failure.MessageOf(err), c.msg)
		}
	}
}

// TestWalkAgreesWithGit compares the files Walk reports with the untracked,
// not-ignored files git itself lists for the same tree.
func TestWalkAgreesWithGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	cmd := exec.Command(gitBin, "init", "-q", root)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	write(t, root, ".gitignore", strings.Join([]string{
		"*.log", "!keep.log", "build/", "/top.txt", "docs/**/*.tmp", "**/cache", "gen/**", "!gen/keep.go",
		"[Tt]emp*", "*.o", "!special.o", "a/**/z.txt", `\#lit`, "space\\ ",
	}, "\n")+"\n")
	for _, f := range []string{
		"a.log", "keep.log", "x/keep.log", "x/a.log", "build/a.go", "x/build/b.go", "top.txt", "x/top.txt",
		"docs/a.tmp", "docs/x/y/b.tmp", "x/docs/c.tmp", "cache/a", "x/cache/b", "gen/a.go", "gen/keep.go",
		"Temp1", "temp2/x", "a.o", "special.o", "a/z.txt", "a/b/z.txt", "a/b/c/z.txt", "b/a/z.txt",
		"#lit", "space ", "plain.go", "src/x.go",
		"src/.gitignore", "src/n.go", "src/debug.log", "src/local/z.go", "src/deep/local/z.go", "src/sub/s.txt",
	} {
		write(t, root, f, "x")
	}
	write(t, root, "src/.gitignore", "n.go\n!debug.log\n/local/\nsub/*.txt\n")
	write(t, root, ".git/info/exclude", "*.excluded\n")
	write(t, root, "x.excluded", "x")

	cmd = exec.Command(gitBin, "-C", root, "ls-files", "--others", "--exclude-standard", "-z")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var want []string
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p != "" {
			want = append(want, p)
		}
	}
	var got []string
	err = walkIn(t, context.Background(), root, ".", walk.Options{}, func(e walk.Entry) error {
		if e.Kind == walk.KindFile {
			got = append(got, e.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("walk files =\n%s\ngit files =\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
