package search

import (
	"bytes"
	"regexp"
	"regexp/syntax"
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
	factor     []byte
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
		return &matcher{literal: []byte(query), factor: []byte(query)}
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
		m.factor = []byte(best.text)
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

// letterRank orders lower-case letters from rare to common in source text;
// the rarest byte of a pattern is searched for first.
const letterRank = "zqjxkvbywgpfmucdlhrsnioate"

func newFoldFinder(s string) *foldFinder {
	f := &foldFinder{pat: make([]byte, len(s))}
	for i := range len(s) {
		f.pat[i] = lower(s[i])
	}
	best := 1 << 30
	for i, c := range f.pat {
		rank := bytes.IndexByte([]byte(letterRank), c)
		if rank < 0 {
			rank = -1 // not a letter: one case to search for
		}
		if rank < best {
			best, f.at = rank, i
		}
	}
	f.lo = f.pat[f.at]
	f.up = f.lo
	if 'a' <= f.lo && f.lo <= 'z' {
		f.up = f.lo - ('a' - 'A')
	}
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
