package failure

import "testing"

// TestClassesAreExactlyTheKinds: no row for a kind that is not listed.
func TestClassesAreExactlyTheKinds(t *testing.T) {
	listed := map[Kind]bool{}
	for _, k := range Kinds {
		listed[k] = true
	}
	for k := range classes {
		if !listed[k] {
			t.Errorf("classes has a row for %s, which is not in Kinds", k)
		}
	}
	if len(classes) != len(Kinds) {
		t.Errorf("%d classes for %d kinds", len(classes), len(Kinds))
	}
}
