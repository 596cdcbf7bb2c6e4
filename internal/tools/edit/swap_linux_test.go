package edit_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/project/filerev"
	"github.com/webcodex/webcodex/internal/project/swaptest"
)

// TestSwapRaceWritesNothingOutside reproduces the issue-12 attack on
// write_project_file and apply_text_edits: while d is exchanged with a
// symlink to an outside directory, over and over, the tools create files
// under d and rewrite d/e.txt under a fence. Nothing outside may be
// created, changed or removed (staging files included), no result may
// carry outside content, and no staging file may be left anywhere.
func TestSwapRaceWritesNothingOutside(t *testing.T) {
	e := newEnv(t)
	a := swaptest.New(t, e.root, map[string]string{"e.txt": "edit one\n", "sub/keep.txt": "keep\n"})
	a.Start()
	const calls = 1500
	current := "edit one\n" // d/e.txt as the last successful call left it
	next := func() string {
		if current == "edit one\n" {
			return "edit two\n"
		}
		return "edit one\n"
	}
	leaks, refused, ok := 0, 0, 0
	kinds := map[string]int{}
	var first string
	for i := range calls {
		var args map[string]any
		tool := "write_project_file"
		want := current
		switch i % 4 {
		case 0:
			args = map[string]any{"path": fmt.Sprintf("d/w-%d.txt", i), "content": "w\n"}
		case 1:
			want = next()
			args = map[string]any{"path": "d/e.txt", "content": want, "expected_read_revision": filerev.Of([]byte(current))}
		case 2:
			tool = "apply_text_edits"
			args = map[string]any{"changes": []any{
				map[string]any{"path": fmt.Sprintf("d/sub/a-%d.txt", i), "op": "create", "content": "a\n"},
			}}
		case 3:
			tool = "apply_text_edits"
			want = next()
			args = map[string]any{"changes": []any{
				map[string]any{"path": fmt.Sprintf("d/c-%d.txt", i), "op": "create", "content": "c\n"},
				map[string]any{"path": "d/e.txt", "op": "replace", "expected_read_revision": filerev.Of([]byte(current)),
					"edits": []any{map[string]any{"old_text": current, "new_text": want}}},
			}}
		}
		res := e.call(tool, args)
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(string(raw), a.Marker):
			if leaks++; first == "" {
				first = string(raw)
			}
		case res.Success:
			ok++
			current = want
		default:
			refused++
			kinds[string(res.Error.Kind)]++
		}
	}
	swaps := a.Stop(t)
	t.Logf("%d swaps; %d calls succeeded, %d refused %v, %d leaked", swaps, ok, refused, kinds, leaks)
	if leaks > 0 {
		t.Errorf("%d of %d calls returned outside content; first: %.300s", leaks, calls, first)
	}
	a.CheckOutside(t)
	if got := swaptest.StagingFiles(t, e.root); len(got) > 0 {
		t.Errorf("staging files left in the project: %v", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, swaptest.Dir, "e.txt")); err != nil || string(b) != current {
		t.Errorf("d/e.txt = %q, %v; the last successful call left %q", b, err, current)
	}
	if refused+leaks == 0 || swaps == 0 {
		t.Fatalf("no call met the swapped tree (%d swaps): the race was not exercised", swaps)
	}
	if ok == 0 {
		t.Fatal("no call succeeded: the tools never saw the tree unswapped")
	}
}
