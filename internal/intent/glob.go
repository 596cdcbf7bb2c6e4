package intent

import (
	"path"
	"strings"
	"unicode/utf8"
)

// Glob syntax: a glob is a project-relative slash-separated pattern.
// Each segment is a path.Match pattern (*, ?, [...], \ escapes), except a
// segment that is exactly ** , which matches zero or more whole segments.
// Globs are canonicalized with path.Clean; an absolute glob, one that
// escapes the project through .., the project itself (".") and a
// malformed pattern are invalid.

// CanonicalGlob validates g and returns its canonical form, or
// failure.InvalidArguments naming g.
func CanonicalGlob(g string) (string, error) {
	if g == "" || utf8.RuneCountInString(g) > GlobMaxChars {
		return "", errorf("glob %q must be 1-%d characters", shown(g), GlobMaxChars)
	}
	if strings.ContainsRune(g, 0) {
		return "", errorf("glob %q contains a NUL byte", shown(g))
	}
	if strings.HasPrefix(g, "/") || strings.HasPrefix(g, `\`) || (len(g) > 1 && g[1] == ':' && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", rune(g[0]))) {
		return "", errorf("glob %q is absolute; globs are relative to the project", shown(g))
	}
	c := path.Clean(g)
	if c == "." {
		return "", errorf("glob %q names the project itself; use ** for every file", shown(g))
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errorf("glob %q escapes the project", shown(g))
	}
	for _, seg := range strings.Split(c, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return "", errorf("glob %q is not a valid pattern: %v", shown(g), err)
		}
	}
	return c, nil
}

// Match reports whether the project-relative path p matches the canonical
// glob g.
func Match(g, p string) bool {
	return matchSegs(strings.Split(g, "/"), strings.Split(path.Clean(p), "/"))
}

func matchSegs(gs, ps []string) bool {
	return aligned(func(at func(i, j int) bool, i, j int) bool {
		switch {
		case i == len(gs):
			return j == len(ps)
		case gs[i] == "**":
			return at(i+1, j) || (j < len(ps) && at(i, j+1))
		case j == len(ps):
			return false
		}
		ok, _ := path.Match(gs[i], ps[j])
		return ok && at(i+1, j+1)
	})
}

// aligned runs step from (0, 0) over two segment lists, step calling at
// for the positions it depends on; each position is judged once, so a
// glob with several ** costs at most the product of the lengths.
func aligned(step func(at func(i, j int) bool, i, j int) bool) bool {
	memo := map[[2]int]bool{}
	var at func(i, j int) bool
	at = func(i, j int) bool {
		k := [2]int{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		v := step(at, i, j)
		memo[k] = v
		return v
	}
	return at(0, 0)
}

// GlobsOverlap reports whether some path could match both canonical globs a
// and b. The rule, segment by segment (** on either side may take zero or
// more segments of the other): two literal segments overlap when equal; a
// literal and a pattern when the pattern matches the literal; two patterns
// when the literal prefix of one (up to its first *, ?, [ or \) is a
// prefix of the other's. It never misses a path both match; two patterns
// may be reported overlapping when no path matches both (a false positive
// is acceptable for an advisory notice).
func GlobsOverlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	return aligned(func(at func(i, j int) bool, i, j int) bool {
		switch {
		case i < len(as) && as[i] == "**":
			return at(i+1, j) || (j < len(bs) && at(i, j+1))
		case j < len(bs) && bs[j] == "**":
			return at(i, j+1) || (i < len(as) && at(i+1, j))
		case i == len(as) || j == len(bs):
			return i == len(as) && j == len(bs)
		}
		return segOverlap(as[i], bs[j]) && at(i+1, j+1)
	})
}

const meta = `*?[\`

func segOverlap(x, y string) bool {
	xl, yl := !strings.ContainsAny(x, meta), !strings.ContainsAny(y, meta)
	switch {
	case xl && yl:
		return x == y
	case xl:
		ok, _ := path.Match(y, x)
		return ok
	case yl:
		ok, _ := path.Match(x, y)
		return ok
	}
	px, py := x[:strings.IndexAny(x, meta)], y[:strings.IndexAny(y, meta)]
	return strings.HasPrefix(px, py) || strings.HasPrefix(py, px)
}
