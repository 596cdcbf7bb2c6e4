package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

var changedRE = regexp.MustCompile(`(?s)<ul class="paths changed">.*?</ul></dd>`)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Each file an edit call writes leaves a bounded, redacted summary of its
// change in the ledger, and the session page shows it under the changed
// path: the line counts and the first lines of the change.
func TestSessionPageShowsTheDiffSummary(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "fix calc")
	const key = "AKIAIOSFODNN7EXAMPLE"
	old := "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": "calc.py", "content": old})
	// An overwrite: only the changed line is the change.
	fixed := strings.Replace(old, "a - b", "a + b  # aws "+key, 1)
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": "calc.py", "content": fixed, "expected_sha256": sha(old)})
	// One apply_text_edits call creating more files than it summarizes,
	// one of them longer than a fact holds.
	var changes []map[string]any
	for i := range workflow.MaxDiffFacts + 1 {
		content := fmt.Sprintf("line %d\n", i)
		if i == 0 {
			content = strings.Repeat("a long line of generated text\n", 40)
		}
		changes = append(changes, map[string]any{"path": fmt.Sprintf("gen/f%d.txt", i), "op": "create", "content": content})
	}
	s.call(t, tok, "apply_text_edits", map[string]any{"project": s.project, "session_id": id, "changes": changes})

	// The ledger: one fact per written file, at most MaxDiffFacts per
	// call, each redacted and within FactMaxChars.
	evs, err := s.a.Sessions.Store().Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var writes, applies []map[string]string
	for _, e := range evs {
		if e.Kind == workflow.EventToolCallFinished && e.Outcome == workflow.OutcomeOK {
			switch e.Tool {
			case "write_project_file":
				writes = append(writes, e.Facts)
			case "apply_text_edits":
				applies = append(applies, e.Facts)
			}
		}
	}
	if len(writes) != 2 || len(applies) != 1 {
		t.Fatalf("%d writes, %d applies finished", len(writes), len(applies))
	}
	wantOverwrite := "+1 -1 calc.py\n@@ -2,1 +2,1 @@\n-    return a - b\n+    return a + b  # aws " + redact.Marker + "\n"
	if got := writes[1][workflow.DiffFactPrefix+"1"]; got != wantOverwrite {
		t.Fatalf("the overwrite's diff fact %q, want %q", got, wantOverwrite)
	}
	n := 0
	for k, v := range applies[0] {
		if strings.HasPrefix(k, workflow.DiffFactPrefix) {
			n++
			if utf8.RuneCountInString(v) > workflow.FactMaxChars {
				t.Errorf("%s is %d characters", k, utf8.RuneCountInString(v))
			}
		}
	}
	if n != workflow.MaxDiffFacts || !strings.HasPrefix(applies[0][workflow.DiffFactPrefix+"1"], "+40 -0 gen/f0.txt\n@@ -0,0 +1,40 @@\n+a long line") {
		t.Fatalf("%d diff facts on the apply (want %d): %q", n, workflow.MaxDiffFacts, applies[0])
	}

	// The session page shows them under the changed paths.
	_, p := s.sessionPage(t, tok, id)
	changed := html.UnescapeString(changedRE.FindString(p.body))
	for _, want := range []string{
		"<code>calc.py</code> <span class=\"diffstat\">+1 −1 lines</span>",
		"<span class=\"del\">-    return a - b</span>",
		"<span class=\"add\">+    return a + b  # aws " + redact.Marker + "</span>",
		"<code>gen/f0.txt</code> <span class=\"diffstat\">+40 −0 lines</span>",
		"… (the first lines only)",
		"<code>gen/f1.txt</code> <span class=\"diffstat\">+1 −0 lines</span>",
	} {
		if !strings.Contains(changed, want) {
			t.Errorf("the changed paths lack %q:\n%s", want, changed)
		}
	}
	if strings.Contains(p.body, key) {
		t.Error("the session page shows the unredacted key")
	}
	// The fifth file of the call has no summary: its path alone.
	if !strings.Contains(changed, "<li><code>gen/f4.txt</code></li>") {
		t.Errorf("gen/f4.txt is not listed without a summary:\n%s", changed)
	}
}
