//go:build linux

// Package swaptest reproduces the directory/symlink swap race against a
// project's file tools, for their tests: while the tools run, a goroutine
// atomically exchanges (renameat2 RENAME_EXCHANGE) a directory inside the
// project with a symlink to a directory outside it, over and over. The
// outside directory holds files with the same names as the inside one, and
// a unique marker in their content and in one file name, so that any read
// that reached outside can be recognised, and it is snapshotted so that any
// file created, changed or removed there (staging files included) is found.
package swaptest

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Names inside the project root.
const (
	// Dir is the directory the tools work in; while swapped it is a
	// symlink to Outside.
	Dir = "d"
	// Link is the symlink to Outside; while swapped it is the directory.
	Link = "swap"
)

// MaxSwaps bounds the exchanges of one attack.
const MaxSwaps = 1 << 20

// An Attack is one prepared project tree and its swapping goroutine.
type Attack struct {
	// Root is the project root; Outside the directory the symlink names.
	Root, Outside string
	// Marker occurs in every outside file's content, and in the name of
	// the outside-only file, and nowhere inside the project.
	Marker string

	before map[string]string
	stop   chan struct{}
	done   sync.WaitGroup
	swaps  atomic.Int64
	err    atomic.Value
}

// New lays out the attack under the project root root (which must exist):
// root/d holds files (a path relative to d -> content), root/swap is a
// symlink to a fresh outside directory holding the same paths with the
// marker as content and one more file whose name is the marker.
func New(t *testing.T, root string, files map[string]string) *Attack {
	t.Helper()
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	rand.Read(b[:])
	a := &Attack{Root: root, Outside: outside, Marker: "OUTSIDE-" + hex.EncodeToString(b[:])}
	write := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range files {
		if strings.Contains(content, a.Marker) {
			t.Fatal("inside content holds the marker")
		}
		write(filepath.Join(root, Dir, filepath.FromSlash(rel)), content)
		write(filepath.Join(outside, filepath.FromSlash(rel)), a.Marker+" "+rel+"\n")
	}
	write(filepath.Join(outside, a.Marker+".txt"), a.Marker+"\n")
	if err := os.Symlink(outside, filepath.Join(root, Link)); err != nil {
		t.Fatal(err)
	}
	a.before = Snapshot(t, outside)
	return a
}

// Start begins swapping root/d and root/swap until Stop, at most MaxSwaps
// times.
func (a *Attack) Start() {
	a.stop = make(chan struct{})
	a.done.Add(1)
	go func() {
		defer a.done.Done()
		d, l := filepath.Join(a.Root, Dir), filepath.Join(a.Root, Link)
		for range MaxSwaps {
			select {
			case <-a.stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE); err != nil {
				a.err.Store(err)
				return
			}
			a.swaps.Add(1)
		}
	}()
}

// Stop ends the swapping, leaves root/d a directory again and returns the
// number of exchanges made. It fails the test if an exchange failed.
func (a *Attack) Stop(t *testing.T) int64 {
	t.Helper()
	close(a.stop)
	a.done.Wait()
	if err, _ := a.err.Load().(error); err != nil {
		t.Fatalf("renameat2 RENAME_EXCHANGE: %v", err)
	}
	n := a.swaps.Load()
	if fi, err := os.Lstat(filepath.Join(a.Root, Dir)); err != nil || !fi.IsDir() {
		d, l := filepath.Join(a.Root, Dir), filepath.Join(a.Root, Link)
		if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// CheckOutside fails the test when anything outside the project changed:
// the outside directory differs from its snapshot (a file created,
// changed or removed, a staging file included), or the project root's
// parent holds a staging file.
func (a *Attack) CheckOutside(t *testing.T) {
	t.Helper()
	after := Snapshot(t, a.Outside)
	if !maps.Equal(a.before, after) {
		var diff []string
		for k, v := range after {
			if w, ok := a.before[k]; !ok || w != v {
				diff = append(diff, "changed or created: "+k)
			}
		}
		for k := range a.before {
			if _, ok := after[k]; !ok {
				diff = append(diff, "removed: "+k)
			}
		}
		slices.Sort(diff)
		t.Errorf("%d outside change(s): %s", len(diff), strings.Join(diff, "; "))
	}
	des, err := os.ReadDir(filepath.Dir(a.Root))
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".wc-edit-") {
			t.Errorf("staging file %s next to the project root", de.Name())
		}
	}
}

// Snapshot maps every entry beneath dir (relative slash path) to its type,
// mode and, for regular files, content.
func Snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := de.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[filepath.ToSlash(rel)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// StagingFiles returns the staging files (".wc-edit-*") beneath dir.
func StagingFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	for p := range Snapshot(t, dir) {
		if strings.HasPrefix(filepath.Base(p), ".wc-edit-") {
			found = append(found, p)
		}
	}
	slices.Sort(found)
	return found
}
