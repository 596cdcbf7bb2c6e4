package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/redact"
)

var failingRE = regexp.MustCompile(`(?s)<ul class="paths failing">.*?</ul>`)

// The session page names a failing test and shows the message its run
// recorded for it, redacted before it was stored; the export shows the
// same. A test that passes again is no longer listed.
func TestSessionPageShowsTheFailureMessage(t *testing.T) {
	s := start(t)
	tok := s.token(t, "alice")
	id := s.startSession(t, tok, "fix add")
	const key = "AKIAIOSFODNN7EXAMPLE"
	broken := "def add(a, b):\n    return a - b\n\n\ndef test_add():\n    assert add(2, 2) == 4, \"deployed with " + key + "\"\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": "test_calc.py", "content": broken})
	if kind := s.callFailing(t, tok, "run_tests", map[string]any{"project": s.project, "session_id": id, "runner": "pytest"}); kind != "validation_failed" {
		t.Fatalf("run_tests: %s, want validation_failed", kind)
	}
	b, p := s.sessionPage(t, tok, id)
	failing := html.UnescapeString(failingRE.FindString(p.body))
	for _, want := range []string{"test_calc.test_add", "deployed with " + redact.Marker, "assert 0 == 4"} {
		if !strings.Contains(failing, want) {
			t.Errorf("the failing tests lack %q:\n%s", want, failing)
		}
	}
	if strings.Contains(p.body, key) {
		t.Error("the session page shows the unredacted key")
	}
	if ex := b.get("/console/sessions/" + id + "/export"); !strings.Contains(html.UnescapeString(ex.body), "deployed with "+redact.Marker) || strings.Contains(ex.body, key) {
		t.Error("the export does not show the redacted failure message")
	}
	// Fixed: no failing test, no message. The fix changes the file's size:
	// Python trusts a cached .pyc whose source has the same size and
	// modification second, and both writes may fall in one second.
	sum := sha256.Sum256([]byte(broken))
	s.call(t, tok, "write_project_file", map[string]any{"project": s.project, "session_id": id, "path": "test_calc.py", "expected_sha256": hex.EncodeToString(sum[:]),
		"content": strings.Replace(broken, "a - b", "a + b  # fixed", 1)})
	s.call(t, tok, "run_tests", map[string]any{"project": s.project, "session_id": id, "runner": "pytest"})
	if p := b.get("/console/sessions/" + id); failingRE.MatchString(p.body) || strings.Contains(p.body, `class="failure-message"`) {
		t.Errorf("the fixed test is still shown failing:\n%s", failingRE.FindString(p.body))
	}
}
