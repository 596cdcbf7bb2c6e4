// Package testreport turns the output of test runners into one common,
// bounded, structured Report that validation evidence can be built on.
//
// The package is pure: parsers read an io.Reader and nothing else, they never
// execute a process, touch the file system or the network. Four parsers are
// provided, each with a stable identity (see Parser):
//
//   - ParseGoTestJSON reads the event stream of `go test -json`.
//   - ParseCargoTest reads the human output of `cargo test` (libtest).
//   - ParseJUnitXML reads JUnit XML as written by `pytest --junitxml`.
//   - ParseTAP reads TAP 13/14 as printed by `node --test` and npm runners.
//
// Every parser follows the same contract:
//
//   - Memory stays bounded for arbitrarily long input: line parsers stream
//     line by line and cut lines longer than MaxLineBytes; the JUnit parser
//     streams XML tokens through a limiter that elides over-long text. At
//     most MaxCases cases and MaxFailures failure identities are retained,
//     identities are at most MaxIDBytes long.
//   - Content problems never produce an error. Malformed, truncated or
//     inconsistent output yields a Report with Complete == false and the
//     reasons in Problems. The only error a parser returns is a read error of
//     the io.Reader (anything but io.EOF); the Report returned with it holds
//     what was parsed so far and carries ProblemTruncatedOutput.
//   - Complete is true only when the runner's own summary was seen and agrees
//     with the per-test results, nothing was cut or corrupt, no build failed
//     and at least one test executed. Complete is exactly len(Problems) == 0.
//   - Counts are never negative and are over individual test results. A test
//     that only groups subtests (a Go parent test, a TAP parent test point, a
//     node `describe` suite) is not counted itself unless it failed while
//     none of its subtests failed, which is its own failure.
//
// ScopeID and Compare implement the comparability rules of validation_delta
// in continuation feedback: a delta exists only between complete reports of
// the same opaque scope identity and parser identity, and a prior failure is
// resolved only by a current run that proves the same test passing.
package testreport

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds of a Report and of the parsers. Each is a contract: tests pin them.
const (
	// MaxFailures is the number of distinct failing identities a Report
	// retains in Failures (the lexicographically smallest ones).
	MaxFailures = 50
	// MaxCases is the number of Cases a Report retains, in the order the
	// runner reported them.
	MaxCases = 2000
	// MaxLineBytes is the longest line a line parser keeps. A longer line is
	// cut, ignored, and recorded as ProblemTruncatedOutput.
	MaxLineBytes = 1 << 20
	// MaxIDBytes is the longest test identity kept verbatim. A longer
	// identity is shortened to a UTF-8 prefix plus "~" and the first 16 hex
	// digits of the SHA-256 of the full identity, so distinct long
	// identities stay distinct and a given one stays stable.
	MaxIDBytes = 512
	// MaxPendingTests bounds the tests a parser tracks as started but not
	// finished (Go) at once. Past it, further tests are not tracked and the
	// Report carries ProblemLimitExceeded.
	MaxPendingTests = 10000
	// MaxPendingPackages bounds the Go packages tracked as started but not
	// finished at once, with the same overflow behaviour.
	MaxPendingPackages = 1000
	// MaxTAPDepth bounds TAP subtest nesting; deeper lines are ignored and
	// recorded as ProblemLimitExceeded.
	MaxTAPDepth = 64
	// MaxCachedPackages is the number of cached packages a Report names in
	// Cached (the lexicographically smallest ones); CachedTotal counts all.
	MaxCachedPackages = 50
	// MaxFailureMessages is the number of failure messages a Report keeps:
	// those of the first failed cases, in reporting order, that reported
	// one. MaxFailureMessageBytes bounds one message: a longer one keeps
	// its first bytes (at a UTF-8 boundary) and ends with
	// FailureMessageCut.
	MaxFailureMessages     = 5
	MaxFailureMessageBytes = 1024
)

// FailureMessageCut ends a failure message cut at MaxFailureMessageBytes.
const FailureMessageCut = " …"

// FailureMessage is what the runner reported about one failed case: the
// Go test's own output (t.Error lines, a panic), or a JUnit <failure> or
// <error> message. It is what the runner printed, unredacted: whoever
// stores it redacts it first.
type FailureMessage struct {
	ID      string
	Message string
}

// Parser is the stable identity of a parser and of its counting rules. Two
// Reports are comparable only when their Parser values are equal. A change in
// how a parser counts or names tests bumps the version suffix.
type Parser string

// The parser identities.
const (
	ParserGoTestJSON Parser = "go_test_json/v1"
	ParserCargoTest  Parser = "cargo_test/v1"
	ParserJUnitXML   Parser = "junit_xml/v1"
	ParserTAP        Parser = "tap/v1"
)

// Parsers lists every known parser identity.
var Parsers = []Parser{ParserGoTestJSON, ParserCargoTest, ParserJUnitXML, ParserTAP}

// Known reports whether p is one of Parsers.
func (p Parser) Known() bool { return slices.Contains(Parsers, p) }

// Outcome is the result of one test case.
type Outcome string

// The outcomes. A skipped case did not run to a verdict: skipped, ignored,
// xfail, and TAP TODO cases are all skipped.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
)

// Problem is a short stable code explaining why a Report is not Complete.
// The set is closed: codes are added, never renamed.
type Problem string

// The problem codes.
const (
	// ProblemNoSummary: the runner's own summary was not seen (Go package
	// result, cargo "test result:" line, TAP plan, JUnit suite counts), for
	// the whole run or for a part of it that started.
	ProblemNoSummary Problem = "no_summary"
	// ProblemTruncatedOutput: input ended inside a structure, a line or
	// token exceeded its bound and was cut, or reading failed.
	ProblemTruncatedOutput Problem = "truncated_output"
	// ProblemCorruptLine: a line is not valid for the format (not a JSON
	// event, contains NUL or invalid UTF-8, a malformed summary line).
	ProblemCorruptLine Problem = "corrupt_line"
	// ProblemCorruptDocument: the XML document is malformed.
	ProblemCorruptDocument Problem = "corrupt_document"
	// ProblemSummaryMismatch: the runner's summary disagrees with the
	// per-test results, or results contradict each other.
	ProblemSummaryMismatch Problem = "summary_mismatch"
	// ProblemBuildFailed: test code did not build or could not be collected.
	ProblemBuildFailed Problem = "build_failed"
	// ProblemNoTestsFound: no test executed (Passed+Failed == 0).
	ProblemNoTestsFound Problem = "no_tests_found"
	// ProblemBailOut: a TAP producer bailed out.
	ProblemBailOut Problem = "bail_out"
	// ProblemUnattributedFailure: the runner reported a failure that no test
	// result explains (TestMain exit, crash between tests). It is counted as
	// one failed case named after the package.
	ProblemUnattributedFailure Problem = "unattributed_failure"
	// ProblemLimitExceeded: a tracking bound (MaxPendingTests,
	// MaxPendingPackages, MaxTAPDepth, XML depth) was exceeded.
	ProblemLimitExceeded Problem = "limit_exceeded"
)

// Problems lists every problem code.
var Problems = []Problem{
	ProblemNoSummary, ProblemTruncatedOutput, ProblemCorruptLine,
	ProblemCorruptDocument, ProblemSummaryMismatch, ProblemBuildFailed,
	ProblemNoTestsFound, ProblemBailOut, ProblemUnattributedFailure,
	ProblemLimitExceeded,
}

// Case is one test result.
type Case struct {
	// ID is the stable test identity: "import/path.TestName/subtest" (Go),
	// "target::module::test" (cargo), "classname.name" (JUnit), or the
	// description path "parent > child" (TAP). See each parser for details.
	ID         string
	Outcome    Outcome
	DurationMS int64 // 0 when the runner reports no duration
	// Cached is true when the runner replayed this result from its cache
	// (go test's "(cached)" package result) instead of running the test.
	Cached bool
}

// Report is the structured result of one test run.
type Report struct {
	Parser Parser
	// Passed, Failed and Skipped count test results (never negative).
	Passed, Failed, Skipped int
	// Failures holds the distinct identities of failed cases, sorted, at
	// most MaxFailures of them (the smallest). FailuresTotal counts the
	// failed results (it equals Failed; a result repeated under the same
	// identity is counted each time). FailuresTruncated is true when some
	// failing identity is not in Failures.
	Failures          []string
	FailuresTotal     int
	FailuresTruncated bool
	// Complete is true only when the output proves the counts; it is
	// exactly len(Problems) == 0.
	Complete bool
	// Problems lists why Complete is false: sorted, distinct codes.
	Problems []Problem
	// Cases holds the first MaxCases results in reporting order;
	// CasesTruncated is true when more were reported.
	Cases          []Case
	CasesTruncated bool
	// Cached names the units whose results the runner replayed from its
	// cache rather than ran (Go: packages whose result line says
	// "(cached)"), sorted, at most MaxCachedPackages; CachedTotal counts
	// them all. A cached result repeats what an earlier run proved for the
	// inputs the runner tracks: a test reading anything else (a file
	// outside the module, the network) may no longer pass. It counts like
	// a run (the runner reports it so); callers say it was cached.
	Cached      []string
	CachedTotal int
	// FailureMessages holds at most MaxFailureMessages messages of failed
	// cases (see FailureMessage); the Go and JUnit parsers report them,
	// the cargo and TAP parsers none.
	FailureMessages []FailureMessage
}

// Executed is the number of tests that ran to a verdict (Passed + Failed).
func (r Report) Executed() int { return r.Passed + r.Failed }

// builder accumulates a Report under the package bounds.
type builder struct {
	r        Report
	problems map[Problem]bool
}

func newBuilder(p Parser) *builder {
	return &builder{r: Report{Parser: p}, problems: map[Problem]bool{}}
}

func (b *builder) problem(p Problem) { b.problems[p] = true }

// add records one test result under the (sanitized) identity id and
// returns its index in Cases (-1 when Cases is full).
func (b *builder) add(id string, o Outcome, durationMS int64) int {
	id = sanitizeID(id)
	if durationMS < 0 {
		durationMS = 0
	}
	switch o {
	case Passed:
		b.r.Passed++
	case Failed:
		b.r.Failed++
		b.r.FailuresTotal++
		b.addFailure(id)
	default:
		o = Skipped
		b.r.Skipped++
	}
	if len(b.r.Cases) < MaxCases {
		b.r.Cases = append(b.r.Cases, Case{ID: id, Outcome: o, DurationMS: durationMS})
		return len(b.r.Cases) - 1
	}
	b.r.CasesTruncated = true
	return -1
}

// cached records that unit's results were replayed from the runner's
// cache: the Cases at indexes are marked, and unit is named in Cached
// (the MaxCachedPackages smallest names).
func (b *builder) cached(unit string, indexes []int) {
	for _, i := range indexes {
		b.r.Cases[i].Cached = true
	}
	b.r.CachedTotal++
	c := b.r.Cached
	i, found := sort.Find(len(c), func(i int) int { return strings.Compare(unit, c[i]) })
	if found || (len(c) >= MaxCachedPackages && i >= len(c)) {
		return
	}
	if len(c) >= MaxCachedPackages {
		c = c[:len(c)-1]
	}
	b.r.Cached = slices.Insert(c, i, unit)
}

// wantsMessages reports whether the Report has room for another failure
// message.
func (b *builder) wantsMessages() bool { return len(b.r.FailureMessages) < MaxFailureMessages }

// addMessage keeps msg (trimmed, not empty) as the failure message of the
// failed case id while there is room.
func (b *builder) addMessage(id string, msg *messageBuf) {
	text := strings.TrimSpace(msg.String())
	if text == "" || !b.wantsMessages() {
		return
	}
	if msg.cut {
		text += FailureMessageCut
	}
	b.r.FailureMessages = append(b.r.FailureMessages, FailureMessage{ID: sanitizeID(id), Message: text})
}

// messageBuf accumulates a failure message: the first
// MaxFailureMessageBytes of what is written, cut at a UTF-8 boundary,
// and whether anything was left out.
type messageBuf struct {
	strings.Builder
	cut bool
}

// write appends s while there is room.
func (m *messageBuf) write(s string) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	room := MaxFailureMessageBytes - m.Len()
	if len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		s, m.cut = s[:max(room, 0)], true
	}
	m.WriteString(s)
}

// addFailure keeps the MaxFailures smallest distinct identities.
func (b *builder) addFailure(id string) {
	f := b.r.Failures
	i, found := sort.Find(len(f), func(i int) int { return strings.Compare(id, f[i]) })
	if found {
		return
	}
	if len(f) >= MaxFailures {
		b.r.FailuresTruncated = true
		if i >= len(f) {
			return
		}
		f = f[:len(f)-1]
	}
	b.r.Failures = slices.Insert(f, i, id)
}

// finish seals the Report: no_tests_found, sorted problems, Complete.
func (b *builder) finish() Report {
	if b.r.Passed+b.r.Failed == 0 {
		b.problem(ProblemNoTestsFound)
	}
	b.r.Problems = b.r.Problems[:0]
	for p := range b.problems {
		b.r.Problems = append(b.r.Problems, p)
	}
	slices.Sort(b.r.Problems)
	if len(b.r.Problems) == 0 {
		b.r.Problems = nil
	}
	b.r.Complete = len(b.r.Problems) == 0
	return b.r
}

// sanitizeID makes id valid UTF-8 and at most MaxIDBytes long.
func sanitizeID(id string) string {
	id = strings.ToValidUTF8(id, "\uFFFD")
	if len(id) <= MaxIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "~" + hex.EncodeToString(sum[:8])
	cut := MaxIDBytes - len(suffix)
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + suffix
}

// cleanLine reports whether line is free of NUL bytes and valid UTF-8.
func cleanLine(line []byte) bool {
	return utf8.Valid(line) && !slices.Contains(line, 0)
}
