package testreport

import (
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
)

var (
	cargoRunning    = regexp.MustCompile(`^running (\d+) tests?$`)
	cargoTestLine   = regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?|bench: .*)$`)
	cargoResult     = regexp.MustCompile(`^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out(?:; finished in .*)?$`)
	cargoTarget     = regexp.MustCompile(`^\s+Running (.+)$`)
	cargoDocTests   = regexp.MustCompile(`^\s+Doc-tests (\S+)$`)
	cargoCompileErr = regexp.MustCompile("^error: could not compile `([^`]+)`")
	cargoRustcErr   = regexp.MustCompile(`^error\[E\d+\]: `)
	cargoHashSuffix = regexp.MustCompile(`-[0-9a-f]{16}$`)
)

// cargoSection tallies one test binary's run between "running N tests" and
// its "test result:" line.
type cargoSection struct {
	announced                        int
	passed, failed, ignored, measure int
}

type cargoParser struct {
	b         *builder
	target    string // identity prefix of the running binary, "" unknown
	section   *cargoSection
	summaries int
}

// ParseCargoTest parses the human output of `cargo test` (libtest's default
// format, stdout and stderr combined in order) into a Report with Parser
// ParserCargoTest.
//
// Each test binary's run starts with "running N tests", lists one
// "test NAME ... ok|FAILED|ignored" line per test, and ends with its
// "test result: ok|FAILED. P passed; F failed; I ignored; M measured; X
// filtered out" summary. Every test line is counted; when a binary's summary
// disagrees with its test lines or with N the Report carries
// ProblemSummaryMismatch, and a binary that never printed its summary (it
// crashed) ProblemNoSummary. A run in which no summary appeared at all
// carries ProblemNoSummary. Benchmarks ("bench:") are neither passed nor
// failed; ignored tests are Skipped.
//
// Identities are "<binary>::<test name>" where <binary> is the test binary
// named by cargo's "Running ... (target/debug/deps/NAME-HASH)" line without
// its hash (the crate name for unit tests, the file stem for integration
// tests), and "<crate>::doctest::<name>" for doc-tests. When the Running
// lines are absent (stderr not captured) the bare test name is used. The
// " - should panic" marker is not part of the name. A library and a binary
// target of the same name share the prefix.
//
// A compile failure ("error[E…]" or "error: could not compile `X`" outside
// a test run) carries ProblemBuildFailed and counts one failed case named X.
// Cargo's fail-fast stop after a failing binary is not a problem: the counts
// are exact for the binaries that ran.
func ParseCargoTest(r io.Reader) (Report, error) {
	p := &cargoParser{b: newBuilder(ParserCargoTest)}
	err := feedTextLines(r, p.b, nil, p.line)
	return p.finish(), err
}

func (p *cargoParser) line(line string) {
	if m := cargoTestLine.FindStringSubmatch(line); m != nil {
		p.testLine(m[1], m[2])
		return
	}
	if strings.HasPrefix(line, "test result:") {
		p.result(line)
		return
	}
	if m := cargoRunning.FindStringSubmatch(line); m != nil {
		if p.section != nil {
			p.b.problem(ProblemNoSummary)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			p.b.problem(ProblemCorruptLine)
		}
		p.section = &cargoSection{announced: n}
		return
	}
	if p.section != nil {
		// Inside a binary's run every other line is test output; a
		// compiler message printed by a test (UI tests) is not ours.
		return
	}
	if m := cargoDocTests.FindStringSubmatch(line); m != nil {
		p.target = m[1] + "::doctest"
		return
	}
	if m := cargoTarget.FindStringSubmatch(line); m != nil && !strings.HasPrefix(m[1], "`") {
		// (cargo -v prints "Running `rustc …`" for compiler invocations.)
		p.target = cargoBinaryName(m[1])
		return
	}
	if m := cargoCompileErr.FindStringSubmatch(line); m != nil {
		p.b.problem(ProblemBuildFailed)
		p.b.add(m[1], Failed, 0)
		return
	}
	if cargoRustcErr.MatchString(line) {
		p.b.problem(ProblemBuildFailed)
	}
}

// cargoBinaryName extracts the binary name from the rest of a Running line:
// "unittests src/lib.rs (target/debug/deps/demo-0123456789abcdef)" or, in
// older cargo, "target/debug/deps/demo-0123456789abcdef".
func cargoBinaryName(rest string) string {
	if i := strings.LastIndexByte(rest, '('); i >= 0 && strings.HasSuffix(rest, ")") {
		rest = rest[i+1 : len(rest)-1]
	}
	name := path.Base(strings.ReplaceAll(rest, `\`, "/"))
	name = strings.TrimSuffix(name, ".exe")
	return cargoHashSuffix.ReplaceAllString(name, "")
}

func (p *cargoParser) testLine(name, result string) {
	name = strings.TrimSuffix(name, " - should panic")
	id := name
	if p.target != "" {
		id = p.target + "::" + name
	}
	s := p.section
	if s == nil {
		// A result outside any announced run cannot be matched to a
		// summary.
		p.b.problem(ProblemSummaryMismatch)
		s = &cargoSection{}
	}
	switch {
	case result == "ok":
		s.passed++
		p.b.add(id, Passed, 0)
	case result == "FAILED":
		s.failed++
		p.b.add(id, Failed, 0)
	case strings.HasPrefix(result, "ignored"):
		s.ignored++
		p.b.add(id, Skipped, 0)
	default: // bench:
		s.measure++
	}
}

func (p *cargoParser) result(line string) {
	m := cargoResult.FindStringSubmatch(line)
	if m == nil {
		p.b.problem(ProblemCorruptLine)
		return
	}
	var n [5]int
	for i := range n {
		v, err := strconv.Atoi(m[i+2])
		if err != nil {
			p.b.problem(ProblemCorruptLine)
			return
		}
		n[i] = v
	}
	p.summaries++
	s := p.section
	p.section = nil
	if s == nil {
		p.b.problem(ProblemSummaryMismatch)
		return
	}
	passed, failed, ignored, measured := n[0], n[1], n[2], n[3]
	if s.passed != passed || s.failed != failed || s.ignored != ignored || s.measure != measured ||
		s.announced != passed+failed+ignored+measured ||
		(m[1] == "ok") != (failed == 0) {
		p.b.problem(ProblemSummaryMismatch)
	}
}

func (p *cargoParser) finish() Report {
	if p.section != nil || p.summaries == 0 {
		p.b.problem(ProblemNoSummary)
	}
	return p.b.finish()
}
