package testreport

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// goTestOutput is one test2json output event of test in package p.
func goTestOutput(p, test, out string) string {
	return fmt.Sprintf(`{"Action":"output","Package":%q,"Test":%q,"Output":%q}`+"\n", p, test, out)
}

// A failed Go test's message is its own output without go test's framing
// lines; a passing test's output is nobody's message; a subtest's message
// is its own, and its parent (an aggregate) has none.
func TestGoFailureMessages(t *testing.T) {
	in := goEvents("start p", "run p TestA") +
		goTestOutput("p", "TestA", "=== RUN   TestA\n") +
		goTestOutput("p", "TestA", "    a_test.go:12: add(2, 2) = 0, want 4\n") +
		goTestOutput("p", "TestA", "--- FAIL: TestA (0.00s)\n") +
		goEvents("fail p TestA", "run p TestOK") +
		goTestOutput("p", "TestOK", "    ok_test.go:3: just logging\n") +
		goEvents("pass p TestOK", "run p TestP", "run p TestP/sub") +
		goTestOutput("p", "TestP/sub", "    p_test.go:9: sub broke\n") +
		goEvents("fail p TestP/sub", "fail p TestP", "fail p")
	rep, err := ParseGoTestJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []FailureMessage{{"p.TestA", "a_test.go:12: add(2, 2) = 0, want 4"}, {"p.TestP/sub", "p_test.go:9: sub broke"}}
	if fmt.Sprint(rep.FailureMessages) != fmt.Sprint(want) {
		t.Fatalf("messages %q, want %q", rep.FailureMessages, want)
	}
}

// At most MaxFailureMessages messages are kept, each at most
// MaxFailureMessageBytes (cut at a rune boundary and marked).
func TestFailureMessageBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(goEvents("start p"))
	for i := range MaxFailureMessages + 3 {
		test := fmt.Sprintf("Test%02d", i)
		b.WriteString(goEvents("run p " + test))
		b.WriteString(goTestOutput("p", test, strings.Repeat("é", MaxFailureMessageBytes)+"\n"))
		b.WriteString(goEvents("fail p " + test))
	}
	b.WriteString(goEvents("fail p"))
	rep, err := ParseGoTestJSON(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FailureMessages) != MaxFailureMessages || rep.Failed != MaxFailureMessages+3 {
		t.Fatalf("%d messages of %d failures, want %d", len(rep.FailureMessages), rep.Failed, MaxFailureMessages)
	}
	for _, m := range rep.FailureMessages {
		body, cut := strings.CutSuffix(m.Message, FailureMessageCut)
		if !cut || len(body) > MaxFailureMessageBytes || len(body) < MaxFailureMessageBytes-1 || !utf8.ValidString(body) {
			t.Fatalf("%s: a %d-byte message (cut %v, valid %v)", m.ID, len(body), cut, utf8.ValidString(body))
		}
	}
	if rep.FailureMessages[0].ID != "p.Test00" {
		t.Fatalf("the first message is %s's, want the first failure's", rep.FailureMessages[0].ID)
	}
}

// A JUnit failure's message attribute is its message; without one, its
// text. Skips and passes have none.
func TestJUnitFailureMessages(t *testing.T) {
	in := `<?xml version="1.0"?>
<testsuites><testsuite name="pytest" tests="4" failures="2" errors="0" skipped="1">
<testcase classname="test_calc" name="test_add" time="0.01"><failure message="assert 0 == 4&#10; +  where 0 = add(2, 2)">def test_add():
&gt;       assert add(2, 2) == 4</failure></testcase>
<testcase classname="test_calc" name="test_text" time="0.01"><failure>E   AssertionError: boom</failure></testcase>
<testcase classname="test_calc" name="test_skip" time="0.01"><skipped message="not today"/></testcase>
<testcase classname="test_calc" name="test_ok" time="0.01"/>
</testsuite></testsuites>`
	rep, err := ParseJUnitXML(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []FailureMessage{{"test_calc.test_add", "assert 0 == 4\n +  where 0 = add(2, 2)"}, {"test_calc.test_text", "E   AssertionError: boom"}}
	if fmt.Sprint(rep.FailureMessages) != fmt.Sprint(want) || !rep.Complete {
		t.Fatalf("messages %q (complete %v %v), want %q", rep.FailureMessages, rep.Complete, rep.Problems, want)
	}
}
