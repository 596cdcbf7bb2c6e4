package search

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A matcher finds a query's first match on one line, and a prefilter
// (factor) that every matching line contains, so that only the lines
// holding the factor are tested and files without it are passed over.
type matcher struct {
	// literal is a case-sensitive literal query, tested with bytes.Index.
	literal []byte
	// fold is an ASCII case-insensitive literal query whose every letter
	// folds only to ASCII letters, so ASCII folding is exact.
	fold *foldFinder
	// re tests a line when the query is neither of the above.
	re *regexp.Regexp

	// factor is a literal every matching line contains (case-sensitive),
	// or factorFold its ASCII case-folded form; neither: every line is
	// tested.
	factor     *literalFinder
	factorFold *foldFinder
}

// find returns the byte offset of the first match in line, or -1.
func (m *matcher) find(line []byte) int {
	switch {
	case m.literal != nil:
		return bytes.Index(line, m.literal)
	case m.fold != nil:
		return m.fold.index(line)
	}
	if loc := m.re.FindIndex(line); loc != nil {
		return loc[0]
	}
	return -1
}

// newMatcher builds the matcher of a query: a literal (caseSensitive or
// not) or an RE2 expression; re is the compiled query.
func newMatcher(query string, isRegex, caseSensitive bool, re *regexp.Regexp) *matcher {
	switch {
	case !isRegex && caseSensitive:
		return &matcher{literal: []byte(query), factor: newLiteralFinder([]byte(query))}
	case !isRegex:
		if asciiFoldExact(query) {
			f := newFoldFinder(query)
			return &matcher{fold: f, factorFold: f}
		}
		m := &matcher{re: re}
		m.setFactor(foldRuns(query))
		return m
	}
	m := &matcher{re: re}
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return m // every line is tested
	}
	var cands []factor
	for _, f := range requiredLiterals(parsed.Simplify(), nil) {
		if f.fold {
			cands = append(cands, foldRuns(string(f.runes))...)
		} else {
			cands = append(cands, factor{text: string(f.runes)})
		}
	}
	m.setFactor(cands)
	return m
}

// factor is a prefilter candidate: text, ASCII case-folded when fold.
type factor struct {
	text string
	fold bool
}

// setFactor keeps the longest candidate (a case-sensitive one on ties).
func (m *matcher) setFactor(cands []factor) {
	var best factor
	for _, c := range cands {
		if len(c.text) > len(best.text) || (len(c.text) == len(best.text) && best.fold && !c.fold) {
			best = c
		}
	}
	switch {
	case best.text == "":
	case best.fold:
		m.factorFold = newFoldFinder(best.text)
	default:
		m.factor = newLiteralFinder([]byte(best.text))
	}
}

// literalRunes is a literal that every match of an expression contains.
type literalRunes struct {
	runes []rune
	fold  bool
}

// requiredLiterals appends to acc the literals that every match of re
// contains: those of its concatenated, captured and repeated-at-least-once
// parts.
func requiredLiterals(re *syntax.Regexp, acc []literalRunes) []literalRunes {
	switch re.Op {
	case syntax.OpLiteral:
		return append(acc, literalRunes{runes: re.Rune, fold: re.Flags&syntax.FoldCase != 0})
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0], acc)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0], acc)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			acc = requiredLiterals(sub, acc)
		}
	}
	return acc
}

// asciiFold reports whether r and every rune it folds to are ASCII: then
// ASCII case folding matches r exactly as Unicode simple folding does (k
// and s are not: they fold to K U+212A and ſ U+017F).
func asciiFold(r rune) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiFoldExact(s string) bool {
	for _, r := range s {
		if !asciiFold(r) {
			return false
		}
	}
	return true
}

// foldRuns returns the maximal runs of s made of runes that asciiFold
// admits, as case-folded prefilter candidates.
func foldRuns(s string) []factor {
	var out []factor
	start := -1
	for i, r := range s {
		switch {
		case asciiFold(r) && start < 0:
			start = i
		case !asciiFold(r) && start >= 0:
			out = append(out, factor{text: s[start:i], fold: true})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, factor{text: s[start:], fold: true})
	}
	return out
}

// foldFinder finds an ASCII pattern ignoring ASCII letter case.
type foldFinder struct {
	pat []byte // lower-cased
	// at is the offset in pat of the byte searched for first, lo and up
	// its two cases (equal for a non-letter).
	at     int
	lo, up byte
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// byteRank orders the printable ASCII bytes and tab from rare to common,
// as counted over the Go source tree; a byte missing from it (a control
// byte or a byte of a multi-byte UTF-8 sequence) counts as rarer than all.
// A literal is searched for by its rarest byte first, so that the fewest
// places are verified.
const byteRank = "~^?#`JZj@q%>'K<&$zY+;!|WQ*GU][-FVNXwHBk7ML9P\\D5OCI}{vR8yT6ES3_b4=\"h:gm2)/(Ap.1udflcx,osianr0\tte "

// rank is c's place in byteRank, -1 when missing.
func rank(c byte) int { return strings.IndexByte(byteRank, c) }

// literalFinder finds a case-sensitive pattern by its rarest byte.
type literalFinder struct {
	pat []byte
	at  int  // the offset in pat of the byte searched for
	b   byte // pat[at]
}

func newLiteralFinder(pat []byte) *literalFinder {
	f := &literalFinder{pat: pat}
	best := len(byteRank)
	for i, c := range pat {
		if r := rank(c); r < best {
			best, f.at = r, i
		}
	}
	f.b = pat[f.at]
	return f
}

// index returns the offset of the first occurrence of the pattern in s,
// or -1: the occurrences of the rare byte come in the order of the
// pattern's, so the first that verifies is the first occurrence.
func (f *literalFinder) index(s []byte) int {
	for off := f.at; off < len(s); {
		i := bytes.IndexByte(s[off:], f.b)
		if i < 0 {
			return -1
		}
		start := off + i - f.at
		if start+len(f.pat) > len(s) {
			return -1
		}
		if bytes.Equal(s[start:start+len(f.pat)], f.pat) {
			return start
		}
		off += i + 1
	}
	return -1
}

func newFoldFinder(s string) *foldFinder {
	f := &foldFinder{pat: make([]byte, len(s))}
	for i := range len(s) {
		f.pat[i] = lower(s[i])
	}
	upper := func(c byte) byte {
		if 'a' <= c && c <= 'z' {
			return c - ('a' - 'A')
		}
		return c
	}
	// A letter is searched for in both cases: it is as common as the
	// commoner of them.
	best := len(byteRank)
	for i, c := range f.pat {
		if r := max(rank(c), rank(upper(c))); r < best {
			best, f.at = r, i
		}
	}
	f.lo = f.pat[f.at]
	f.up = upper(f.lo)
	return f
}

// equalAt reports whether s[i:] starts with the pattern, ignoring case.
func (f *foldFinder) equalAt(s []byte, i int) bool {
	if i < 0 || i+len(f.pat) > len(s) {
		return false
	}
	for j, c := range f.pat {
		if lower(s[i+j]) != c {
			return false
		}
	}
	return true
}

// index returns the offset of the first case-insensitive occurrence of
// the pattern in s, or -1.
func (f *foldFinder) index(s []byte) int {
	lo, up := -2, -2 // next offsets of the two cases beyond off, -1 none
	for off := f.at; off < len(s); {
		if lo != -1 && lo < off {
			lo = bytes.IndexByte(s[off:], f.lo)
			if lo >= 0 {
				lo += off
			}
		}
		if up != -1 && up < off && f.up != f.lo {
			up = bytes.IndexByte(s[off:], f.up)
			if up >= 0 {
				up += off
			}
		}
		c := lo
		if f.up != f.lo && up >= 0 && (c < 0 || up < c) {
			c = up
		}
		if c < 0 {
			return -1
		}
		if f.equalAt(s, c-f.at) {
			return c - f.at
		}
		off = c + 1
	}
	return -1
}
