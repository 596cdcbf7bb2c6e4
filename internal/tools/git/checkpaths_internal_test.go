package git

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// checkPaths looks the paths up through the root handle at call time: an
// existing path and a deleted one pass, one whose directory is now a
// symlink to the outside is permission_denied.
func TestCheckPathsThroughTheRoot(t *testing.T) {
	root, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	p := project.Project{ID: project.LocalID("g"), Name: "g", Root: root}
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "d", "f.txt"), []byte("x"), 0o644)
	got, err := checkPaths(p, []string{"./d//f.txt", "d/deleted.txt", "gone/x"})
	if err != nil || !slices.Equal(got, []string{"d/f.txt", "d/deleted.txt", "gone/x"}) {
		t.Fatalf("checkPaths = %v, %v", got, err)
	}
	if err := os.RemoveAll(filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"d/f.txt", "d"} {
		if _, err := checkPaths(p, []string{path}); failure.KindOf(err) != failure.PermissionDenied {
			t.Errorf("checkPaths(%q) through a symlink to the outside: %v, want permission_denied", path, err)
		}
	}
	if _, err := checkPaths(p, []string{"../x"}); failure.KindOf(err) != failure.InvalidArguments {
		t.Errorf("checkPaths(../x): %v, want invalid_arguments", err)
	}
}
