package workflow

import "fmt"

// The diff facts: each file an edit call wrote leaves a bounded summary of
// its change in the call's tool_call_finished event, for readers of the
// ledger (the console's session page shows it under the changed path).
// The fact of the i-th written file (1-based, in write order) is keyed
// DiffFactPrefix + i, for at most MaxDiffFacts files per call. Its value
// (DiffFact) is "+<added> -<removed> <path>" on the first line, then the
// change's lines as the edit tools' dry-run preview shows them
// ("@@ -a,b +c,d @@", "-old", "+new"). The ledger redacts every fact and
// then cuts it to FactMaxChars before anything is written, so a fact holds
// the first lines of the change, never a whole file; a value is never cut
// by its writer, so that a credential is whole when it is redacted.
const (
	DiffFactPrefix = "diff:"
	MaxDiffFacts   = 4
)

// DiffFact is the fact value of one file's change (see DiffFactPrefix).
func DiffFact(added, removed int, path, preview string) string {
	return fmt.Sprintf("+%d -%d %s\n%s", added, removed, path, preview)
}
