package testreport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// parseFunc is the common signature of the parsers.
type parseFunc func(io.Reader) (Report, error)

// summary is the part of a Report that table tests pin exactly.
type summary struct {
	Passed, Failed, Skipped int
	Failures                []string
	Problems                []Problem
}

func summarize(r Report) summary {
	return summary{r.Passed, r.Failed, r.Skipped, r.Failures, r.Problems}
}

func (s summary) String() string {
	return fmt.Sprintf("passed=%d failed=%d skipped=%d failures=%q problems=%v",
		s.Passed, s.Failed, s.Skipped, s.Failures, s.Problems)
}

func problems(ps ...Problem) []Problem { return ps }

// parseFile parses testdata/name with fn, failing the test on a read error.
func parseFile(t *testing.T, fn parseFunc, name string) Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := fn(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkInvariants(t, r)
	return r
}

func parseString(t *testing.T, fn parseFunc, s string) Report {
	t.Helper()
	r, err := fn(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	return r
}

func expect(t *testing.T, name string, r Report, want summary) {
	t.Helper()
	got := summarize(r)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", name, got, want)
	}
}

// invariantErrors lists every violated Report invariant; fuzz targets and
// table tests share it.
func invariantErrors(r Report) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !r.Parser.Known() {
		bad("unknown parser %q", r.Parser)
	}
	if r.Passed < 0 || r.Failed < 0 || r.Skipped < 0 || r.FailuresTotal < 0 {
		bad("negative count")
	}
	if r.Complete != (len(r.Problems) == 0) {
		bad("Complete=%v with problems %v", r.Complete, r.Problems)
	}
	if r.Complete && r.Passed+r.Failed == 0 {
		bad("complete without an executed test")
	}
	if !slices.IsSorted(r.Problems) || len(slices.Compact(slices.Clone(r.Problems))) != len(r.Problems) {
		bad("problems not sorted and distinct: %v", r.Problems)
	}
	for _, p := range r.Problems {
		if !slices.Contains(Problems, p) {
			bad("problem %q outside the closed set", p)
		}
	}
	if len(r.Failures) > MaxFailures || len(r.Cases) > MaxCases {
		bad("bounds exceeded")
	}
	if !slices.IsSorted(r.Failures) || len(slices.Compact(slices.Clone(r.Failures))) != len(r.Failures) {
		bad("failures not sorted and distinct")
	}
	if r.FailuresTotal != r.Failed {
		bad("FailuresTotal %d != Failed %d", r.FailuresTotal, r.Failed)
	}
	if (r.Failed > 0) != (len(r.Failures) > 0) {
		bad("failed=%d but failures=%q", r.Failed, r.Failures)
	}
	if !r.CasesTruncated && len(r.Cases) != r.Passed+r.Failed+r.Skipped {
		bad("%d cases for %d results", len(r.Cases), r.Passed+r.Failed+r.Skipped)
	}
	for _, c := range r.Cases {
		if len(c.ID) > MaxIDBytes || !utf8Valid(c.ID) || c.DurationMS < 0 {
			bad("bad case %q", c.ID)
		}
		if c.Outcome != Passed && c.Outcome != Failed && c.Outcome != Skipped {
			bad("bad outcome %q", c.Outcome)
		}
		if c.Outcome == Failed && !r.FailuresTruncated && !slices.Contains(r.Failures, c.ID) {
			bad("failed case %q missing from Failures", c.ID)
		}
	}
	return errs
}

func checkInvariants(t *testing.T, r Report) {
	t.Helper()
	for _, e := range invariantErrors(r) {
		t.Error(e)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// errReader yields data, then fails with err.
type errReader struct {
	data string
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if e.data == "" {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

// repeatReader yields prefix, then n bytes of fill, then suffix, without
// holding the whole input in memory.
type repeatReader struct {
	prefix, suffix string
	fill           byte
	n              int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	switch {
	case r.prefix != "":
		n := copy(p, r.prefix)
		r.prefix = r.prefix[n:]
		return n, nil
	case r.n > 0:
		n := min(len(p), r.n)
		for i := range n {
			p[i] = r.fill
		}
		r.n -= n
		return n, nil
	case r.suffix != "":
		n := copy(p, r.suffix)
		r.suffix = r.suffix[n:]
		return n, nil
	}
	return 0, io.EOF
}
