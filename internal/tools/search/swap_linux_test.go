package search_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/project/swaptest"
)

// TestSwapRaceSearchesNothingOutside runs search_project_texts over the
// project and over d while d is exchanged with a symlink to an outside
// directory, over and over: no match (nor anything else in a result) may
// come from outside, and nothing outside may change.
func TestSwapRaceSearchesNothingOutside(t *testing.T) {
	e := newEnv(t)
	a := swaptest.New(t, e.Project.Root, map[string]string{"f.txt": "inside f\n", "sub/g.txt": "inside g\n"})
	a.Start()
	const calls = 1500
	leaks, found, refused := 0, 0, 0
	var first string
	for i := range calls {
		path := "d"
		if i%2 == 1 {
			path = ""
		}
		res := e.Call("search_project_texts", map[string]any{"queries": []any{
			map[string]any{"query": "OUTSIDE-", "path": path},
			map[string]any{"query": "inside", "path": path},
		}})
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(string(raw), a.Marker):
			if leaks++; first == "" {
				first = string(raw)
			}
		case !res.Success:
			refused++
		case strings.Contains(string(raw), "inside f"):
			found++
		}
	}
	swaps := a.Stop(t)
	t.Logf("%d swaps; %d searches found the inside files, %d refused, %d leaked", swaps, found, refused, leaks)
	if leaks > 0 {
		t.Errorf("%d of %d searches returned outside content; first: %.300s", leaks, calls, first)
	}
	a.CheckOutside(t)
	if refused+leaks == 0 || swaps == 0 {
		t.Fatalf("no search met the swapped tree (%d swaps): the race was not exercised", swaps)
	}
	if found == 0 {
		t.Fatal("no search found the inside files: the tools never saw the tree unswapped")
	}
}
