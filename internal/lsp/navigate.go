package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// lspPosition and lspRange are LSP's 0-based positions, in the server's
// position encoding.
type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspLocation struct {
	URI   string   `json:"uri"`
	Range lspRange `json:"range"`
	// LocationLink's fields, when a server answers with links.
	TargetURI            string    `json:"targetUri"`
	TargetSelectionRange *lspRange `json:"targetSelectionRange"`
}

type diagnostic struct {
	Range    lspRange `json:"range"`
	Severity int      `json:"severity"`
	Message  string   `json:"message"`
	Source   string   `json:"source"`
}

// Navigate answers req on p's files with the server of the file's
// language, started if needed. A bad request fails before any server
// starts; see validate for the kinds.
func (m *Manager) Navigate(ctx context.Context, p project.Project, req Request) (Result, error) {
	tree, err := p.OpenTree()
	if err != nil {
		return Result{}, err
	}
	defer tree.Close()
	t, err := validate(m.opt.Languages, p, tree, req)
	if err != nil {
		return Result{}, err
	}
	root := p.Root
	ctx, cancel := context.WithTimeout(ctx, m.opt.RequestTimeout)
	defer cancel()
	s, release, err := m.acquire(ctx, root, t.lang)
	if err != nil {
		var ferr *failure.Error
		switch {
		case errors.As(err, &ferr):
		case errors.Is(err, context.DeadlineExceeded):
			err = failure.Wrap(failure.TimedOut, err, "%s did not start within %s", t.lang.Server, m.opt.RequestTimeout)
		case errors.Is(err, context.Canceled):
			err = failure.Wrap(failure.Cancelled, err, "the request was cancelled while %s started", t.lang.Server)
		}
		return Result{}, err
	}
	defer release()
	res := Result{Op: req.Op, Path: t.rel, Language: t.lang.Name, Server: t.lang.Server, Sandbox: string(s.mode)}
	f := files{root: root, tree: tree, enc: s.enc, cache: map[string][]string{}}
	if t.abs != "" {
		f.cache[t.abs] = t.lines
	}
	version := 0
	if t.abs != "" {
		if version, err = s.sync(t.abs, t.text); err != nil {
			return Result{}, err
		}
	}
	doc := map[string]string{"uri": fileURI(t.abs)}
	var pos lspPosition
	if positional(req.Op) {
		ch, _ := toUnits(t.lines[req.Line-1], req.Column, s.enc)
		pos = lspPosition{Line: req.Line - 1, Character: ch}
	}
	switch req.Op {
	case OpDefinition, OpReferences:
		params := map[string]any{"textDocument": doc, "position": pos}
		method := "textDocument/definition"
		if req.Op == OpReferences {
			method = "textDocument/references"
			params["context"] = map[string]bool{"includeDeclaration": true}
		}
		raw, err := s.rawRequest(ctx, method, params)
		if err != nil {
			return Result{}, err
		}
		locs := decodeLocations(raw)
		res.Total = len(locs)
		for _, l := range locs {
			if len(res.Locations) == MaxResults {
				break
			}
			res.Locations = append(res.Locations, f.location(l))
		}
		res.Returned = len(res.Locations)
	case OpHover:
		var h struct {
			Contents json.RawMessage `json:"contents"`
		}
		if err := s.request(ctx, "textDocument/hover", map[string]any{"textDocument": doc, "position": pos}, &h); err != nil {
			return Result{}, err
		}
		text := hoverText(h.Contents)
		res.Total = len(text)
		if len(text) > MaxHoverBytes {
			text = snippetBytes(text, MaxHoverBytes)
			res.Truncated = true
		}
		res.Hover, res.Returned = text, len(text)
		return res, nil
	case OpDocumentSymbols:
		raw, err := s.rawRequest(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": doc})
		if err != nil {
			return Result{}, err
		}
		res.Symbols, res.Total = f.documentSymbols(raw, t.abs)
		res.Returned = len(res.Symbols)
	case OpWorkspaceSymbols:
		raw, err := s.rawRequest(ctx, "workspace/symbol", map[string]any{"query": req.Query})
		if err != nil {
			return Result{}, err
		}
		res.Symbols, res.Total = f.workspaceSymbols(raw)
		res.Returned = len(res.Symbols)
	case OpDiagnostics:
		list, err := s.conn.diagnostics(ctx, doc["uri"], version)
		if err != nil {
			return Result{}, s.failed(err, "diagnostics")
		}
		res.Total = len(list)
		for _, d := range list {
			if len(res.Problems) == MaxResults {
				break
			}
			res.Problems = append(res.Problems, Diagnostic{Range: f.span(t.abs, d.Range), Severity: severity(d.Severity), Message: d.Message, Source: d.Source})
		}
		res.Returned = len(res.Problems)
	}
	res.Truncated = res.Returned < res.Total
	return res, nil
}

// decodeLocations reads a Location, a Location list or a LocationLink
// list (null gives none).
func decodeLocations(raw json.RawMessage) []lspLocation {
	var list []lspLocation
	if json.Unmarshal(raw, &list) != nil {
		var one lspLocation
		if json.Unmarshal(raw, &one) != nil || (one.URI == "" && one.TargetURI == "") {
			return nil
		}
		list = []lspLocation{one}
	}
	for i, l := range list {
		if l.URI == "" && l.TargetURI != "" {
			list[i].URI = l.TargetURI
			if l.TargetSelectionRange != nil {
				list[i].Range = *l.TargetSelectionRange
			}
		}
	}
	return list
}

// files converts server locations to results, reading each project file
// at most once per request.
type files struct {
	root string
	// tree reads the files: a path the server names inside the root
	// that leads out of it through a symlink is never read.
	tree  *project.Tree
	enc   string
	cache map[string][]string // absolute path → lines (nil: unreadable)
}

// rel is abs relative to the root, or "" when abs is outside it.
func (f *files) rel(abs string) string {
	r, err := filepath.Rel(f.root, abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return ""
	}
	return filepath.ToSlash(r)
}

func (f *files) lines(abs string) []string {
	if l, ok := f.cache[abs]; ok {
		return l
	}
	var lines []string
	if rel := f.rel(abs); rel != "" {
		if b, err := readText(f.tree, rel); err == nil && isText(b) {
			lines = splitLines(string(b))
		}
	}
	f.cache[abs] = lines
	return lines
}

// span converts r in the project file abs to 1-based lines and columns in
// characters.
func (f *files) span(abs string, r lspRange) Range {
	out := Range{StartLine: r.Start.Line + 1, EndLine: r.End.Line + 1}
	lines := f.lines(abs)
	if r.Start.Line < len(lines) {
		out.StartColumn = toColumn(lines[r.Start.Line], r.Start.Character, f.enc)
	}
	if r.End.Line < len(lines) {
		out.EndColumn = toColumn(lines[r.End.Line], r.End.Character, f.enc)
	}
	return out
}

// HintSymlinkOut is the hint of a location the server names inside the
// project root that leads out of it through a symlink: it is external,
// and neither its target nor its contents are read.
const HintSymlinkOut = "outside the project through a symlink"

// location converts l: inside the project with its snippet, outside as
// external with a hint only.
func (f *files) location(l lspLocation) Location {
	abs := uriPath(l.URI)
	rel := ""
	if abs != "" {
		rel = f.rel(abs)
	}
	lines := f.lines(abs)
	if rel == "" || lines == nil && f.tree.Escaped(rel) != nil {
		h := hint(abs)
		if rel != "" {
			h = HintSymlinkOut
		}
		return Location{External: true, Hint: h, Range: Range{StartLine: l.Range.Start.Line + 1, EndLine: l.Range.End.Line + 1}}
	}
	loc := Location{Path: rel, Range: f.span(abs, l.Range)}
	if l.Range.Start.Line < len(lines) {
		loc.Snippet = snippet(lines[l.Range.Start.Line])
	}
	return loc
}

// documentSymbols flattens a DocumentSymbol tree (or reads a
// SymbolInformation list) in document order, at most MaxResults; it
// returns them and how many there were.
func (f *files) documentSymbols(raw json.RawMessage, abs string) ([]Symbol, int) {
	var tree []docSymbol
	if json.Unmarshal(raw, &tree) != nil {
		return nil, 0
	}
	if len(tree) > 0 && tree[0].Location != nil {
		return f.workspaceSymbols(raw)
	}
	var out []Symbol
	total := 0
	var walkTree func([]docSymbol, string)
	walkTree = func(list []docSymbol, container string) {
		for _, d := range list {
			total++
			if len(out) < MaxResults {
				r := d.SelectionRange
				if r == nil {
					r = &d.Range
				}
				loc := f.location(lspLocation{URI: fileURI(abs), Range: lspRange{Start: r.Start, End: d.Range.End}})
				out = append(out, Symbol{Name: d.Name, Kind: symbolKind(d.Kind), Detail: snippet(d.Detail), Container: container, Location: loc})
			}
			walkTree(d.Children, d.Name)
		}
	}
	walkTree(tree, "")
	return out, total
}

type docSymbol struct {
	Name           string       `json:"name"`
	Detail         string       `json:"detail"`
	Kind           int          `json:"kind"`
	Range          lspRange     `json:"range"`
	SelectionRange *lspRange    `json:"selectionRange"`
	Children       []docSymbol  `json:"children"`
	Location       *lspLocation `json:"location"`
}

// workspaceSymbols reads a SymbolInformation or WorkspaceSymbol list.
func (f *files) workspaceSymbols(raw json.RawMessage) ([]Symbol, int) {
	var list []struct {
		Name          string      `json:"name"`
		Kind          int         `json:"kind"`
		ContainerName string      `json:"containerName"`
		Location      lspLocation `json:"location"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil, 0
	}
	var out []Symbol
	for _, s := range list {
		if len(out) == MaxResults {
			break
		}
		out = append(out, Symbol{Name: s.Name, Kind: symbolKind(s.Kind), Container: s.ContainerName, Location: f.location(s.Location)})
	}
	return out, len(list)
}

// symbolKinds are LSP's SymbolKind names, from 1.
var symbolKinds = []string{"file", "module", "namespace", "package", "class", "method", "property", "field",
	"constructor", "enum", "interface", "function", "variable", "constant", "string", "number", "boolean",
	"array", "object", "key", "null", "enum_member", "struct", "event", "operator", "type_parameter"}

func symbolKind(k int) string {
	if k >= 1 && k <= len(symbolKinds) {
		return symbolKinds[k-1]
	}
	return "unknown"
}

func severity(s int) string {
	switch s {
	case 1:
		return "error"
	case 2:
		return "warning"
	case 3:
		return "information"
	case 4:
		return "hint"
	}
	return "unknown"
}

// hoverText reads hover contents: MarkupContent, a MarkedString or a
// list of them, joined by blank lines.
func hoverText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Value != "" {
		return v.Value
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var parts []string
		for _, item := range list {
			if t := hoverText(item); t != "" {
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

// snippetBytes is s cut to at most n bytes at a character boundary.
func snippetBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
