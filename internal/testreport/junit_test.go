package testreport

import (
	"encoding/xml"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestJUnitXMLSynthetic(t *testing.T) {
	for _, c := range []struct {
		name  string
		input string
		want  summary
	}{
		{"empty input", "", summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound, ProblemTruncatedOutput)}},
		{"root testsuite with nested suites and aggregate counts",
			`<testsuite name="all" tests="3" failures="1" errors="0" skipped="1">
			  <testsuite name="inner" tests="2" failures="1"><testcase classname="a" name="x"/><testcase classname="a" name="y"><failure/></testcase></testsuite>
			  <testcase name="z"><skipped/></testcase>
			</testsuite>`,
			summary{Passed: 1, Failed: 1, Skipped: 1, Failures: []string{"a.y"}}},
		{"testsuites attributes are checked",
			`<testsuites tests="2"><testsuite tests="1"><testcase classname="a" name="x"/></testsuite></testsuites>`,
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}},
		{"suite without tests attribute",
			`<testsuites><testsuite><testcase classname="a" name="x"/></testsuite></testsuites>`,
			summary{Passed: 1, Problems: problems(ProblemNoSummary)}},
		{"non-numeric count",
			`<testsuite tests="one"><testcase classname="a" name="x"/></testsuite>`,
			summary{Passed: 1, Problems: problems(ProblemSummaryMismatch)}},
		{"other root element",
			`<html><testcase classname="a" name="x"/></html>`,
			summary{Passed: 1, Problems: problems(ProblemNoSummary)}},
		{"second root element",
			`<testsuite tests="1"><testcase classname="a" name="x"/></testsuite><testsuite tests="0"/>`,
			summary{Passed: 1, Problems: problems(ProblemCorruptDocument)}},
		{"nested testcase",
			`<testsuite tests="1"><testcase classname="a" name="x"><testcase name="y"/></testcase></testsuite>`,
			summary{Passed: 1, Problems: problems(ProblemCorruptDocument)}},
		{"failure and error in one testcase count once",
			`<testsuite tests="1" failures="1" errors="1"><testcase classname="a" name="x"><failure/><error/></testcase></testsuite>`,
			summary{Failed: 1, Failures: []string{"a.x"}}},
		{"undefined entity is corrupt",
			`<testsuite tests="1"><testcase classname="a" name="&bogus;"/></testsuite>`,
			summary{Problems: problems(ProblemCorruptDocument, ProblemNoTestsFound)}},
		{"mismatched end tag is corrupt",
			`<testsuite tests="1"><testcase classname="a" name="x"></testsuite>`,
			summary{Problems: problems(ProblemCorruptDocument, ProblemNoTestsFound)}},
		{"comments, CDATA, PIs and a doctype are fine",
			`<?xml version="1.0"?><!DOCTYPE testsuite [<!ELEMENT testsuite ANY>]><!-- c --><testsuite tests="1"><testcase classname="a" name="x"><system-out><![CDATA[<raw> ]] >]]></system-out></testcase></testsuite>`,
			summary{Passed: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			expect(t, c.name, parseString(t, ParseJUnitXML, c.input), c.want)
		})
	}
}

func TestJUnitXMLDuration(t *testing.T) {
	r := parseString(t, ParseJUnitXML, `<testsuite tests="2"><testcase classname="a" name="x" time="1.25"/><testcase name="y" time="junk"/></testsuite>`)
	if r.Cases[0].DurationMS != 1250 || r.Cases[1].DurationMS != 0 || r.Cases[1].ID != "y" {
		t.Errorf("cases: %v", r.Cases)
	}
}

func TestJUnitXMLDepthBound(t *testing.T) {
	doc := `<testsuite tests="0">` + strings.Repeat("<x>", MaxXMLDepth) + strings.Repeat("</x>", MaxXMLDepth) + `</testsuite>`
	expect(t, "depth", parseString(t, ParseJUnitXML, doc), summary{Problems: problems(ProblemLimitExceeded, ProblemNoTestsFound)})
	ok := `<testsuite tests="1">` + strings.Repeat("<x>", MaxXMLDepth-3) + strings.Repeat("</x>", MaxXMLDepth-3) + `<testcase name="t"><skipped/></testcase></testsuite>`
	expect(t, "depth at bound", parseString(t, ParseJUnitXML, ok), summary{Skipped: 1, Problems: problems(ProblemNoTestsFound)})
}

func TestJUnitXMLTagBound(t *testing.T) {
	r, err := ParseJUnitXML(&repeatReader{prefix: `<testsuite tests="0" `, fill: 'a', n: MaxXMLTagBytes, suffix: `="1"/>`})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "tag bound", r, summary{Problems: problems(ProblemNoSummary, ProblemNoTestsFound, ProblemTruncatedOutput)})
}

// TestJUnitXMLHugeContentBoundedMemory feeds a failure message attribute
// and a text node each far larger than MaxXMLValueBytes: the report stays
// complete and allocation stays far below the input size.
func TestJUnitXMLHugeContentBoundedMemory(t *testing.T) {
	const huge = 16 << 20
	input := io.MultiReader(
		&repeatReader{prefix: `<testsuites><testsuite tests="2" failures="1"><testcase classname="big" name="attr"><failure message="`, fill: 'm', n: huge, suffix: `&amp;"/></testcase>`},
		&repeatReader{prefix: `<testcase classname="big" name="text"><system-out>`, fill: 't', n: huge, suffix: `&lt;</system-out></testcase></testsuite></testsuites>`},
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := ParseJUnitXML(input)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, r)
	expect(t, "huge", r, summary{Passed: 1, Failed: 1, Failures: []string{"big.attr"}})
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("allocated %d bytes for %d bytes of content", alloc, 2*huge)
	}
}

// TestXMLLimiterKeepsDocumentWellFormed cuts content exactly at the
// boundaries that could break well-formedness.
func TestXMLLimiterKeepsDocumentWellFormed(t *testing.T) {
	pad := strings.Repeat("a", MaxXMLValueBytes-2)
	for _, c := range []struct {
		name, doc, wantText string
	}{
		{"entity across the bound", "<r>" + pad + "&amp;tail</r>", pad + "&"},
		{"rune across the bound", "<r>" + pad + "é€tail</r>", pad + "é"},
		{"attribute entity across the bound", `<r a="` + pad + `&quot;tail"/>`, ""},
		{"CDATA with bracket run at the bound", "<r><![CDATA[" + pad + "]]]]>tail</r>", pad + "]]tail"},
		{"comment dash at the bound", "<r><!--" + pad + "x-yyyy--></r>", ""},
		{"comment dashes at its end", "<r><!--" + pad + "x- -->t</r>", "t"},
		{"short content untouched", `<r a="&lt;">x&gt;<![CDATA[]]]]><!--c-->y</r>`, "x>]]y"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec := xml.NewDecoder(newXMLLimiter(strings.NewReader(c.doc)))
			var text strings.Builder
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("decoder: %v", err)
				}
				switch v := tok.(type) {
				case xml.CharData:
					text.Write(v)
				case xml.StartElement:
					for _, a := range v.Attr {
						if len(a.Value) > MaxXMLValueBytes+maxXMLEntityBytes {
							t.Errorf("attribute of %d bytes", len(a.Value))
						}
					}
				}
			}
			if got := text.String(); got != c.wantText {
				t.Errorf("text = %q…%q (%d bytes), want %d bytes", head(got), tail(got), len(got), len(c.wantText))
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 8)] }
func tail(s string) string { return s[max(len(s)-8, 0):] }

func TestJUnitXMLReadError(t *testing.T) {
	boom := errors.New("boom")
	r, err := ParseJUnitXML(&errReader{data: `<testsuite tests="1"><testcase name="x"/>`, err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	checkInvariants(t, r)
	expect(t, "read error", r, summary{Passed: 1, Problems: problems(ProblemTruncatedOutput)})
}
