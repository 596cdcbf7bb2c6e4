package edit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestStagingNamesAreExactlyTheOnesStageWrites(t *testing.T) {
	for range 100 {
		if n := tempName(); !IsStagingName(n) {
			t.Fatalf("tempName %q is not a staging name", n)
		}
	}
	for _, n := range []string{".wc-edit-0123456789abcdef.tmp.bak", "wc-edit-0123456789abcdef.tmp", ".wc-edit-0123456789ABCDEF.tmp",
		".wc-edit-0123456789abcde.tmp", ".wc-edit-0123456789abcdef0.tmp", ".wc-edit-.tmp", ".wc-edit-0123456789abcdeg.tmp", "x.tmp"} {
		if IsStagingName(n) {
			t.Errorf("%q is taken for a staging name", n)
		}
	}
}

// TestRemoveStaging lays out real staging files left by a crash beside
// look-alikes, and checks that exactly the staging files outside .git and
// ignored directories are removed, even where an ignore rule hides them.
func TestRemoveStaging(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(rel string) string {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(".gitignore")
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.tmp\nnode_modules/\n"), 0o644)
	gone := []string{".wc-edit-0123456789abcdef.tmp", "pkg/deep/.wc-edit-fedcba9876543210.tmp"}
	kept := []string{
		"pkg/deep/main.go", ".wc-edit-0123456789abcdef.tmp.bak", "pkg/wc-edit-0123456789abcdef.tmp",
		"pkg/.wc-edit-0123456789ABCDEF.tmp", "pkg/.wc-edit-short.tmp",
		".git/.wc-edit-0123456789abcdef.tmp", "node_modules/x/.wc-edit-0123456789abcdef.tmp",
		".wc-edit-aaaaaaaaaaaaaaaa.tmp/inner.txt", // a directory with a staging name
	}
	for _, p := range append(append([]string{}, gone...), kept...) {
		write(p)
	}
	target := filepath.Join(outside, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	link := filepath.Join(root, "pkg", ".wc-edit-bbbbbbbbbbbbbbbb.tmp")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	removed, complete, err := RemoveStaging(context.Background(), root)
	if err != nil || removed != len(gone) || !complete {
		t.Fatalf("removed %d complete=%v err=%v, want %d", removed, complete, err, len(gone))
	}
	for _, p := range gone {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("staging file %s still exists (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("a symbolic link with a staging name was removed: %v", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("link target changed: %q %v", b, err)
	}
	if again, _, err := RemoveStaging(context.Background(), root); err != nil || again != 0 {
		t.Fatalf("second run removed %d (%v)", again, err)
	}
}
