package edit

import (
	"slices"
	"strconv"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// diffFact is the fact value of one planned change (workflow.DiffFact).
func diffFact(r FileResult, preview string) string {
	return workflow.DiffFact(r.AddedLines, r.RemovedLines, r.Path, preview)
}

// recordDiffs records the diff facts of the written paths, in write
// order; facts maps a planned path to its value.
func recordDiffs(inv *kernel.Invocation, written []string, facts map[string]string) {
	n := 0
	for _, rel := range slices.Compact(slices.Clone(written)) {
		v, ok := facts[rel]
		if !ok {
			continue
		}
		n++
		if n > workflow.MaxDiffFacts {
			return
		}
		inv.Fact(workflow.DiffFactPrefix+strconv.Itoa(n), v)
	}
}
