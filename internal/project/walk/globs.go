package walk

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/webcodex/webcodex/internal/failure"
)

// MaxGlobs bounds the number of patterns in one GlobSet.
const MaxGlobs = 32

// MaxGlobBytes bounds the length of one pattern.
const MaxGlobBytes = 256

// A GlobSet filters project-relative paths with doublestar patterns.
//
// A pattern starting with '!' excludes; any other pattern includes. A path
// matches the set when it matches no exclusion and either the set has no
// inclusions or the path matches one of them. A pattern holding no '/' is
// matched against the path's base name (so "*.go" matches "a/b/c.go"); any
// other pattern is matched against the whole project-relative path
// ("src/**/*.go"). Matching is case-sensitive. The zero value matches
// every path.
type GlobSet struct {
	include, exclude []string
}

// CompileGlobs validates patterns and returns their GlobSet. field names
// the argument in error messages (for example "globs" or
// "queries[2].globs"). It fails with failure.InvalidArguments when there
// are more than MaxGlobs patterns or a pattern is empty, longer than
// MaxGlobBytes or malformed.
func CompileGlobs(field string, patterns []string) (GlobSet, error) {
	var g GlobSet
	if len(patterns) > MaxGlobs {
		return g, failure.New(failure.InvalidArguments, "%s holds %d patterns; at most %d are allowed", field, len(patterns), MaxGlobs)
	}
	for i, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		body := strings.TrimPrefix(p, "!")
		switch {
		case body == "":
			return GlobSet{}, failure.New(failure.InvalidArguments, "%s[%d] is empty", field, i)
		case len(p) > MaxGlobBytes:
			return GlobSet{}, failure.New(failure.InvalidArguments, "%s[%d] is longer than %d bytes", field, i, MaxGlobBytes)
		case !doublestar.ValidatePattern(body):
			return GlobSet{}, failure.New(failure.InvalidArguments, "%s[%d] %q is not a valid glob pattern", field, i, p)
		}
		if neg {
			g.exclude = append(g.exclude, body)
		} else {
			g.include = append(g.include, body)
		}
	}
	return g, nil
}

// Match reports whether the project-relative path rel passes the set.
func (g GlobSet) Match(rel string) bool {
	for _, p := range g.exclude {
		if globMatch(p, rel) {
			return false
		}
	}
	if len(g.include) == 0 {
		return true
	}
	for _, p := range g.include {
		if globMatch(p, rel) {
			return true
		}
	}
	return false
}

func globMatch(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		rel = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	return doublestar.MatchUnvalidated(pattern, rel)
}
