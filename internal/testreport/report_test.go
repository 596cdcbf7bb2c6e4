package testreport

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"MaxFailures", MaxFailures, 50},
		{"MaxCases", MaxCases, 2000},
		{"MaxLineBytes", MaxLineBytes, 1 << 20},
		{"MaxIDBytes", MaxIDBytes, 512},
		{"MaxPendingTests", MaxPendingTests, 10000},
		{"MaxPendingPackages", MaxPendingPackages, 1000},
		{"MaxTAPDepth", MaxTAPDepth, 64},
		{"MaxXMLValueBytes", MaxXMLValueBytes, 64 << 10},
		{"MaxXMLTagBytes", MaxXMLTagBytes, 1 << 20},
		{"MaxXMLDepth", MaxXMLDepth, 64},
		{"MaxMinTests", MaxMinTests, 1_000_000},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestStableCodes(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var ps []string
	for _, p := range Problems {
		ps = append(ps, string(p))
	}
	for _, r := range DeltaReasons {
		ps = append(ps, string(r))
	}
	for _, s := range ps {
		if !snake.MatchString(s) {
			t.Errorf("%q is not snake_case", s)
		}
	}
	if n := len(slices.Compact(slices.Sorted(slices.Values(ps)))); n != len(ps) {
		t.Errorf("codes are not unique: %v", ps)
	}
	want := []Parser{"go_test_json/v1", "cargo_test/v1", "junit_xml/v1", "tap/v1"}
	if !slices.Equal(Parsers, want) {
		t.Errorf("Parsers = %v, want %v", Parsers, want)
	}
	if Parser("go_test_json/v2").Known() || Parser("").Known() {
		t.Error("unknown parser reported known")
	}
}

func TestFailuresKeepSmallestDistinct(t *testing.T) {
	b := newBuilder(ParserTAP)
	for i := MaxFailures + 10 - 1; i >= 0; i-- {
		b.add(fmt.Sprintf("t%03d", i), Failed, 0)
	}
	b.add("t000", Failed, 0) // a repeat is counted, not listed twice
	r := b.finish()
	checkInvariants(t, r)
	if len(r.Failures) != MaxFailures || r.Failures[0] != "t000" || r.Failures[MaxFailures-1] != fmt.Sprintf("t%03d", MaxFailures-1) {
		t.Errorf("failures = %q", r.Failures)
	}
	if !r.FailuresTruncated || r.FailuresTotal != MaxFailures+11 || r.Failed != MaxFailures+11 {
		t.Errorf("truncated=%v total=%d failed=%d", r.FailuresTruncated, r.FailuresTotal, r.Failed)
	}

	b = newBuilder(ParserTAP)
	b.add("same", Failed, 0)
	b.add("same", Failed, 0)
	r = b.finish()
	if !slices.Equal(r.Failures, []string{"same"}) || r.FailuresTruncated || r.FailuresTotal != 2 {
		t.Errorf("repeat: %q truncated=%v total=%d", r.Failures, r.FailuresTruncated, r.FailuresTotal)
	}
}

func TestCasesBounded(t *testing.T) {
	b := newBuilder(ParserTAP)
	for i := range MaxCases + 1 {
		b.add(fmt.Sprint(i), Passed, -5)
	}
	r := b.finish()
	if len(r.Cases) != MaxCases || !r.CasesTruncated || r.Passed != MaxCases+1 {
		t.Errorf("cases=%d truncated=%v passed=%d", len(r.Cases), r.CasesTruncated, r.Passed)
	}
	if r.Cases[0].DurationMS != 0 {
		t.Errorf("negative duration kept: %d", r.Cases[0].DurationMS)
	}
	if !r.Complete || r.Problems != nil {
		t.Errorf("complete=%v problems=%v", r.Complete, r.Problems)
	}
}

func TestSanitizeID(t *testing.T) {
	if got := sanitizeID("pkg.Test\xff"); got != "pkg.Test\uFFFD" {
		t.Errorf("invalid UTF-8: %q", got)
	}
	exact := strings.Repeat("a", MaxIDBytes)
	if sanitizeID(exact) != exact {
		t.Error("an identity of exactly MaxIDBytes changed")
	}
	long1 := strings.Repeat("é", MaxIDBytes) + "1"
	long2 := strings.Repeat("é", MaxIDBytes) + "2"
	s1, s2 := sanitizeID(long1), sanitizeID(long2)
	if len(s1) > MaxIDBytes || !utf8.ValidString(s1) || s1 == s2 || s1 != sanitizeID(long1) {
		t.Errorf("long identities: %d bytes, distinct=%v", len(s1), s1 != s2)
	}
	sum := sha256.Sum256([]byte(long1))
	if !strings.HasSuffix(s1, "~"+hex.EncodeToString(sum[:8])) {
		t.Errorf("suffix of %q", s1[len(s1)-20:])
	}
}

func TestLongLineIsTruncatedWithBoundedMemory(t *testing.T) {
	const lineBytes = 8 * MaxLineBytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := ParseTAP(&repeatReader{prefix: "TAP version 13\nok 1 - before\n# ", fill: 'x', n: lineBytes, suffix: "\nok 2 - after\n1..2\n"})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "long line", r, summary{Passed: 2, Problems: problems(ProblemTruncatedOutput)})
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*MaxLineBytes {
		t.Errorf("allocated %d bytes for a %d-byte line", alloc, lineBytes)
	}
	// A line of exactly MaxLineBytes is kept whole.
	r, err = ParseTAP(&repeatReader{prefix: "ok 1 - ", fill: 'y', n: MaxLineBytes - len("ok 1 - "), suffix: "\n1..1\n"})
	if err != nil || !r.Complete || r.Passed != 1 {
		t.Errorf("line of MaxLineBytes: %v %v", summarize(r), err)
	}
}
