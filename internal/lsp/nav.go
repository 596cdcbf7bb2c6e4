package lsp

import (
	"io"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
)

// The operations of a navigation request.
const (
	OpDefinition       = "definition"
	OpReferences       = "references"
	OpHover            = "hover"
	OpDocumentSymbols  = "document_symbols"
	OpWorkspaceSymbols = "workspace_symbols"
	OpDiagnostics      = "diagnostics"
)

// Ops lists the operations, for validation and documentation.
var Ops = []string{OpDefinition, OpReferences, OpHover, OpDocumentSymbols, OpWorkspaceSymbols, OpDiagnostics}

// Bounds of a navigation result.
const (
	// MaxResults bounds the locations, symbols or diagnostics returned.
	MaxResults = 200
	// MaxSnippetBytes bounds a result's snippet (its first line).
	MaxSnippetBytes = 240
	// MaxHoverBytes bounds hover text.
	MaxHoverBytes = 8 << 10
	// MaxFileBytes bounds a file a request names or a result is read
	// from for its snippet.
	MaxFileBytes = 4 << 20
	// MaxQueryBytes bounds a workspace_symbols query.
	MaxQueryBytes = 256
)

// A Request is one read-only navigation request. Line and Column are
// 1-based, Column in characters (Unicode code points).
type Request struct {
	Op       string `json:"op"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Query    string `json:"query,omitempty"`
	Language string `json:"language,omitempty"`
}

// positional reports whether op needs a position.
func positional(op string) bool {
	return op == OpDefinition || op == OpReferences || op == OpHover
}

// A Result answers a Request. Exactly the part of its op is set.
type Result struct {
	Op string `json:"op"`
	// Path is the requested file's canonical project-relative path.
	Path     string `json:"path,omitempty"`
	Language string `json:"language"`
	Server   string `json:"server"`
	// Sandbox is the mode in force for the server.
	Sandbox   string       `json:"sandbox"`
	Locations []Location   `json:"locations,omitempty"`
	Symbols   []Symbol     `json:"symbols,omitempty"`
	Problems  []Diagnostic `json:"diagnostics,omitempty"`
	Hover     string       `json:"hover,omitempty"`
	Total     int          `json:"total"`
	Returned  int          `json:"returned"`
	Truncated bool         `json:"truncated"`
}

// Paths are the project-relative paths a result names (its own file and
// every location inside the project), for the exploration workset.
func (r Result) Paths() []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(r.Path)
	for _, l := range r.Locations {
		if !l.External {
			add(l.Path)
		}
	}
	for _, s := range r.Symbols {
		if !s.External {
			add(s.Path)
		}
	}
	return out
}

// A Range is a 1-based line range; columns are in characters and only
// given inside the project.
type Range struct {
	StartLine   int `json:"start_line"`
	StartColumn int `json:"start_column,omitempty"`
	EndLine     int `json:"end_line"`
	EndColumn   int `json:"end_column,omitempty"`
}

// A Location is a place a result names. Inside the project it has a
// project-relative Path and a Snippet; outside it is External with only
// a Hint (a module or package, never an absolute path) and no contents.
type Location struct {
	Path     string `json:"path,omitempty"`
	External bool   `json:"external,omitempty"`
	Hint     string `json:"hint,omitempty"`
	Range
	Snippet string `json:"snippet,omitempty"`
}

// A Symbol is a named declaration.
type Symbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail,omitempty"`
	Container string `json:"container,omitempty"`
	Location
}

// A Diagnostic is a problem the server reports in the requested file.
type Diagnostic struct {
	Range
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Source   string `json:"source,omitempty"`
}

// target is a validated request: the language, the file and its text.
type target struct {
	lang  Language
	abs   string
	rel   string
	text  []byte
	lines []string
}

// validate checks req against p without starting anything: the op, the
// path (inside the project, no symlink out of it, a regular text file),
// the position (inside the file).
func validate(langs []Language, p project.Project, tree *project.Tree, req Request) (target, error) {
	var t target
	known := false
	for _, op := range Ops {
		known = known || op == req.Op
	}
	if !known {
		return t, failure.New(failure.InvalidArguments, "op %q is not one of %s", req.Op, strings.Join(Ops, ", "))
	}
	if req.Op == OpWorkspaceSymbols {
		if req.Query == "" || len(req.Query) > MaxQueryBytes {
			return t, failure.New(failure.InvalidArguments, "workspace_symbols needs a query of 1 to %d bytes", MaxQueryBytes)
		}
		if req.Path == "" {
			l, ok := LanguageNamed(langs, req.Language)
			if !ok {
				return t, failure.New(failure.InvalidArguments, "workspace_symbols needs a path or a language (%s)", languageNames(langs))
			}
			t.lang = l
			return t, nil
		}
	}
	if req.Path == "" {
		return t, failure.New(failure.InvalidArguments, "%s needs a path", req.Op)
	}
	l, ok := LanguageOf(langs, req.Path)
	if !ok {
		return t, failure.New(failure.InvalidArguments, "no language server is known for %q (languages: %s)", req.Path, languageNames(langs))
	}
	t.lang = l
	abs, rel, err := p.Resolve(req.Path)
	if err != nil {
		return t, err
	}
	t.abs, t.rel = abs, rel
	if t.text, err = readText(tree, rel); err != nil {
		return t, err
	}
	if !isText(t.text) {
		return t, failure.New(failure.InvalidArguments, "%s is a binary file", rel)
	}
	t.lines = splitLines(string(t.text))
	if positional(req.Op) {
		if req.Line < 1 || req.Line > len(t.lines) {
			return t, failure.New(failure.InvalidArguments, "line %d is outside %s (1 to %d)", req.Line, rel, len(t.lines))
		}
		if _, ok := toUnits(t.lines[req.Line-1], req.Column, UTF16); !ok {
			return t, failure.New(failure.InvalidArguments, "column %d is outside line %d of %s (1 to %d)",
				req.Column, req.Line, rel, utf8.RuneCountInString(t.lines[req.Line-1])+1)
		}
	}
	return t, nil
}

func languageNames(langs []Language) string {
	var names []string
	for _, l := range langs {
		names = append(names, l.Name)
	}
	return strings.Join(names, ", ")
}

// snippet is line cut to MaxSnippetBytes at a character boundary, its
// surrounding blanks trimmed.
func snippet(line string) string {
	return snippetBytes(strings.TrimSpace(line), MaxSnippetBytes)
}

// hint names an external file by its module or package, never by its
// absolute path: "module@version/dir" in a module cache, "std: pkg" in a
// Go root, else its directory's name.
func hint(abs string) string {
	p := strings.ReplaceAll(abs, "\\", "/")
	dir := p
	if i := strings.LastIndex(p, "/"); i >= 0 {
		dir = p[:i]
	}
	if _, after, ok := strings.Cut(dir, "/pkg/mod/"); ok {
		return after
	}
	if i := strings.LastIndex(dir, "/src/"); i >= 0 {
		return "std: " + dir[i+len("/src/"):]
	}
	if i := strings.LastIndex(dir, "/"); i >= 0 {
		return dir[i+1:]
	}
	return dir
}

// readText reads the project file rel through tree (so a symlink swapped
// in after the path was resolved still cannot lead out of the project):
// not_found when it is not there, invalid_arguments when it is not a
// regular file or is larger than MaxFileBytes, the path policy's kinds
// for a way out.
func readText(tree *project.Tree, rel string) ([]byte, error) {
	// O_NONBLOCK keeps a named pipe from blocking the open.
	f, _, err := tree.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, failure.New(failure.InvalidArguments, "%s is not a regular file", rel)
	}
	if st.Size() > MaxFileBytes {
		return nil, failure.New(failure.InvalidArguments, "%s is larger than %d bytes", rel, MaxFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, failure.Wrap(failure.OperationFailed, err, "cannot read %s", rel)
	}
	if len(b) > MaxFileBytes {
		return nil, failure.New(failure.InvalidArguments, "%s is larger than %d bytes", rel, MaxFileBytes)
	}
	return b, nil
}

// isText reports whether b is a text file's content.
func isText(b []byte) bool { return !walk.IsBinary(b) && utf8.Valid(b) }
