package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

func TestClean(t *testing.T) {
	ok := []struct{ in, want string }{
		{".", "."},
		{"a", "a"},
		{"a/b", "a/b"},
		{"./a", "a"},
		{"a//b", "a/b"},
		{"a/./b", "a/b"},
		{"a/", "a"},
		{"a..b", "a..b"},
		{"..a", "..a"},
		{"a/...", "a/..."},
		{"a/~b", "a/~b"},
		{"dir/ü/日本.txt", "dir/ü/日本.txt"},
		{"ab:c", "ab:c"},
	}
	for _, c := range ok {
		got, err := project.Clean(c.in)
		if err != nil {
			t.Errorf("Clean(%q) = error %v, want %q", c.in, err, c.want)
			continue
		}
		if got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}

	bad := []string{
		"",
		"/",
		"/etc/passwd",
		"..",
		"../x",
		"a/../b",
		"a/..",
		"a/b/../../..",
		`a\b`,
		`..\x`,
		`C:\x`,
		"a\x00b",
		"a\nb",
		"a\tb",
		"a\x7f",
		"a\u0085b",
		"\xff\xfe",
		"~",
		"~/x",
		"~root/x",
		"C:/x",
		"c:x",
		"a:b", // a one-letter prefix before ':' reads as a drive
		"Z:",
		"file://x",
		"http://host/p",
		"a/file:///etc",
		"./~",
		".//~/x",
		"./C:/x",
		"./c:",
		"./file://x",
		strings.Repeat("a", project.MaxPathBytes+1),
	}
	for _, in := range bad {
		got, err := project.Clean(in)
		if k := failure.KindOf(err); k != failure.InvalidArguments {
			t.Errorf("Clean(%q) = %q, kind %q, want kind %q", in, got, k, failure.InvalidArguments)
		}
	}
}

func TestCleanMaxLength(t *testing.T) {
	in := strings.Repeat("a", project.MaxPathBytes)
	if _, err := project.Clean(in); err != nil {
		t.Fatalf("Clean of a %d-byte path: %v, want ok", len(in), err)
	}
}

// tree builds a canonical project root and a sibling "outside" directory
// with the symlinks the path-policy tests need.
type tree struct {
	p       project.Project
	outside string
}

func newTree(t testing.TB) tree {
	t.Helper()
	base, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	mkdir := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Join(root, "dir", "sub"))
	mkdir(filepath.Join(outside, "odir"))
	write(filepath.Join(root, "top.txt"))
	write(filepath.Join(root, "dir", "file.txt"))
	write(filepath.Join(outside, "secret.txt"))

	// Links that stay inside.
	link("dir/file.txt", "in_file")                           // relative
	link(filepath.Join(root, "dir"), "in_dir")                // absolute
	link("dir/new.txt", "in_dangling")                        // dangling, inside
	link("../top.txt", filepath.Join("dir", "up_top"))        // relative with ..
	link(filepath.Join("..", "root", "top.txt"), "roundtrip") // leaves and re-enters by name
	// Links that escape.
	link(filepath.Join(outside, "secret.txt"), "out_file")
	link(outside, "out_dir")
	link("../outside/secret.txt", "out_rel")
	link(filepath.Join(outside, "nope.txt"), "out_dangling")
	link("../outside/nope/deeper.txt", "out_dangling_rel")
	link("out_dir/created.txt", "via_out_dir") // lexically inside, really outside
	link("..", "up")
	link("loop_b", "loop_a")
	link("loop_a", "loop_b")
	return tree{p: project.Project{ID: project.LocalID("root"), Name: "root", Root: root}, outside: outside}
}

func TestResolveInside(t *testing.T) {
	tr := newTree(t)
	root := tr.p.Root
	cases := []struct{ in, clean string }{
		{".", "."},
		{"top.txt", "top.txt"},
		{"dir", "dir"},
		{"dir/file.txt", "dir/file.txt"},
		{"./dir//sub/", "dir/sub"},
		{"dir/new.txt", "dir/new.txt"},                     // not yet existing, parent exists
		{"newdir/deeper/new.txt", "newdir/deeper/new.txt"}, // not yet existing ancestors
		{"in_file", "in_file"},
		{"in_dir/file.txt", "in_dir/file.txt"},
		{"in_dir/sub/new.txt", "in_dir/sub/new.txt"},
		{"in_dangling", "in_dangling"},
		{"dir/up_top", "dir/up_top"},
		{"roundtrip", "roundtrip"},
		{"up/root/top.txt", "up/root/top.txt"}, // leaves the root and comes back
		{"top.txt/below", "top.txt/below"},     // cannot exist, cannot escape
	}
	for _, c := range cases {
		abs, clean, err := tr.p.Resolve(c.in)
		if err != nil {
			t.Errorf("Resolve(%q): %v, want ok", c.in, err)
			continue
		}
		if clean != c.clean {
			t.Errorf("Resolve(%q) clean = %q, want %q", c.in, clean, c.clean)
		}
		if want := filepath.Join(root, filepath.FromSlash(c.clean)); abs != want {
			t.Errorf("Resolve(%q) abs = %q, want %q", c.in, abs, want)
		}
	}
}

func TestResolveEscapes(t *testing.T) {
	tr := newTree(t)
	for _, in := range []string{
		"out_file",
		"out_dir",
		"out_dir/secret.txt",
		"out_dir/odir",
		"out_dir/new.txt",
		"out_dir/odir/new/deeper.txt",
		"out_rel",
		"out_dangling",
		"out_dangling_rel",
		"via_out_dir",
		"up",
		"up/outside/secret.txt",
		"loop_a",
		"loop_b/x",
	} {
		_, _, err := tr.p.Resolve(in)
		if k := failure.KindOf(err); k != failure.PermissionDenied {
			t.Errorf("Resolve(%q): kind %q (%v), want %q", in, k, err, failure.PermissionDenied)
		}
	}
	// Nothing was created while checking.
	if _, err := os.Lstat(filepath.Join(tr.outside, "created.txt")); !os.IsNotExist(err) {
		t.Errorf("Resolve created a file outside the root: %v", err)
	}
}

func TestResolveInvalid(t *testing.T) {
	tr := newTree(t)
	for _, in := range []string{
		"", "/etc/passwd", tr.outside, "..", "../outside/secret.txt", "dir/../top.txt",
		`dir\file.txt`, "a\x00", "~", "~/x", "C:/x", "file://x",
	} {
		_, _, err := tr.p.Resolve(in)
		if k := failure.KindOf(err); k != failure.InvalidArguments {
			t.Errorf("Resolve(%q): kind %q (%v), want %q", in, k, err, failure.InvalidArguments)
		}
	}
}

func TestResolveFilesystemRoot(t *testing.T) {
	// A project rooted at "/" must still accept paths below it.
	p := project.Project{ID: project.LocalID("slash"), Name: "slash", Root: string(filepath.Separator)}
	tmp, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.TrimPrefix(filepath.ToSlash(tmp), "/")
	abs, _, err := p.Resolve(rel)
	if err != nil {
		t.Fatalf("Resolve(%q) under /: %v", rel, err)
	}
	if abs != tmp {
		t.Errorf("abs = %q, want %q", abs, tmp)
	}
}

func TestRel(t *testing.T) {
	tr := newTree(t)
	got, err := tr.p.Rel(filepath.Join(tr.p.Root, "dir", "file.txt"))
	if err != nil || got != "dir/file.txt" {
		t.Errorf("Rel inside = %q, %v; want dir/file.txt", got, err)
	}
	if got, err := tr.p.Rel(tr.p.Root); err != nil || got != "." {
		t.Errorf("Rel(root) = %q, %v; want .", got, err)
	}
	if got, err := tr.p.Rel(filepath.Join(tr.outside, "secret.txt")); err == nil {
		t.Errorf("Rel outside = %q, want an error", got)
	}
}
