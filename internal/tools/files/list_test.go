package files_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project/walk"
	"github.com/webcodex/webcodex/internal/tools/files"
)

func listed(out files.ListOutput) []string {
	var s []string
	for _, e := range out.Entries {
		s = append(s, fmt.Sprintf("%s %s %d", e.Path, e.Kind, e.SizeBytes))
	}
	return s
}

func ignoreTree(e *kerneltest.Env) {
	e.Write(".gitignore", "*.log\n!keep.log\nbuild/\n")
	e.Write("a.txt", "aa")
	e.Write("a/b.go", "package a")
	e.Write("app.log", "l")
	e.Write("keep.log", "k")
	e.Write("build/out", "o")
	e.Write("src/.gitignore", "secret.txt\n!debug.log\n")
	e.Write("src/secret.txt", "s")
	e.Write("src/debug.log", "dd")
	e.Write("src/main.go", "package main")
	e.Write("src/main_test.go", "package main")
	e.Write(".git/HEAD", "ref")
}

func TestListHonoursGitignore(t *testing.T) {
	e := newEnv(t)
	ignoreTree(e)
	out := kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{}))
	want := []string{
		".gitignore file 23",
		"a.txt file 2",
		"a dir 0",
		"a/b.go file 9",
		"keep.log file 1",
		"src dir 0",
		"src/.gitignore file 22",
		"src/debug.log file 2",
		"src/main.go file 12",
		"src/main_test.go file 12",
	}
	if got := listed(out); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out.Path != "." || out.Total != len(want) || out.Truncated || out.TotalIsLowerBound {
		t.Fatalf("summary = path %q total %d truncated %v", out.Path, out.Total, out.Truncated)
	}
}

func TestListIncludeIgnored(t *testing.T) {
	e := newEnv(t)
	ignoreTree(e)
	out := kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{"include_ignored": true}))
	got := strings.Join(listed(out), "\n")
	for _, must := range []string{"app.log file", "build dir", "build/out file", "src/secret.txt file"} {
		if !strings.Contains(got, must) {
			t.Errorf("include_ignored listing lacks %q", must)
		}
	}
	if strings.Contains(got, ".git ") || strings.Contains(got, ".git/") {
		t.Errorf("listing shows .git:\n%s", got)
	}
}

func TestListGlobsAndSubdirectory(t *testing.T) {
	e := newEnv(t)
	ignoreTree(e)
	out := kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{"globs": []string{"*.go", "!*_test.go"}}))
	if got := listed(out); strings.Join(got, ",") != "a/b.go file 9,src/main.go file 12" {
		t.Fatalf("globbed = %v", got)
	}
	out = kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{"path": "src/", "globs": []string{"src/*.log"}}))
	if got := listed(out); strings.Join(got, ",") != "src/debug.log file 2" || out.Path != "src" {
		t.Fatalf("src listing = %v (path %q)", got, out.Path)
	}
	msg := kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"globs": []string{"a[b"}}), failure.InvalidArguments)
	if !strings.Contains(msg, "globs[0]") {
		t.Errorf("message = %q", msg)
	}
}

func TestListDeterministic(t *testing.T) {
	e := newEnv(t)
	ignoreTree(e)
	first := kerneltest.OutputBytes(t, e.Call("list_project_files", map[string]any{}))
	second := kerneltest.OutputBytes(t, e.Call("list_project_files", map[string]any{}))
	if !bytes.Equal(first, second) {
		t.Fatalf("two listings differ:\n%s\n%s", first, second)
	}
}

func TestListLimit(t *testing.T) {
	if files.DefaultListLimit != 500 || files.MaxListLimit != 5000 {
		t.Fatal("list bounds changed")
	}
	e := newEnv(t)
	for i := range files.DefaultListLimit + 1 {
		e.Write(fmt.Sprintf("f%04d", i), "")
	}
	out := kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{}))
	if len(out.Entries) != files.DefaultListLimit || out.Total != files.DefaultListLimit+1 || !out.Truncated {
		t.Fatalf("default limit: %d entries, total %d, truncated %v", len(out.Entries), out.Total, out.Truncated)
	}
	out = kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{"limit": 2}))
	if got := listed(out); strings.Join(got, ",") != "f0000 file 0,f0001 file 0" || !out.Truncated {
		t.Fatalf("limit 2 = %v", got)
	}
	out = kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{"limit": files.MaxListLimit}))
	if len(out.Entries) != files.DefaultListLimit+1 || out.Truncated {
		t.Fatalf("limit max: %d entries, truncated %v", len(out.Entries), out.Truncated)
	}
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"limit": files.MaxListLimit + 1}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"limit": -1}), failure.InvalidArguments)
}

func TestListPathErrors(t *testing.T) {
	e := newEnv(t)
	e.Write("f.txt", "")
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"path": "f.txt"}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"path": "missing"}), failure.NotFound)
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"path": "../"}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"recursive": true}), failure.InvalidArguments)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(e.Project.Root, "out")); err != nil {
		t.Fatal(err)
	}
	kerneltest.Fails(t, e.Call("list_project_files", map[string]any{"path": "out"}), failure.PermissionDenied)
}

func TestListSymlinkNotFollowed(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.Project.Root, "out")); err != nil {
		t.Fatal(err)
	}
	out := kerneltest.OK[files.ListOutput](t, e.Call("list_project_files", map[string]any{}))
	if got := listed(out); strings.Join(got, ",") != "out symlink 0" {
		t.Fatalf("listing = %v", got)
	}
	if out.Entries[0].Kind != walk.KindSymlink {
		t.Fatal("kind is not symlink")
	}
}
