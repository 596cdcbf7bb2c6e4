package validate

import (
	"fmt"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
)

func TestMaxJobMarkersIsTheTerminalInventoryLimit(t *testing.T) {
	if workflow.MaxJobMarkers != 64 {
		t.Fatalf("MaxJobMarkers = %d, want 64", workflow.MaxJobMarkers)
	}
}

func TestAddMarkerEvictsOnlyMarkersAbsentFromTheSnapshot(t *testing.T) {
	var full []string
	snap := map[string]bool{}
	for i := range workflow.MaxJobMarkers {
		id := fmt.Sprintf("m%02d", i)
		full = append(full, id)
		if i != 10 && i != 20 {
			snap[id] = true
		}
	}
	snap["new"] = true
	// Below the bound nothing is evicted, even markers absent from the
	// snapshot.
	if got := addMarker(full[:5], "new", map[string]bool{"new": true}); !slices.Equal(got, append(slices.Clone(full[:5]), "new")) {
		t.Fatalf("below the bound: %v", got)
	}
	got := addMarker(full, "new", snap)
	if len(got) != workflow.MaxJobMarkers-1 || slices.Contains(got, "m10") || slices.Contains(got, "m20") || got[len(got)-1] != "new" {
		t.Fatalf("eviction: %d %v", len(got), got)
	}
	for id := range snap {
		if !slices.Contains(got, id) {
			t.Fatalf("evicted %s, which is in the snapshot", id)
		}
	}
	// The bound holds whatever the snapshot says.
	all := map[string]bool{"new": true}
	for _, id := range full {
		all[id] = true
	}
	if got := addMarker(full, "new", all); len(got) != workflow.MaxJobMarkers {
		t.Fatalf("bound: %d", len(got))
	}
	if len(full) != workflow.MaxJobMarkers || full[0] != "m00" {
		t.Fatal("addMarker changed its input")
	}
}
