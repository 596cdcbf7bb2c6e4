package walk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// rule is one pattern line of an ignore file.
type rule struct {
	// base is the project-relative directory holding the ignore file
	// ("" for the project root).
	base string
	// segments is the pattern split on '/'; a non-anchored pattern has
	// exactly one segment and is matched against the base name.
	segments []string
	negate   bool
	dirOnly  bool
	anchored bool
}

// parseIgnore parses the content of an ignore file located in directory
// base (project-relative, "" for the root) following gitignore(5): blank
// lines and '#' comments are skipped, unescaped trailing spaces are trimmed,
// '!' negates, a trailing '/' restricts the pattern to directories, and a
// pattern holding a '/' anywhere but at its end is anchored to base.
func parseIgnore(content []byte, base string) []rule {
	var rules []rule
	for _, line := range strings.Split(string(content), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpaces(line)
		r := rule{base: base}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		r.anchored = strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		if line == "" {
			continue
		}
		r.segments = strings.Split(line, "/")
		rules = append(rules, r)
	}
	return rules
}

// trimTrailingSpaces removes trailing spaces that are not escaped with a
// backslash.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		if len(s) >= 2 && s[len(s)-2] == '\\' {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// ignored reports whether the project-relative path rel (a directory when
// isDir) is excluded by rules, which are ordered from lowest to highest
// precedence: the last matching rule decides.
func ignored(rules []rule, rel string, isDir bool) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].matches(rel, isDir) {
			return !rules[i].negate
		}
	}
	return false
}

func (r rule) matches(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	sub := rel
	if r.base != "" {
		if !strings.HasPrefix(rel, r.base+"/") {
			return false
		}
		sub = rel[len(r.base)+1:]
	}
	if !r.anchored {
		name := sub[strings.LastIndexByte(sub, '/')+1:]
		return matchSegment(r.segments[0], name)
	}
	return matchSegments(r.segments, strings.Split(sub, "/"))
}

// matchSegments matches pattern segments against path components. A "**"
// segment matches zero or more components, except as the last segment,
// where it matches one or more (so "dir/**" matches what is inside dir but
// not dir itself).
func matchSegments(pat, comps []string) bool {
	// memo[i*(len(comps)+1)+j]: 0 unknown, 1 false, 2 true.
	memo := make([]byte, (len(pat)+1)*(len(comps)+1))
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		k := i*(len(comps)+1) + j
		if memo[k] != 0 {
			return memo[k] == 2
		}
		var ok bool
		switch {
		case i == len(pat):
			ok = j == len(comps)
		case pat[i] == "**":
			if i == len(pat)-1 {
				ok = j < len(comps)
			} else {
				for n := j; n <= len(comps) && !ok; n++ {
					ok = rec(i+1, n)
				}
			}
		default:
			ok = j < len(comps) && matchSegment(pat[i], comps[j]) && rec(i+1, j+1)
		}
		memo[k] = 1
		if ok {
			memo[k] = 2
		}
		return ok
	}
	return rec(0, 0)
}

// matchSegment reports whether the single path component name matches the
// glob p: '*' matches any run of characters, '?' one character, '[...]' a
// character class ('!' or '^' negates; ranges and [:class:] names allowed),
// and '\' escapes the next character. Consecutive stars act as one. The
// match is case-sensitive and runs in O(len(p)*len(name)).
func matchSegment(p, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, -1
	for px < len(p) || nx < len(name) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				for px < len(p) && p[px] == '*' {
					px++
				}
				starPx, starNx = px, nx
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if matched, n, valid := matchClass(p[px:], r); valid {
						if matched {
							px += n
							nx += w
							continue
						}
					} else if name[nx] == '[' {
						px++
						nx++
						continue
					}
				}
			case '\\':
				lit := byte('\\')
				step := 1
				if px+1 < len(p) {
					lit, step = p[px+1], 2
				}
				if nx < len(name) && name[nx] == lit {
					px += step
					nx++
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px++
					nx++
					continue
				}
			}
		}
		// Mismatch: let the last star absorb one more character.
		if starPx >= 0 && starNx < len(name) {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx, starNx
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the bracket expression at the start of p
// (p[0] == '['). It returns whether r matched, the length of the expression
// and whether the expression is well formed (closed by ']').
func matchClass(p string, r rune) (matched bool, n int, valid bool) {
	i := 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	first := true
	for i < len(p) {
		if p[i] == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		if p[i] == '[' && i+1 < len(p) && p[i+1] == ':' {
			if end := strings.Index(p[i+2:], ":]"); end >= 0 {
				if classMatches(p[i+2:i+2+end], r) {
					matched = true
				}
				i += 2 + end + 2
				continue
			}
		}
		lo, w := classRune(p[i:])
		i += w
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, w = classRune(p[i+1:])
			i += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return false, 0, false
}

// classRune decodes one possibly escaped rune of a bracket expression.
func classRune(s string) (rune, int) {
	if s[0] == '\\' && len(s) > 1 {
		r, w := utf8.DecodeRuneInString(s[1:])
		return r, w + 1
	}
	return utf8.DecodeRuneInString(s)
}

func classMatches(name string, r rune) bool {
	switch name {
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	case "alpha":
		return unicode.IsLetter(r)
	case "blank":
		return r == ' ' || r == '\t'
	case "cntrl":
		return unicode.IsControl(r)
	case "digit":
		return r >= '0' && r <= '9'
	case "graph":
		return unicode.IsGraphic(r) && !unicode.IsSpace(r)
	case "lower":
		return unicode.IsLower(r)
	case "print":
		return unicode.IsPrint(r)
	case "punct":
		return unicode.IsPunct(r) || unicode.IsSymbol(r)
	case "space":
		return unicode.IsSpace(r)
	case "upper":
		return unicode.IsUpper(r)
	case "xdigit":
		return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
	}
	return false
}
