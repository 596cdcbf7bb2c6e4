package testreport

import (
	"io"
	"regexp"
	"strconv"
	"strings"
)

var (
	tapPlan   = regexp.MustCompile(`^1\.\.(\d+)\s*(?:#.*)?$`)
	tapFooter = regexp.MustCompile(`^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$`)
)

type tapDirective int

const (
	tapNone tapDirective = iota
	tapSkip
	tapTodo
)

// tapLevel is one nesting level: the top-level stream or a subtest block.
type tapLevel struct {
	prefix    string // identity prefix of its test points
	plan      int    // -1 until a plan is seen
	points    int
	anyFailed bool   // some point at or below this level is not ok
	subtest   string // name from the last "# Subtest:" comment
}

type tapPoint struct {
	id          string
	ok          bool
	directive   tapDirective
	indent      int
	parent      bool // a subtest block preceded it
	childFailed bool
	suite       bool // node's YAML says type: 'suite'
	ms          int64
}

// tapTally counts points the way node's footer does: every point except
// suites.
type tapTally struct{ pass, fail, skip, todo, suites int }

type tapParser struct {
	b       *builder
	levels  []*tapLevel
	pending *tapPoint
	yaml    int // indent of the open YAML block, -1 when none
	footer  map[string]int
	tally   tapTally
	bailed  bool
}

// ParseTAP parses TAP version 13 or 14, as printed by `node --test` (node's
// tap reporter, its default when stdout is not a terminal) and other npm
// runners, into a Report with Parser ParserTAP.
//
// Test points are "ok N - description" and "not ok N - description" with
// optional "# SKIP" and "# TODO" directives; a SKIP point is Skipped, and so
// is a TODO point whatever its status (it proves neither pass nor failure).
// Subtests are blocks indented by four spaces that precede their parent
// point, as node prints them; the parent is counted only when it is not ok
// while none of its subtests is, and a node suite (YAML "type: 'suite'") is
// treated as a parent. Identities are description paths joined by " > "
// ("parent > child"), a block named by node's "# Subtest:" comment or, when
// absent, "#N" after its parent's number; an empty description is "#N".
// Durations come from node's YAML "duration_ms". Other YAML, comments and
// non-TAP lines are ignored, except that lines with NUL bytes or invalid
// UTF-8 are ProblemCorruptLine.
//
// The plan ("1..N", leading or trailing) is the summary: a missing top-level
// plan is ProblemNoSummary, a plan that disagrees with the points at its
// level (nested plans included) ProblemSummaryMismatch, a nested block whose
// parent point never came ProblemNoSummary. When node's footer comments
// ("# tests", "# pass", "# fail", "# cancelled", "# skipped", "# todo",
// "# suites") follow the last top-level point they must agree too.
// "Bail out!" stops parsing with ProblemBailOut.
func ParseTAP(r io.Reader) (Report, error) {
	p := &tapParser{b: newBuilder(ParserTAP), yaml: -1}
	err := feedTextLines(r, p.b, func() bool { return p.bailed }, p.line)
	return p.finish(), err
}

func (p *tapParser) line(line string) {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	content := strings.TrimRight(line[indent:], " \t")
	if p.yaml >= 0 {
		switch {
		case content == "":
			return
		case indent == p.yaml && content == "...":
			p.yaml = -1
			p.finalize()
			return
		case indent >= p.yaml:
			if indent == p.yaml {
				p.yamlKey(content)
			}
			return
		}
		// A less indented line ends a malformed YAML block.
		p.yaml = -1
	}
	if p.pending != nil {
		if content == "---" && indent == p.pending.indent+2 {
			p.yaml = indent
			return
		}
		p.finalize()
	}
	if content == "" || indent%4 != 0 {
		return
	}
	depth := indent / 4
	if depth >= MaxTAPDepth {
		p.b.problem(ProblemLimitExceeded)
		return
	}
	switch {
	case strings.HasPrefix(content, "Bail out!"):
		p.bailed = true
		p.b.problem(ProblemBailOut)
	case content == "ok" || strings.HasPrefix(content, "ok ") ||
		content == "not ok" || strings.HasPrefix(content, "not ok "):
		p.point(depth, content)
	case strings.HasPrefix(content, "1.."):
		m := tapPlan.FindStringSubmatch(content)
		if m == nil {
			return // "1..x" is not a plan; TAP ignores unknown lines
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			p.b.problem(ProblemCorruptLine)
			return
		}
		p.closeBelow(depth, ProblemSummaryMismatch)
		lvl := p.level(depth)
		if lvl.plan >= 0 {
			p.b.problem(ProblemSummaryMismatch) // two plans
		}
		lvl.plan = n
	case strings.HasPrefix(content, "# Subtest:"):
		p.closeBelow(depth, ProblemSummaryMismatch)
		name, _ := tapSplit(strings.TrimPrefix(content, "# Subtest:"))
		p.level(depth).subtest = name
	case depth == 0:
		if m := tapFooter.FindStringSubmatch(content); m != nil {
			if n, err := strconv.Atoi(m[2]); err == nil {
				if p.footer == nil {
					p.footer = map[string]int{}
				}
				p.footer[m[1]] = n
			}
		}
	}
}

// level returns level depth, opening the levels up to it.
func (p *tapParser) level(depth int) *tapLevel {
	for len(p.levels) <= depth {
		prefix := ""
		if n := len(p.levels); n > 0 {
			parent := p.levels[n-1]
			name := parent.subtest
			if name == "" {
				name = "#" + strconv.Itoa(parent.points+1)
			}
			prefix = tapJoin(parent.prefix, name)
		}
		p.levels = append(p.levels, &tapLevel{prefix: prefix, plan: -1})
	}
	return p.levels[depth]
}

// closeBelow closes every level deeper than depth, recording problem for
// each: such a block never got the parent point that would own it.
func (p *tapParser) closeBelow(depth int, problem Problem) {
	for len(p.levels) > depth+1 {
		p.levels = p.levels[:len(p.levels)-1]
		p.b.problem(problem)
	}
}

func (p *tapParser) point(depth int, content string) {
	ok := strings.HasPrefix(content, "ok")
	rest := strings.TrimPrefix(strings.TrimPrefix(content, "not "), "ok")
	rest = strings.TrimLeft(rest, " ")
	num := -1
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	if digits > 0 {
		n, err := strconv.Atoi(rest[:digits])
		if err != nil {
			p.b.problem(ProblemCorruptLine)
		} else {
			num = n
		}
		rest = rest[digits:]
	}
	rest = strings.TrimLeft(rest, " ")
	if strings.HasPrefix(rest, "- ") || rest == "-" {
		rest = rest[1:]
	}
	desc, directive := tapSplit(rest)

	pt := &tapPoint{ok: ok, directive: directive, indent: depth * 4}
	// A block one level deeper belongs to this point; deeper ones are
	// orphans.
	if len(p.levels) > depth+2 {
		p.closeBelow(depth+1, ProblemSummaryMismatch)
	}
	if len(p.levels) == depth+2 {
		child := p.levels[depth+1]
		p.levels = p.levels[:depth+1]
		p.checkPlan(child)
		pt.parent, pt.childFailed = true, child.anyFailed
	}
	lvl := p.level(depth)
	lvl.points++
	if num >= 0 && num != lvl.points {
		p.b.problem(ProblemSummaryMismatch)
	}
	if !ok && directive == tapNone {
		lvl.anyFailed = true
	}
	if desc == "" {
		desc = "#" + strconv.Itoa(lvl.points)
	}
	pt.id = tapJoin(lvl.prefix, desc)
	lvl.subtest = ""
	if depth == 0 {
		p.footer = nil
	}
	p.pending = pt
}

func (p *tapParser) checkPlan(l *tapLevel) {
	switch {
	case l.plan < 0:
		p.b.problem(ProblemNoSummary)
	case l.plan != l.points:
		p.b.problem(ProblemSummaryMismatch)
	}
}

func (p *tapParser) yamlKey(content string) {
	key, val, found := strings.Cut(content, ":")
	if !found || p.pending == nil {
		return
	}
	val = strings.Trim(strings.TrimSpace(val), `'"`)
	switch key {
	case "duration_ms":
		if f, err := strconv.ParseFloat(val, 64); err == nil {
			p.pending.ms = durationMS(f)
		}
	case "type":
		p.pending.suite = val == "suite"
	}
}

// finalize counts the pending point once its YAML block is done.
func (p *tapParser) finalize() {
	pt := p.pending
	if pt == nil {
		return
	}
	p.pending = nil
	switch {
	case pt.suite:
		p.tally.suites++
	case pt.directive == tapSkip:
		p.tally.skip++
	case pt.directive == tapTodo:
		p.tally.todo++
	case pt.ok:
		p.tally.pass++
	default:
		p.tally.fail++
	}
	ownFailure := !pt.ok && pt.directive == tapNone && !pt.childFailed
	if (pt.parent || pt.suite) && !ownFailure {
		return
	}
	switch {
	case pt.directive != tapNone:
		p.b.add(pt.id, Skipped, pt.ms)
	case pt.ok:
		p.b.add(pt.id, Passed, pt.ms)
	default:
		p.b.add(pt.id, Failed, pt.ms)
	}
}

func (p *tapParser) finish() Report {
	p.finalize()
	if len(p.levels) > 1 {
		// Blocks whose parent point never came: the stream was cut.
		p.levels = p.levels[:1]
		p.b.problem(ProblemNoSummary)
	}
	if len(p.levels) == 0 || p.levels[0].plan < 0 {
		p.b.problem(ProblemNoSummary)
	} else {
		p.checkPlan(p.levels[0])
	}
	if p.footer != nil && !p.footerAgrees() {
		p.b.problem(ProblemSummaryMismatch)
	}
	return p.b.finish()
}

func (p *tapParser) footerAgrees() bool {
	t := p.tally
	want := map[string]int{
		"tests":   t.pass + t.fail + t.skip + t.todo,
		"suites":  t.suites,
		"pass":    t.pass,
		"skipped": t.skip,
		"todo":    t.todo,
	}
	for k, v := range want {
		if got, ok := p.footer[k]; ok && got != v {
			return false
		}
	}
	f, hasF := p.footer["fail"]
	c, hasC := p.footer["cancelled"]
	return (!hasF && !hasC) || f+c == t.fail
}

// tapSplit splits a point's text into its unescaped description and its
// directive, per TAP 14: the description ends at the first unescaped '#'.
func tapSplit(s string) (string, tapDirective) {
	var desc strings.Builder
	directive := tapNone
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == '#' || s[i+1] == '\\') {
			desc.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '#' {
			d := strings.ToLower(strings.TrimSpace(s[i+1:]))
			switch {
			case strings.HasPrefix(d, "skip"):
				directive = tapSkip
			case strings.HasPrefix(d, "todo"):
				directive = tapTodo
			}
			break
		}
		desc.WriteByte(c)
	}
	return strings.TrimSpace(desc.String()), directive
}

func tapJoin(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + " > " + name
}
