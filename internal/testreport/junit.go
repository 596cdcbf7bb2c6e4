package testreport

import (
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// junitCounts tallies testcases for comparison with suite attributes.
type junitCounts struct{ tests, failures, errors, skipped int }

type junitSuite struct {
	depth  int
	attrs  []xml.Attr
	counts junitCounts
}

type junitCase struct {
	depth                     int
	id                        string
	noClass                   bool
	ms                        int64
	failure, errored, skipped bool
	collection                bool
	// msg is the failure message: the message attribute of the first
	// <failure> or <error>, else its text (reading is true inside it).
	msg     messageBuf
	reading bool
}

// ParseJUnitXML parses a JUnit XML report as written by
// `pytest --junitxml` (any junit_family) into a Report with Parser
// ParserJUnitXML. The root is <testsuites> or <testsuite>; suites may nest.
//
// Every <testcase> element is one result, as in the suite attributes:
// a <failure> or <error> child makes it Failed (pytest's errors count as
// failures), a <skipped> child (skip, xfail) Skipped, otherwise Passed.
// pytest writes a second testcase for a test that failed and then errored in
// teardown; both are counted. Identities are "classname.name", or name when
// classname is empty; durations come from the time attribute (seconds).
//
// Each suite's tests, failures, errors and skipped attributes are its
// summary: tests is required (else ProblemNoSummary) and every present
// attribute must equal the count of testcases it holds, nested suites
// included (else ProblemSummaryMismatch); attributes on <testsuites> are
// checked the same way when present. pytest's collection error (an <error
// message="collection failure"> in a testcase without classname) carries
// ProblemBuildFailed.
//
// Malformed XML is not an error: parsing stops at the first syntax error and
// the Report carries ProblemCorruptDocument, or ProblemTruncatedOutput when
// the document ends early; results parsed before it are kept. The decoder is
// strict (no custom entities, well-formedness checked) and sees the input
// through a limiter, so memory stays bounded (MaxXMLValueBytes,
// MaxXMLTagBytes, MaxXMLDepth).
func ParseJUnitXML(r io.Reader) (Report, error) {
	p := &junitParse{b: newBuilder(ParserJUnitXML)}
	lim := newXMLLimiter(r)
	dec := xml.NewDecoder(lim)
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err != nil {
			if rerr := p.stop(err, lim); rerr != nil {
				return p.b.finish(), rerr
			}
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !p.start(t) {
				return junitFinish(p.b, p.sawSuite), nil
			}
		case xml.CharData:
			if p.tc != nil && p.tc.reading {
				p.tc.msg.write(string(t))
			}
		case xml.EndElement:
			p.end(t)
		}
	}
	if !p.rootSeen {
		p.b.problem(ProblemNoSummary)
	}
	return junitFinish(p.b, p.sawSuite), nil
}

// junitParse is the state of one ParseJUnitXML pass: the element depth,
// the root element, the counts of every test case, the open suites and
// the open test case.
type junitParse struct {
	b        *builder
	depth    int
	rootSeen bool
	rootDone bool
	root     []xml.Attr // attributes of a <testsuites> root
	all      junitCounts
	suites   []*junitSuite
	tc       *junitCase
	sawSuite bool
}

// stop records the problem the decoder's error err means (lim is what the
// decoder read through). It returns err when the reader itself failed,
// the report then being complete; else nil.
func (p *junitParse) stop(err error, lim *xmlLimiter) error {
	b := p.b
	var synErr *xml.SyntaxError
	switch {
	case err == io.EOF:
		if !p.rootDone {
			b.problem(ProblemTruncatedOutput)
		}
	case errors.Is(err, errXMLTagTooLong):
		b.problem(ProblemTruncatedOutput)
	case errors.As(err, &synErr):
		if lim.eof {
			b.problem(ProblemTruncatedOutput)
		} else {
			b.problem(ProblemCorruptDocument)
		}
	default:
		if lim.err != nil && lim.err != io.EOF {
			// The reader failed.
			b.problem(ProblemTruncatedOutput)
			if !p.sawSuite {
				b.problem(ProblemNoSummary)
			}
			return err
		}
		b.problem(ProblemCorruptDocument)
	}
	return nil
}

// start takes a start element; false means parsing ends here (too deep,
// or a second root element).
func (p *junitParse) start(t xml.StartElement) bool {
	b := p.b
	p.depth++
	depth := p.depth
	if depth > MaxXMLDepth {
		b.problem(ProblemLimitExceeded)
		return false
	}
	if p.rootDone {
		b.problem(ProblemCorruptDocument) // a second root element
		return false
	}
	if depth == 1 {
		p.rootSeen = true
		switch t.Name.Local {
		case "testsuites":
			p.root = t.Attr
		case "testsuite":
		default:
			b.problem(ProblemNoSummary)
		}
	}
	switch t.Name.Local {
	case "testsuite":
		if p.tc == nil {
			p.sawSuite = true
			p.suites = append(p.suites, &junitSuite{depth: depth, attrs: t.Attr})
		}
	case "testcase":
		if p.tc != nil {
			b.problem(ProblemCorruptDocument) // nested testcase
			return true
		}
		class := attr(t.Attr, "classname")
		p.tc = &junitCase{depth: depth, id: junitID(class, attr(t.Attr, "name")), noClass: class == ""}
		if s, err := strconv.ParseFloat(attr(t.Attr, "time"), 64); err == nil {
			p.tc.ms = durationMS(s * 1000)
		}
	case "failure", "error", "skipped":
		p.startResult(t)
	}
	return true
}

// startResult takes a failure, error or skipped element, which counts
// only as a direct child of the open test case.
func (p *junitParse) startResult(t xml.StartElement) {
	tc := p.tc
	if tc == nil || p.depth != tc.depth+1 {
		return
	}
	if t.Name.Local != "skipped" && tc.msg.Len() == 0 && p.b.wantsMessages() {
		if m := attr(t.Attr, "message"); m != "" {
			tc.msg.write(m)
		} else {
			tc.reading = true
		}
	}
	switch t.Name.Local {
	case "failure":
		tc.failure = true
	case "error":
		tc.errored = true
		if attr(t.Attr, "message") == "collection failure" && tc.noClass {
			tc.collection = true
		}
	default:
		tc.skipped = true
	}
}

// end takes an end element: it closes a test case, a suite (checking its
// summary) or a <testsuites> root (checking its summary).
func (p *junitParse) end(t xml.EndElement) {
	b, depth := p.b, p.depth
	if p.tc != nil && depth == p.tc.depth+1 {
		p.tc.reading = false
	}
	switch {
	case p.tc != nil && depth == p.tc.depth:
		p.endCase()
	case t.Name.Local == "testsuite" && len(p.suites) > 0 && p.suites[len(p.suites)-1].depth == depth:
		s := p.suites[len(p.suites)-1]
		p.suites = p.suites[:len(p.suites)-1]
		if attr(s.attrs, "tests") == "" {
			b.problem(ProblemNoSummary)
		}
		if !junitAgrees(s.attrs, s.counts) {
			b.problem(ProblemSummaryMismatch)
		}
	case depth == 1 && t.Name.Local == "testsuites":
		if !junitAgrees(p.root, p.all) {
			b.problem(ProblemSummaryMismatch)
		}
	}
	p.depth--
	if p.depth == 0 {
		p.rootDone = true
	}
}

// endCase closes the open test case: its outcome, counted in every open
// suite and the whole document, and its result.
func (p *junitParse) endCase() {
	b, tc := p.b, p.tc
	c := junitCounts{tests: 1}
	outcome := Passed
	if tc.failure {
		c.failures = 1
		outcome = Failed
	}
	if tc.errored {
		c.errors = 1
		outcome = Failed
	}
	if tc.skipped {
		c.skipped = 1
		if outcome == Passed {
			outcome = Skipped
		}
	}
	if tc.collection {
		b.problem(ProblemBuildFailed)
	}
	p.all.add(c)
	for _, s := range p.suites {
		s.counts.add(c)
	}
	b.add(tc.id, outcome, tc.ms)
	if outcome == Failed {
		b.addMessage(tc.id, &tc.msg)
	}
	p.tc = nil
}

func junitFinish(b *builder, sawSuite bool) Report {
	if !sawSuite {
		b.problem(ProblemNoSummary)
	}
	return b.finish()
}

func (c *junitCounts) add(d junitCounts) {
	c.tests += d.tests
	c.failures += d.failures
	c.errors += d.errors
	c.skipped += d.skipped
}

// junitAgrees reports whether every present count attribute equals c.
func junitAgrees(attrs []xml.Attr, c junitCounts) bool {
	for _, f := range []struct {
		name string
		n    int
	}{{"tests", c.tests}, {"failures", c.failures}, {"errors", c.errors}, {"skipped", c.skipped}} {
		v := attr(attrs, f.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n != f.n {
			return false
		}
	}
	return true
}

func junitID(classname, name string) string {
	if classname == "" {
		return name
	}
	return classname + "." + name
}

// attr returns the value of the unqualified attribute name, or "".
func attr(attrs []xml.Attr, name string) string {
	for _, a := range attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
