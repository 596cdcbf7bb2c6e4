package worktree_test

import (
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/worktree"
)

// OfSource accepts only <source>-wt-<suffix> names that are valid project
// names: a runner resolves nothing else in its worktrees directory.
func TestOfSource(t *testing.T) {
	long := strings.Repeat("s", 60)
	for name, want := range map[string]bool{
		"demo-wt-1a2b3c4d":         true,
		"demo-wt-":                 false,
		"demo-x-wt-1":              false,
		"other-wt-1":               false,
		"demo-wt-../x":             false,
		long[:52] + "-wt-1a2b3c4d": true,
		long + "-wt-1a2b3c4d":      false,
	} {
		src := "demo"
		if strings.HasPrefix(name, "ss") {
			src = long
		}
		if got := worktree.OfSource(name, src); got != want {
			t.Errorf("OfSource(%q, %q) = %v, want %v", name, src, got, want)
		}
	}
}
