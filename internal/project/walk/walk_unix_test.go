//go:build unix

package walk_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/project/walk"
)

// TestWalkNoSizesAndRetainedDirs checks that NoSizes changes only the
// sizes, and that a retained Dir reads its files after the walk has left
// it: regular files up to the limit, a larger one as large, a symbolic
// link or a FIFO in a file's place not at all.
func TestWalkNoSizesAndRetainedDirs(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "secret.txt", "secret")
	root := t.TempDir()
	write(t, root, "a.txt", "alpha")
	write(t, root, "d/b.txt", "beta")
	write(t, root, "d/e/big.txt", "0123456789")
	write(t, root, "d/e/swapped.txt", "gone")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "d", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "d", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	sized := collect(t, root, ".", walk.Options{})
	var entries []walk.Entry
	err := walkIn(t, context.Background(), root, ".", walk.Options{NoSizes: true}, func(e walk.Entry) error {
		if e.Size != 0 {
			t.Errorf("%s: Size %d under NoSizes", e.Path, e.Size)
		}
		e.Dir.Retain()
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var unsized []string
	for _, e := range entries {
		unsized = append(unsized, e.Path+" "+string(e.Kind))
	}
	if !slices.Equal(unsized, sized) {
		t.Fatalf("NoSizes walk = %v, want %v", unsized, sized)
	}
	// Swap a walked file for a link to the outside, then read everything.
	swapped := filepath.Join(root, "d", "e", "swapped.txt")
	if err := os.Remove(swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), swapped); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		var buf []byte
		content, large, err := e.Dir.ReadRegular(e.Name(), &buf, 8)
		switch {
		case errors.Is(err, fs.ErrInvalid):
			got[e.Path] = "not regular"
		case err != nil:
			got[e.Path] = "error"
		case large:
			got[e.Path] = "large"
		default:
			got[e.Path] = string(content)
		}
		e.Dir.Release()
	}
	want := map[string]string{
		"a.txt": "alpha", "d": "not regular", "d/b.txt": "beta", "d/e": "not regular",
		"d/e/big.txt": "large", "d/e/swapped.txt": "error", "d/link.txt": "error", "d/pipe": "not regular",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("reads = %v, want %v", got, want)
	}
}
