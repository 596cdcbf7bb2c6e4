// Package search provides search_project_texts, a gitignore-aware text
// search over a project's files implemented in Go (RE2 regular
// expressions, no external tools).
//
// Queries match one line at a time: the line is searched without its '\n'
// terminator and without one '\r' before it, so a pattern never spans
// lines. Binary files (a NUL byte in the first 8 KiB) and files larger than
// MaxFileBytes are skipped and counted; symbolic links met by the walk are
// not followed. Every directory and file is reached from the project's
// root handle (project.Tree), a walked file through its open directory
// without following a symbolic link, so a search never reads outside the
// project. A query's path (a directory or a file) is searched even when
// an ignore rule names it, since the caller asked for it; ignore rules still
// apply beneath it. Queries are case-sensitive unless case_sensitive is
// false. Matches are ordered by query index, then path (git tree order),
// then line, so equal inputs over equal files give byte-identical outputs.
// A successful call observes the paths of the files whose matches it
// returned.
package search

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of search_project_texts.
const (
	// MaxQueries bounds the queries of one call.
	MaxQueries = 8
	// MaxQueryBytes bounds the length of one query.
	MaxQueryBytes = 1024
	// DefaultContextLines is the context returned around a match when
	// context_lines is omitted.
	DefaultContextLines = 1
	// MaxContextLines is the largest context_lines.
	MaxContextLines = 5
	// DefaultMaxMatches is the per-query match limit when max_matches is
	// omitted.
	DefaultMaxMatches = 100
	// MaxMatchesLimit is the largest max_matches.
	MaxMatchesLimit = 1000
	// MaxFileBytes is the size above which a file is skipped.
	MaxFileBytes = 2 << 20
	// MaxLineChars bounds the characters (runes) of a returned line or
	// context line.
	MaxLineChars = 400
	// MatchLeadChars is how many characters before the match a cut line
	// keeps when the match lies beyond its first MaxLineChars-MatchLeadChars
	// characters.
	MatchLeadChars = 100
	// MaxScannedFiles bounds the file reads of one call; past it the scan
	// stops and the output says so.
	MaxScannedFiles = 20_000
	// MaxOutputBytes bounds the text (lines, context and paths) of all
	// returned matches together; later matches are left out.
	MaxOutputBytes = 1 << 20
)

// matchOverheadBytes is the budget charged per match besides its text.
const matchOverheadBytes = 64

// Category is the telemetry category of search tools.
const Category = "search"

// op is the search run where the project's files are (see package
// workspace). A remote runner reports no progress.
var op = workspace.NewOp("search.texts", func(ctx context.Context, _ workspace.Env, p project.Project, in Input) (opResult, error) {
	out, observed, err := search(ctx, p, in, MaxScannedFiles, nil)
	return opResult{Output: out, Observed: observed}, err
})

// opResult is what search.texts returns: the output and the paths observed.
type opResult struct {
	Output   Output   `json:"output"`
	Observed []string `json:"observed"`
}

// Ops returns the search operation, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{op} }

// Register adds search_project_texts to reg; runners serves each call's
// project.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	kernel.Register(reg, kernel.Spec[Input, Output]{
		Runners: true,
		Name:    "search_project_texts",
		Description: "Search a project's text files line by line with 1-8 literal or RE2 queries (.gitignore honoured; binary " +
			"files and files over 2 MiB skipped). Matches come ordered by query, path and line, with context lines.",
		Category: Category, Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionOptional,
		Handler:     handler(runners),
	})
}

// Input is the input of search_project_texts.
type Input struct {
	kernel.ProjectRef
	kernel.SessionRef
	Queries        []Query `json:"queries" jsonschema:"1-8 queries"`
	ContextLines   *int    `json:"context_lines,omitempty" jsonschema:"context lines around each match, 0-5; default 1"`
	MaxMatches     int     `json:"max_matches,omitempty" jsonschema:"matches returned per query; default 100, at most 1000"`
	IncludeIgnored bool    `json:"include_ignored,omitempty" jsonschema:"also search files .gitignore excludes (never .git)"`
}

// Query is one search.
type Query struct {
	Query string `json:"query" jsonschema:"text to find on one line; an RE2 pattern when regex is true"`
	Regex bool   `json:"regex,omitempty" jsonschema:"treat query as an RE2 regular expression"`
	// CaseSensitive defaults to true.
	CaseSensitive *bool    `json:"case_sensitive,omitempty" jsonschema:"match letter case exactly; default true"`
	Globs         []string `json:"globs,omitempty" jsonschema:"doublestar globs; without '/' they match base names, '!' excludes"`
	Path          string   `json:"path,omitempty" jsonschema:"directory or file to search; default the project root"`
}

// Output is the output of search_project_texts.
type Output struct {
	Matches []Match      `json:"matches"`
	Queries []QueryCount `json:"queries" jsonschema:"per-query counts, by query index"`
	// FilesScanned counts the distinct files searched.
	FilesScanned       int `json:"files_scanned"`
	FilesSkippedBinary int `json:"files_skipped_binary"`
	FilesSkippedLarge  int `json:"files_skipped_large"`
	// Truncated is set when any match found was left out or the scan was
	// incomplete.
	Truncated bool `json:"truncated"`
	// ScanIncomplete is set when the scan stopped at MaxScannedFiles; the
	// counts are then lower bounds.
	ScanIncomplete bool `json:"scan_incomplete,omitempty"`
}

// Match is one matching line. Column is the 1-based character (rune)
// position of the first match on the line.
type Match struct {
	QueryIndex int    `json:"query_index"`
	Path       string `json:"path"`
	Line       int    `json:"line"`
	Column     int    `json:"column"`
	Text       string `json:"text" jsonschema:"the line, cut to 400 characters"`
	// TextTruncated is set when Text is a cut of a longer line.
	TextTruncated bool `json:"text_truncated,omitempty"`
	// TextStartColumn is the column of Text's first character when the
	// cut does not start at the beginning of the line (omitted when 1).
	TextStartColumn int           `json:"text_start_column,omitempty"`
	Before          []ContextLine `json:"before,omitempty"`
	After           []ContextLine `json:"after,omitempty"`
}

// ContextLine is a line around a match, cut to MaxLineChars characters.
type ContextLine struct {
	Line      int    `json:"line"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
}

// QueryCount summarizes one query.
type QueryCount struct {
	QueryIndex int `json:"query_index"`
	// Matches counts the matching lines found in the scanned files.
	Matches int `json:"matches"`
	// Files counts the scanned files with at least one match.
	Files int `json:"files"`
	// Returned counts this query's matches in Output.Matches.
	Returned  int  `json:"returned"`
	Truncated bool `json:"truncated"`
}

func handler(runners workspace.Runners) func(context.Context, *kernel.Invocation, Input) (Output, error) {
	return func(ctx context.Context, inv *kernel.Invocation, in Input) (Output, error) {
		r := runners.For(inv.Project)
		if _, remote := r.(workspace.Remote); remote {
			res, err := workspace.Do(ctx, r, inv.Project, op, in)
			if err != nil {
				return Output{}, err
			}
			inv.Observe(res.Observed...)
			return res.Output, nil
		}
		out, observed, err := search(ctx, inv.Project, in, MaxScannedFiles, func(files int) {
			inv.Progress(float64(files), 0, fmt.Sprintf("%d files searched", files))
		})
		if err != nil {
			return Output{}, err
		}
		inv.Observe(observed...)
		return out, nil
	}
}

// compiled is a validated query.
type compiled struct {
	index int
	m     *matcher
	globs walk.GlobSet

	matches []Match
	count   int
	files   int
	// fullAt is the sequence number of the file whose matches filled
	// this query's max_matches (math.MaxInt64 before): later files only
	// count.
	fullAt atomic.Int64
}

// group is the queries sharing one search path.
type group struct {
	rel     string
	loc     string
	isFile  bool
	size    int64
	queries []*compiled
}

// ProgressEvery is how many files a search reads between progress reports.
const ProgressEvery = 200

// run executes a search reading at most maxReads files and returns its
// output and the observed paths (sorted, distinct).
func run(ctx context.Context, p project.Project, in Input, maxReads int) (Output, []string, error) {
	return search(ctx, p, in, maxReads, nil)
}

// search is run with a progress callback.
func search(ctx context.Context, p project.Project, in Input, maxReads int, progress func(files int)) (Output, []string, error) {
	if len(in.Queries) == 0 || len(in.Queries) > MaxQueries {
		return Output{}, nil, failure.New(failure.InvalidArguments, "queries must hold 1-%d entries, got %d", MaxQueries, len(in.Queries))
	}
	ctxLines := DefaultContextLines
	if in.ContextLines != nil {
		ctxLines = *in.ContextLines
	}
	if ctxLines < 0 || ctxLines > MaxContextLines {
		return Output{}, nil, failure.New(failure.InvalidArguments, "context_lines must be 0-%d", MaxContextLines)
	}
	maxMatches := in.MaxMatches
	switch {
	case maxMatches == 0:
		maxMatches = DefaultMaxMatches
	case maxMatches < 0 || maxMatches > MaxMatchesLimit:
		return Output{}, nil, failure.New(failure.InvalidArguments, "max_matches must be 1-%d", MaxMatchesLimit)
	}
	qs := make([]*compiled, len(in.Queries))
	for i, q := range in.Queries {
		c, err := compile(i, q)
		if err != nil {
			return Output{}, nil, err
		}
		qs[i] = c
	}
	t, err := p.OpenTree()
	if err != nil {
		return Output{}, nil, err
	}
	defer t.Close()
	groups, err := resolveGroups(t, qs, in.Queries)
	if err != nil {
		return Output{}, nil, err
	}
	s := &scan{
		tree: t, includeIgnored: in.IncludeIgnored, contextLines: ctxLines, maxMatches: maxMatches, maxReads: maxReads,
		scanned: map[string]bool{}, binary: map[string]bool{}, large: map[string]bool{}, progress: progress,
	}
	if err := s.run(ctx, groups); err != nil {
		return Output{}, nil, err
	}
	return assemble(s, qs)
}

func compile(i int, q Query) (*compiled, error) {
	bad := func(format string, args ...any) error {
		return failure.New(failure.InvalidArguments, "queries[%d]: %s", i, fmt.Sprintf(format, args...)).
			WithDetail("query_index", i)
	}
	switch {
	case q.Query == "":
		return nil, bad("query must not be empty")
	case len(q.Query) > MaxQueryBytes:
		return nil, bad("query is longer than %d bytes", MaxQueryBytes)
	case strings.ContainsRune(q.Query, '\n'):
		return nil, bad("query must not contain a line break; queries match one line at a time")
	case !utf8.ValidString(q.Query):
		return nil, bad("query is not valid UTF-8")
	}
	c := &compiled{index: i}
	c.fullAt.Store(math.MaxInt64)
	caseSensitive := q.CaseSensitive == nil || *q.CaseSensitive
	var re *regexp.Regexp
	if q.Regex || !caseSensitive {
		expr := q.Query
		if !q.Regex {
			expr = regexp.QuoteMeta(expr)
		}
		if !caseSensitive {
			expr = "(?i)" + expr
		}
		var err error
		if re, err = regexp.Compile(expr); err != nil {
			return nil, bad("invalid regular expression: %v", err)
		}
	}
	c.m = newMatcher(q.Query, q.Regex, caseSensitive, re)
	globs, err := walk.CompileGlobs(fmt.Sprintf("queries[%d].globs", i), q.Globs)
	if err != nil {
		return nil, err
	}
	c.globs = globs
	return c, nil
}

// resolveGroups resolves every query path before any search runs and
// groups the queries by canonical path, in order of first appearance.
func resolveGroups(t *project.Tree, qs []*compiled, in []Query) ([]*group, error) {
	var groups []*group
	byPath := map[string]*group{}
	for i, q := range in {
		rel := q.Path
		if rel == "" {
			rel = "."
		}
		loc, clean, err := t.Resolve(rel)
		if err != nil {
			return nil, err
		}
		if g := byPath[clean]; g != nil {
			g.queries = append(g.queries, qs[i])
			continue
		}
		st, err := t.Root().Stat(loc)
		if err != nil {
			return nil, t.Failure(err, clean)
		}
		g := &group{rel: clean, loc: loc, queries: []*compiled{qs[i]}}
		switch {
		case st.IsDir():
		case st.Mode().IsRegular():
			g.isFile, g.size = true, st.Size()
		default:
			return nil, failure.New(failure.InvalidArguments, "queries[%d].path %q is neither a directory nor a regular file", i, clean)
		}
		byPath[clean] = g
		groups = append(groups, g)
	}
	return groups, nil
}

func cancelled(err error) error {
	return failure.Wrap(failure.Interrupted, err, "the call was cancelled before it finished")
}

// window cuts line to at most MaxLineChars runes so that the rune at index
// matchRune stays visible. It returns the text, the 1-based column of its
// first rune when that is not 1 (else 0), and whether the line was cut.
func window(line []byte, matchRune int) (string, int, bool) {
	if utf8.RuneCount(line) <= MaxLineChars {
		return string(line), 0, false
	}
	start := 0
	if matchRune >= MaxLineChars-MatchLeadChars {
		start = matchRune - MatchLeadChars
	}
	text := runeSlice(line, start, start+MaxLineChars)
	if start == 0 {
		return text, 0, true
	}
	return text, start + 1, true
}

func contextLine(line []byte, n int) ContextLine {
	if utf8.RuneCount(line) <= MaxLineChars {
		return ContextLine{Line: n, Text: string(line)}
	}
	return ContextLine{Line: n, Text: runeSlice(line, 0, MaxLineChars), Truncated: true}
}

// runeSlice returns the runes [from, to) of b (to is clamped).
func runeSlice(b []byte, from, to int) string {
	i, r := 0, 0
	for r < from && i < len(b) {
		_, w := utf8.DecodeRune(b[i:])
		i += w
		r++
	}
	j := i
	for r < to && j < len(b) {
		_, w := utf8.DecodeRune(b[j:])
		j += w
		r++
	}
	return string(b[i:j])
}

// assemble orders the matches by query index (each query's matches are
// already in path and line order), applies MaxOutputBytes and collects the
// observed paths.
func assemble(s *scan, qs []*compiled) (Output, []string, error) {
	out := Output{
		Matches: []Match{}, Queries: make([]QueryCount, len(qs)),
		FilesScanned: len(s.scanned), FilesSkippedBinary: len(s.binary), FilesSkippedLarge: len(s.large),
		ScanIncomplete: s.incomplete, Truncated: s.incomplete,
	}
	used := 0
	full := false
	observed := map[string]bool{}
	for i, q := range qs {
		qc := QueryCount{QueryIndex: i, Matches: q.count, Files: q.files}
		for _, m := range q.matches {
			cost := matchCost(m)
			if full || used+cost > MaxOutputBytes {
				full = true
				break
			}
			used += cost
			out.Matches = append(out.Matches, m)
			qc.Returned++
			observed[m.Path] = true
		}
		qc.Truncated = qc.Returned < qc.Matches || s.incomplete
		out.Truncated = out.Truncated || qc.Truncated
		out.Queries[i] = qc
	}
	paths := make([]string, 0, len(observed))
	for p := range observed {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return out, paths, nil
}

func matchCost(m Match) int {
	n := matchOverheadBytes + len(m.Path) + len(m.Text)
	for _, c := range m.Before {
		n += len(c.Text)
	}
	for _, c := range m.After {
		n += len(c.Text)
	}
	return n
}
