package testreport

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTAPSynthetic(t *testing.T) {
	for _, c := range []struct {
		name  string
		input string
		want  summary
		ids   []string
	}{
		{"empty input", "", summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound)}, nil},
		{"leading plan, directives, escapes, empty description",
			"TAP version 14\n1..6\nok 1 - plain\nnot ok 2 broken\nok 3 - skipped # skip lower case\nok 4 - bonus # TODO passes anyway\nnot ok 5 - has \\# hash # not a directive\nok 6\n",
			summary{Passed: 2, Failed: 2, Skipped: 2, Failures: []string{"broken", "has # hash"}},
			[]string{"plain", "broken", "skipped", "bonus", "has # hash", "#6"}},
		{"points without numbers", "ok - a\nok b\n1..2\n", summary{Passed: 2}, []string{"a", "b"}},
		{"missing plan", "ok 1 - a\n", summary{Passed: 1, Problems: problems(ProblemNoSummary)}, nil},
		{"plan disagrees", "1..3\nok 1 - a\nok 2 - b\n", summary{Passed: 2, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"two plans", "1..1\nok 1 - a\n1..1\n", summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"number out of sequence", "ok 1 - a\nok 3 - b\n1..2\n", summary{Passed: 2, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"skip-all plan", "1..0 # SKIP no database\n", summary{Problems: problems(ProblemNoTestsFound)}, nil},
		{"non-TAP lines are ignored", "hello\nok 1 - a\n  stray indented text\n1..1\n", summary{Passed: 1}, nil},
		{"okay is not a test point", "okay then\nok 1 - a\n1..1\n", summary{Passed: 1}, nil},
		{"subtests without Subtest comments are named by parent number",
			"    ok 1 - inner\n    1..1\nok 1 - outer\n        ok 1 - deep\n        1..1\n    ok 1 - mid\n    1..1\nok 2\n1..2\n",
			summary{Passed: 2}, []string{"#1 > inner", "#2 > #1 > deep"}},
		{"escaped names of parents and children agree",
			"# Subtest: p \\# 1 \\\\ x\n    ok 1 - c\n    1..1\nok 1 - p \\# 1 \\\\ x\n1..1\n",
			summary{Passed: 1}, []string{`p # 1 \ x > c`}},
		{"parent failing on its own is counted",
			"# Subtest: p\n    ok 1 - c\n    1..1\nnot ok 1 - p\n1..1\n",
			summary{Passed: 1, Failed: 1, Failures: []string{"p"}}, []string{"p > c", "p"}},
		{"todo failure in a subtest does not fail the parent",
			"# Subtest: p\n    not ok 1 - c # TODO later\n    1..1\nok 1 - p\n1..1\n",
			summary{Skipped: 1, Problems: problems(ProblemNoTestsFound)}, nil},
		{"node suite failing without tests is counted",
			"# Subtest: s\nnot ok 1 - s\n  ---\n  duration_ms: 3.5\n  type: 'suite'\n  error: 'describe threw'\n  ...\n1..1\n# tests 0\n# suites 1\n# pass 0\n# fail 0\n",
			summary{Failed: 1, Failures: []string{"s"}}, nil},
		{"empty node suite is not a test",
			"ok 1 - s\n  ---\n  type: 'suite'\n  ...\nok 2 - t\n1..2\n",
			summary{Passed: 1}, []string{"t"}},
		{"YAML content that looks like TAP is ignored",
			"not ok 1 - a\n  ---\n  error: |-\n    ok 7 - not a point\n    1..9\n  ...\n1..1\n",
			summary{Failed: 1, Failures: []string{"a"}}, nil},
		{"nested plan disagrees",
			"# Subtest: p\n    ok 1 - c\n    1..2\nok 1 - p\n1..1\n",
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"nested plan missing",
			"# Subtest: p\n    ok 1 - c\nok 1 - p\n1..1\n",
			summary{Passed: 1, Problems: problems(ProblemNoSummary)}, nil},
		{"orphan block before a plan",
			"    ok 1 - c\n    1..1\n1..0\n",
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}, nil},
		{"footer after a later point is ignored",
			"ok 1 - a\n# pass 9\nok 2 - b\n1..2\n# pass 2\n# fail 0\n",
			summary{Passed: 2}, nil},
		{"footer fail counts cancelled tests",
			"not ok 1 - a\n  ---\n  failureType: 'cancelledByParent'\n  ...\n1..1\n# tests 1\n# pass 0\n# fail 0\n# cancelled 1\n",
			summary{Failed: 1, Failures: []string{"a"}}, nil},
		{"bail out stops parsing", "1..2\nok 1 - a\nBail out! no db\nnot ok 2 - b\n",
			summary{Passed: 1, Problems: problems(ProblemBailOut, ProblemSummaryMismatch)}, nil},
		{"huge test number", "ok 99999999999999999999999 - a\n1..1\n",
			summary{Passed: 1, Problems: problems(ProblemCorruptLine)}, nil},
		{"odd indentation is not TAP", "  ok 1 - a\nok 1 - b\n1..1\n", summary{Passed: 1}, []string{"b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := parseString(t, ParseTAP, c.input)
			expect(t, c.name, r, c.want)
			if c.ids != nil {
				var ids []string
				for _, k := range r.Cases {
					ids = append(ids, k.ID)
				}
				if !slices.Equal(ids, c.ids) {
					t.Errorf("ids = %q, want %q", ids, c.ids)
				}
			}
		})
	}
}

func TestTAPDepthBound(t *testing.T) {
	deep := strings.Repeat("    ", MaxTAPDepth) + "ok 1 - too deep\nok 1 - top\n1..1\n"
	expect(t, "depth", parseString(t, ParseTAP, deep), summary{Passed: 1, Problems: problems(ProblemLimitExceeded)})
	atBound := strings.Repeat("    ", MaxTAPDepth-1) + "ok 1 - deepest\n"
	r := parseString(t, ParseTAP, atBound)
	if r.Passed != 1 || !slices.Equal(r.Problems, problems(ProblemNoSummary)) {
		t.Errorf("at bound: %v", summarize(r))
	}
}

func TestTAPReadError(t *testing.T) {
	boom := errors.New("boom")
	r, err := ParseTAP(&errReader{data: "1..2\nok 1 - a\n", err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	expect(t, "read error", r, summary{Passed: 1, Problems: problems(ProblemSummaryMismatch, ProblemTruncatedOutput)})
}
