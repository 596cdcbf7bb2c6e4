package files_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project/swaptest"
)

// swapCalls is how many tool calls each swap-race test makes while the
// swapper runs.
const swapCalls = 1500

// TestSwapRaceReadsNothingOutside reproduces the issue-12 attack on
// read_files and list_project_files: while d is exchanged with a symlink to
// an outside directory, over and over, no call may return outside content
// (the marker in every outside file and in one outside file name), and
// nothing outside may change.
func TestSwapRaceReadsNothingOutside(t *testing.T) {
	e := newEnv(t)
	a := swaptest.New(t, e.Project.Root, map[string]string{"f.txt": "inside f\n", "sub/g.txt": "inside g\n"})
	a.Start()
	leaks, refused, ok := 0, 0, 0
	kinds := map[string]int{}
	var first string
	for i := range swapCalls {
		var res kernel.Result
		if i%2 == 0 {
			res = e.Call("read_files", readArgs(file("d/f.txt"), file("d/sub/g.txt")))
		} else {
			res = e.Call("list_project_files", map[string]any{"path": "d"})
		}
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
		default:
			refused++
			kinds[string(res.Error.Kind)]++
		}
	}
	swaps := a.Stop(t)
	t.Logf("%d swaps; %d calls answered from inside, %d refused %v, %d leaked", swaps, ok, refused, kinds, leaks)
	if leaks > 0 {
		t.Errorf("%d of %d calls returned outside content; first: %.300s", leaks, swapCalls, first)
	}
	a.CheckOutside(t)
	if refused+leaks == 0 || swaps == 0 {
		t.Fatalf("no call met the swapped tree (%d swaps): the race was not exercised", swaps)
	}
	if ok == 0 {
		t.Fatal("no call succeeded: the tools never saw the tree unswapped")
	}
}
