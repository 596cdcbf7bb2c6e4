package project_test

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

var fuzzSeeds = []string{
	".", "a", "a/b", "./a", "a//b", "a/", "..", "../x", "a/../b", `a\b`, "a\x00b",
	"~", "~/x", "C:/x", "file://x", "/etc/passwd", "\xff",
	"top.txt", "dir/file.txt", "dir/new.txt", "in_dir/file.txt", "in_dangling",
	"out_file", "out_dir/secret.txt", "out_dangling", "via_out_dir", "up/outside",
	"up/root/top.txt", "loop_a", "top.txt/x", "dir/up_top",
}

// FuzzClean checks that Clean either refuses a path with InvalidArguments
// or returns a canonical relative path with no ".." component, and that
// cleaning is idempotent.
func FuzzClean(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := project.Clean(in)
		if err != nil {
			if k := failure.KindOf(err); k != failure.InvalidArguments {
				t.Fatalf("Clean(%q): kind %q, want %q", in, k, failure.InvalidArguments)
			}
			return
		}
		if got == "" || path.IsAbs(got) || path.Clean(got) != got {
			t.Fatalf("Clean(%q) = %q: not a canonical relative path", in, got)
		}
		for _, part := range strings.Split(got, "/") {
			if part == ".." {
				t.Fatalf("Clean(%q) = %q contains ..", in, got)
			}
		}
		again, err := project.Clean(got)
		if err != nil || again != got {
			t.Fatalf("Clean(Clean(%q)) = %q, %v; want %q", in, again, err, got)
		}
	})
}

// FuzzResolve checks that for any input Resolve either fails with
// InvalidArguments or PermissionDenied, or returns a path inside the root
// whose real location (as far as it exists) is inside the root too. For an
// accepted path it then does what a creating tool would do (make the parent
// directories and open the file for appending) and checks that nothing
// appeared outside the root, which catches escapes through dangling
// symlinks; the tree is restored afterwards.
func FuzzResolve(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	tr := newTree(f)
	root := tr.p.Root
	rootBefore := snapshot(f, root)
	outsideBefore := snapshot(f, tr.outside)
	f.Fuzz(func(t *testing.T, in string) {
		abs, clean, err := tr.p.Resolve(in)
		if err != nil {
			if k := failure.KindOf(err); k != failure.InvalidArguments && k != failure.PermissionDenied {
				t.Fatalf("Resolve(%q): kind %q (%v)", in, k, err)
			}
			return
		}
		if !inside(root, abs) {
			t.Fatalf("Resolve(%q) = %q: outside %q", in, abs, root)
		}
		if want := filepath.Join(root, filepath.FromSlash(clean)); abs != want {
			t.Fatalf("Resolve(%q) abs %q != root + clean %q", in, abs, want)
		}
		// The real location of the longest existing prefix is inside.
		for probe := abs; ; probe = filepath.Dir(probe) {
			real, err := filepath.EvalSymlinks(probe)
			if err == nil {
				if !inside(root, real) {
					t.Fatalf("Resolve(%q) = %q, which really is %q, outside %q", in, abs, real, root)
				}
				break
			}
			if probe == root {
				t.Fatalf("root %q does not resolve: %v", root, err)
			}
		}
		// Create it the way a tool would; failures are fine, escapes are not.
		defer restore(t, root, rootBefore)
		_ = os.MkdirAll(filepath.Dir(abs), 0o755)
		if fh, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			fh.Close()
		}
		if after := snapshot(t, tr.outside); !maps.Equal(after, outsideBefore) {
			t.Fatalf("creating Resolve(%q) = %q changed the outside tree: %v", in, abs, after)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil && !inside(root, real) {
			t.Fatalf("created Resolve(%q) = %q really is %q, outside %q", in, abs, real, root)
		}
	})
}

// snapshot lists every entry below dir (without following symlinks).
func snapshot(t testing.TB, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out[p] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// restore removes every entry below root that before does not list.
func restore(t testing.TB, root string, before map[string]bool) {
	t.Helper()
	var added []string
	for p := range snapshot(t, root) {
		if !before[p] {
			added = append(added, p)
		}
	}
	slices.Sort(added) // parents before children; RemoveAll of a gone child is a no-op
	for _, p := range added {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
}

func inside(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}
