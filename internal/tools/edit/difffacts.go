package edit

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/webcodex/webcodex/internal/kernel"
)

// The diff facts: each file a call wrote leaves a bounded summary of its
// change in the call's tool_call_finished event, for readers of the ledger
// (the console's session page shows it under the changed path). The fact
// of the i-th written file (1-based, in write order) is keyed DiffFactPrefix
// + i, for at most MaxDiffFacts files per call. Its value is
// "+<added> -<removed> <path>" on the first line, then the change's lines
// as the dry-run preview shows them ("@@ -a,b +c,d @@", "-old", "+new").
// The ledger redacts every fact and then cuts it to workflow.FactMaxChars
// before anything is written, so a fact holds the first lines of the
// change, never a whole file; a value is never cut here, so that a
// credential is whole when it is redacted.
const (
	DiffFactPrefix = "diff:"
	MaxDiffFacts   = 4
)

// diffFact is the fact value of one planned change (see DiffFactPrefix).
func diffFact(r FileResult, preview string) string {
	return fmt.Sprintf("+%d -%d %s\n%s", r.AddedLines, r.RemovedLines, r.Path, preview)
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
		if n > MaxDiffFacts {
			return
		}
		inv.Fact(DiffFactPrefix+strconv.Itoa(n), v)
	}
}
