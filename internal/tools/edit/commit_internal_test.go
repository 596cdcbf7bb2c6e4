package edit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

func mkPlan(t *testing.T, root, rel, op, content string, index int) *plan {
	t.Helper()
	return &plan{index: index, op: op, t: target{rel: rel, loc: rel, key: filepath.Join(root, rel)}, changed: true, content: []byte(content), mode: 0o644}
}

// openTree opens a Tree on a new canonical temporary project root.
func openTree(t *testing.T) (string, *project.Tree) {
	t.Helper()
	root, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := project.Project{ID: project.LocalID("c"), Name: "c", Root: root}.OpenTree()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tree.Close() })
	return root, tree
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

// A rename that fails after another file of the call was written is
// outcome_unknown and names what was written.
func TestCommitFailureAfterAWriteIsOutcomeUnknown(t *testing.T) {
	root, tree := openTree(t)
	// The second target is a non-empty directory: staging its temporary
	// file succeeds, the rename over the directory fails (also for root).
	if err := os.MkdirAll(filepath.Join(root, "blocker", "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	plans := []*plan{
		mkPlan(t, root, "first.txt", OpCreate, "first\n", 0),
		mkPlan(t, root, "blocker", OpReplace, "second\n", 1),
	}
	written, err := commit(tree, plans, nil)
	if !failure.Is(err, failure.OutcomeUnknown) {
		t.Fatalf("err = %v, want outcome_unknown", err)
	}
	if !slices.Equal(written, []string{"first.txt"}) {
		t.Fatalf("written = %v", written)
	}
	d := failure.DetailOf(err)
	if !slices.Equal(d["written_paths"].([]string), []string{"first.txt"}) || d["failed_path"] != "blocker" ||
		d["change_index"] != 1 || d["state_changed"] != true {
		t.Fatalf("detail = %v", d)
	}
	if b, err := os.ReadFile(filepath.Join(root, "first.txt")); err != nil || string(b) != "first\n" {
		t.Fatalf("first.txt = %q, %v", b, err)
	}
	for _, n := range entries(t, root) {
		if strings.HasPrefix(n, ".wc-edit-") {
			t.Fatalf("staging file %s left behind", n)
		}
	}
}

// A rename that fails before anything was written changes nothing and
// removes its staging files and created directories.
func TestCommitFailureBeforeAnyWriteChangesNothing(t *testing.T) {
	root, tree := openTree(t)
	if err := os.MkdirAll(filepath.Join(root, "blocker", "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	p0 := mkPlan(t, root, "blocker", OpReplace, "x", 0)
	p1 := mkPlan(t, root, "newdir/n.txt", OpCreate, "n", 1)
	p1.dirs = []string{"newdir"}
	written, err := commit(tree, []*plan{p0, p1}, nil)
	if err == nil || failure.Is(err, failure.OutcomeUnknown) || len(written) != 0 {
		t.Fatalf("err = %v, written = %v", err, written)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"blocker"}) {
		t.Fatalf("root holds %v", got)
	}
}

func TestLockPathsSerializesAndHonoursCancellation(t *testing.T) {
	unlock, err := lockPaths(context.Background(), []string{"/k/b", "/k/a", "/k/a"})
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Bool
	done := make(chan struct{})
	go func() {
		u, err := lockPaths(context.Background(), []string{"/k/a"})
		if err == nil {
			got.Store(true)
			u()
		}
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	if got.Load() {
		t.Fatal("second locker got a held lock")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := lockPaths(ctx, []string{"/k/b"}); !failure.Is(err, failure.Interrupted) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	unlock()
	<-done
	if !got.Load() {
		t.Fatal("second locker never got the lock")
	}
	pathLocks.mu.Lock()
	n := len(pathLocks.m)
	pathLocks.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d lock entries leaked", n)
	}
}

func TestDiffStats(t *testing.T) {
	old := []byte("a\nb\nc\nd\ne")
	reps := []replacement{
		{start: 2, end: 3, text: "B"},       // b -> B
		{start: 4, end: 5, text: "C"},       // c -> C (line adjacent: separate block)
		{start: 8, end: 9, text: "E\nF\nG"}, // e (no final newline) -> three lines
	}
	added, removed, preview, truncated := diffStats(old, reps)
	want := "@@ -2,1 +2,1 @@\n-b\n+B\n@@ -3,1 +3,1 @@\n-c\n+C\n@@ -5,1 +5,3 @@\n-e\n\\ No newline at end of file\n+E\n+F\n+G\n\\ No newline at end of file\n"
	if added != 5 || removed != 3 || preview != want || truncated {
		t.Fatalf("added %d removed %d truncated %v preview:\n%s", added, removed, truncated, preview)
	}
	// Two edits on one line form one block; unchanged lines are trimmed.
	old = []byte("keep\nx y\nkeep\n")
	reps = []replacement{{start: 5, end: 6, text: "X"}, {start: 7, end: 8, text: "Y"}}
	added, removed, preview, _ = diffStats(old, reps)
	if added != 1 || removed != 1 || preview != "@@ -2,1 +2,1 @@\n-x y\n+X Y\n" {
		t.Fatalf("added %d removed %d preview %q", added, removed, preview)
	}
}

// The before hook (the call's durable tool_call_started) runs once, after
// the staging files and before the first rename; when it fails nothing is
// changed: no target, no staging file, no directory.
func TestCommitBeforeHook(t *testing.T) {
	root, tree := openTree(t)
	if err := os.WriteFile(filepath.Join(root, "keep.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var staged []string
	calls := 0
	refused := failure.New(failure.Unavailable, "started not recorded")
	plans := []*plan{mkPlan(t, root, "keep.txt", OpReplace, "new\n", 0), mkPlan(t, root, "new.txt", OpCreate, "n\n", 1)}
	_, err := commit(tree, plans, func() error {
		calls++
		staged = entries(t, root) // the staging files exist, nothing renamed
		return refused
	})
	if err != refused || calls != 1 {
		t.Fatalf("commit = %v after %d hook calls, want the hook's error after 1", err, calls)
	}
	if len(staged) != 3 { // keep.txt and two staging files
		t.Fatalf("at the hook the project held %v, want keep.txt and two staging files", staged)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"keep.txt"}) {
		t.Fatalf("after a refused hook the project holds %v, want only keep.txt", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "old\n" {
		t.Fatalf("keep.txt = %q, want it unchanged", b)
	}

	// A plan that creates a directory calls the hook before the directory.
	p := mkPlan(t, root, "sub/dir/f.txt", OpCreate, "f\n", 0)
	p.dirs = []string{"sub", "sub/dir"}
	_, err = commit(tree, []*plan{p}, func() error {
		if _, err := os.Stat(filepath.Join(root, "sub")); err == nil {
			t.Error("the directory was created before the hook")
		}
		return refused
	})
	if err != refused {
		t.Fatalf("commit = %v, want the hook's error", err)
	}
	if got := entries(t, root); !slices.Equal(got, []string{"keep.txt"}) {
		t.Fatalf("after a refused hook the project holds %v, want only keep.txt", got)
	}

	// When the hook succeeds the change is made.
	calls = 0
	written, err := commit(tree, []*plan{mkPlan(t, root, "keep.txt", OpReplace, "new\n", 0)}, func() error { calls++; return nil })
	if err != nil || calls != 1 || !slices.Equal(written, []string{"keep.txt"}) {
		t.Fatalf("commit = %v %v after %d hook calls", written, err, calls)
	}
}
