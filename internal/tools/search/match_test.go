package search

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"
)

// naiveLines is the reference: every line (split as the package documents)
// tested with the query's own regexp.
func naiveLines(content []byte, re *regexp.Regexp) (lines []int, cols []int) {
	for i, line := range bytes.SplitAfter(content, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if loc := re.FindIndex(line); loc != nil {
			lines = append(lines, i+1)
			cols = append(cols, utf8.RuneCount(line[:loc[0]])+1)
		}
	}
	return lines, cols
}

// TestPrefilteredSearchEqualsEveryLine checks the prefiltered search of one
// file against testing every line, over random texts built from pieces
// that trip prefilters: letters whose case folds leave ASCII (K U+212A,
// ſ U+017F), '\r' before and inside lines, factors split by a line break,
// no final line break.
func TestPrefilteredSearchEqualsEveryLine(t *testing.T) {
	pieces := []string{"dead", "line", "Dead", "LINE", "k", "K", "\u212a", "s", "S", "\u017f", "\r", "\n", "\r\n", " ",
		"func ", "(x *T) ", "Go", "return nil", "RETURN NIL", "é", "É", "\xff", "err"}
	queries := []struct {
		query         string
		regex, ignore bool
	}{
		{query: "deadline"}, {query: "deadline", ignore: true}, {query: "return nil", ignore: true},
		{query: "k", ignore: true}, {query: "ks", ignore: true}, {query: "deadks", ignore: true},
		{query: "é", ignore: true}, {query: "line\r"}, {query: "line\r", ignore: true},
		{query: `func \([a-z]+ \*[A-Z]\) `, regex: true}, {query: `dead(line|LINE)+`, regex: true},
		{query: `(?i)dead\s*line`, regex: true}, {query: `^Go`, regex: true}, {query: `err$`, regex: true},
		{query: `line\nGo`, regex: true}, {query: `(dead){2,}`, regex: true}, {query: `s[a-z]*k`, regex: true, ignore: true},
		{query: `x*`, regex: true}, {query: `Dead|err`, regex: true},
	}
	rng := rand.New(rand.NewPCG(13, 3))
	s := &scan{contextLines: 0, maxMatches: 1 << 20}
	for round := range 400 {
		var b []byte
		for range rng.IntN(60) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		for i, qq := range queries {
			c, err := compile(i, Query{Query: qq.query, Regex: qq.regex, CaseSensitive: new(!qq.ignore)})
			if err != nil {
				t.Fatal(err)
			}
			expr := qq.query
			if !qq.regex {
				expr = regexp.QuoteMeta(expr)
			}
			if qq.ignore {
				expr = "(?i)" + expr
			}
			wantLines, wantCols := naiveLines(b, regexp.MustCompile(expr))
			h := s.searchFile(b, "f", c, 0)
			var lines, cols []int
			for _, m := range h.matches {
				lines, cols = append(lines, m.Line), append(cols, m.Column)
			}
			if h.count != len(wantLines) || !slices.Equal(lines, wantLines) || !slices.Equal(cols, wantCols) {
				t.Fatalf("round %d query %q (regex %v, caseless %v) on %q: lines %v cols %v count %d, want lines %v cols %v",
					round, qq.query, qq.regex, qq.ignore, b, lines, cols, h.count, wantLines, wantCols)
			}
		}
	}
}

// TestPrefilterChoice checks which prefilter each kind of query gets.
func TestPrefilterChoice(t *testing.T) {
	for _, tc := range []struct {
		query         string
		regex, ignore bool
		factor        string
		fold          bool
	}{
		{query: "Hello", factor: "Hello"},
		{query: "Deadline", ignore: true, factor: "deadline", fold: true},
		{query: "kelvin", ignore: true, factor: "elvin", fold: true},                // k folds to U+212A
		{query: "s", ignore: true},                                                  // no factor: every line is tested
		{query: `func \([a-z]+ \*[A-Z]\w*\) Serve`, regex: true, factor: ") Serve"}, // the longest required literal
		{query: `(?i)x+deadline`, regex: true, factor: "deadline", fold: true},
		{query: `(a|b)c`, regex: true, factor: "c"},
		{query: `(abc)?d`, regex: true, factor: "d"},
		{query: `[a-z]+`, regex: true},
	} {
		c, err := compile(0, Query{Query: tc.query, Regex: tc.regex, CaseSensitive: new(!tc.ignore)})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		fold := c.m.factorFold != nil
		switch {
		case c.m.factor != nil:
			got = string(c.m.factor.pat)
		case fold:
			got = string(c.m.factorFold.pat)
		}
		if got != tc.factor || fold != tc.fold {
			t.Errorf("%q: factor %q (fold %v), want %q (fold %v)", tc.query, got, fold, tc.factor, tc.fold)
		}
	}
}

// TestRareByteFinders checks that the literal and case-folding finders
// search a pattern's rarest byte and still find its first occurrence, as
// bytes.Index does, over random texts dense in near misses.
func TestRareByteFinders(t *testing.T) {
	if f := newLiteralFinder([]byte("return nil")); f.b != 'u' {
		t.Errorf("return nil is searched by %q, want 'u'", f.b)
	}
	if f := newFoldFinder("return nil"); f.lo != 'u' || f.up != 'U' {
		t.Errorf("caseless return nil is searched by %q/%q, want u/U", f.lo, f.up)
	}
	if f := newLiteralFinder([]byte("a\rb")); f.b != '\r' {
		t.Errorf("a\\rb is searched by %q, want '\\r'", f.b)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []byte("reun lRUN\n")
	for _, pat := range []string{"return nil", "run", "u", "nu", "rr"} {
		lit, fold := newLiteralFinder([]byte(pat)), newFoldFinder(pat)
		for range 2000 {
			s := make([]byte, rng.IntN(40))
			for i := range s {
				s[i] = alphabet[rng.IntN(len(alphabet))]
			}
			if rng.IntN(3) == 0 {
				at := rng.IntN(len(s) + 1)
				s = append(s[:at:at], append([]byte(pat), s[at:]...)...)
			}
			if got, want := lit.index(s), bytes.Index(s, []byte(pat)); got != want {
				t.Fatalf("literal %q in %q: %d, want %d", pat, s, got, want)
			}
			if got, want := fold.index(s), bytes.Index(bytes.ToLower(s), []byte(pat)); got != want {
				t.Fatalf("caseless %q in %q: %d, want %d", pat, s, got, want)
			}
		}
	}
}
