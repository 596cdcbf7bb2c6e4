package project_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

func openTree(t *testing.T, tr tree) *project.Tree {
	t.Helper()
	pt, err := tr.p.OpenTree()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pt.Close() })
	return pt
}

// The Tree applies the path policy exactly as Project.Resolve does, and
// its locations reach, through the root handle, the files the policy
// names, also through absolute symlinks and symlinks that leave the root
// and re-enter it, which the root handle alone does not follow.
func TestTreeMatchesThePolicy(t *testing.T) {
	tr := newTree(t)
	pt := openTree(t, tr)
	existing := map[string]string{ // path -> real file it names
		"top.txt":         "top.txt",
		"dir/file.txt":    "dir/file.txt",
		"in_file":         "dir/file.txt",
		"in_dir/file.txt": "dir/file.txt", // absolute symlink
		"dir/up_top":      "top.txt",
		"roundtrip":       "top.txt",
		"up/root/top.txt": "top.txt",
	}
	for in, real := range existing {
		loc, clean, err := pt.Resolve(in)
		if err != nil || clean != in {
			t.Errorf("Resolve(%q) = %q, %q, %v", in, loc, clean, err)
			continue
		}
		if loc != filepath.FromSlash(real) {
			t.Errorf("Resolve(%q) loc = %q, want %q", in, loc, real)
		}
		f, clean, err := pt.OpenFile(in, os.O_RDONLY)
		if err != nil || clean != in {
			t.Errorf("OpenFile(%q): %q, %v", in, clean, err)
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "x" {
			t.Errorf("OpenFile(%q) read %q", in, b)
		}
	}
	for _, in := range []string{"dir/new.txt", "newdir/deeper/new.txt", "in_dangling", "in_dir/sub/new.txt"} {
		if _, _, err := pt.Resolve(in); err != nil {
			t.Errorf("Resolve(%q): %v, want ok", in, err)
		}
		if _, _, err := pt.OpenFile(in, os.O_RDONLY); failure.KindOf(err) != failure.NotFound {
			t.Errorf("OpenFile(%q): %v, want not_found", in, err)
		}
	}
	escapes := []string{"out_file", "out_dir", "out_dir/secret.txt", "out_dir/new.txt", "out_rel", "out_dangling",
		"out_dangling_rel", "via_out_dir", "up", "up/outside/secret.txt", "loop_a", "loop_b/x"}
	for _, in := range escapes {
		for name, f := range map[string]func(string) error{
			"Resolve":      func(s string) error { _, _, err := pt.Resolve(s); return err },
			"ResolveEntry": func(s string) error { _, _, err := pt.ResolveEntry(s); return err },
			"OpenFile":     func(s string) error { _, _, err := pt.OpenFile(s, os.O_RDONLY); return err },
		} {
			if k := failure.KindOf(f(in)); k != failure.PermissionDenied {
				t.Errorf("%s(%q): kind %q, want %q", name, in, k, failure.PermissionDenied)
			}
		}
		if err := pt.Escaped(in); failure.KindOf(err) != failure.PermissionDenied {
			t.Errorf("Escaped(%q) = %v", in, err)
		}
	}
	for _, in := range []string{"", "/etc/passwd", tr.outside, "..", "../outside/secret.txt", "dir/../top.txt", `dir\file.txt`, "~"} {
		if _, _, err := pt.OpenFile(in, os.O_RDONLY); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("OpenFile(%q): %v, want invalid_arguments", in, err)
		}
	}
	if err := pt.Escaped("dir/file.txt"); err != nil {
		t.Errorf("Escaped(inside) = %v", err)
	}
}

// ResolveEntry expands the parent but names the last component itself.
func TestTreeResolveEntry(t *testing.T) {
	tr := newTree(t)
	pt := openTree(t, tr)
	for in, want := range map[string]string{
		"in_file":         "in_file",        // the link, not dir/file.txt
		"in_dir/file.txt": "dir/file.txt",   // absolute directory link expanded
		"dir/up_top":      "dir/up_top",     // the link
		"newdir/new.txt":  "newdir/new.txt", // nothing exists yet
		".":               ".",
	} {
		loc, _, err := pt.ResolveEntry(in)
		if err != nil || loc != filepath.FromSlash(want) {
			t.Errorf("ResolveEntry(%q) = %q, %v; want %q", in, loc, err, want)
		}
	}
}

// A symlink swapped in after the check is refused by the root handle.
func TestTreeRefusesASymlinkSwappedInAfterTheCheck(t *testing.T) {
	tr := newTree(t)
	pt := openTree(t, tr)
	loc, _, err := pt.Resolve("dir/sub")
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(tr.p.Root, "dir", "sub")
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tr.outside, "odir"), sub); err != nil {
		t.Fatal(err)
	}
	if _, err := pt.Root().OpenFile(filepath.Join(loc, "new.txt"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		t.Fatal("created a file through a symlink to the outside")
	}
	if _, err := os.Lstat(filepath.Join(tr.outside, "odir", "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("a file appeared outside: %v", err)
	}
	if _, _, err := pt.OpenFile("dir/sub/x", os.O_RDONLY); failure.KindOf(err) != failure.PermissionDenied {
		t.Fatalf("OpenFile through the swapped link: %v, want permission_denied", err)
	}
}
