package files

import (
	"cmp"
	"context"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of project_overview.
const (
	// MaxOverviewTopLevel bounds the top-level entries reported.
	MaxOverviewTopLevel = 100
	// MaxOverviewScan bounds the entries the counting walk visits; past it
	// the counts are lower bounds and truncated is set.
	MaxOverviewScan = 50_000
	// MaxOverviewLanguages bounds the languages reported.
	MaxOverviewLanguages = 10
)

// instructionPaths are the fixed agent instruction paths project_overview
// looks for, besides the top-level README* files.
var instructionPaths = []string{"AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"}

// OverviewInput is the input of project_overview.
type OverviewInput struct {
	kernel.ProjectRef
	kernel.SessionRef
}

// OverviewOutput is the output of project_overview. It names the root
// directory by its base name only, never by its absolute path.
type OverviewOutput struct {
	Project           string      `json:"project" jsonschema:"project id"`
	RootName          string      `json:"root_name" jsonschema:"base name of the project directory"`
	IsGitRepo         bool        `json:"is_git_repo" jsonschema:"the project root holds .git"`
	TopLevel          []ListEntry `json:"top_level" jsonschema:"top-level entries that are not ignored, in git tree order"`
	TopLevelTruncated bool        `json:"top_level_truncated"`
	FileCount         int         `json:"file_count" jsonschema:"regular files that are not ignored"`
	DirCount          int         `json:"dir_count" jsonschema:"directories that are not ignored"`
	TotalBytes        int64       `json:"total_bytes" jsonschema:"total size of the counted files"`
	// Truncated is set when the walk stopped at MaxOverviewScan entries;
	// the counts and languages are then lower bounds.
	Truncated bool       `json:"truncated" jsonschema:"the walk stopped early; counts are lower bounds"`
	Languages []Language `json:"languages" jsonschema:"up to 10 languages by file count, detected by file extension"`
	// InstructionFiles lists the present instruction files, sorted.
	InstructionFiles []string `json:"instruction_files" jsonschema:"present agent instruction and README files"`
}

// Language is the share of one language among the counted files.
type Language struct {
	Name  string `json:"name"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
}

func overviewHandler(runners workspace.Runners) func(context.Context, *kernel.Invocation, OverviewInput) (OverviewOutput, error) {
	return func(ctx context.Context, inv *kernel.Invocation, in OverviewInput) (OverviewOutput, error) {
		return workspace.Do(ctx, runners.For(inv.Project), inv.Project, overviewOp, in)
	}
}

// overview runs project_overview, its counting walk visiting at most
// maxScan entries.
func overview(ctx context.Context, p project.Project, maxScan int) (OverviewOutput, error) {
	t, err := p.OpenTree()
	if err != nil {
		return OverviewOutput{}, err
	}
	defer t.Close()
	out := OverviewOutput{
		Project:          p.ID,
		RootName:         filepath.Base(p.Root),
		TopLevel:         []ListEntry{},
		Languages:        []Language{},
		InstructionFiles: instructionFiles(t),
	}
	if _, err := t.Root().Lstat(walk.GitDirName); err == nil {
		out.IsGitRepo = true
	}
	err = walk.Walk(ctx, t.Root(), ".", ".", walk.Options{}, func(e walk.Entry) error {
		if len(out.TopLevel) == MaxOverviewTopLevel {
			out.TopLevelTruncated = true
			return walk.SkipAll
		}
		out.TopLevel = append(out.TopLevel, ListEntry{Path: e.Path, Kind: e.Kind, SizeBytes: e.Size})
		if e.Kind == walk.KindDir {
			return walk.SkipDir
		}
		return nil
	})
	if err != nil {
		return OverviewOutput{}, walkFailure(t, err, ".")
	}

	langs := map[string]*Language{}
	visited := 0
	err = walk.Walk(ctx, t.Root(), ".", ".", walk.Options{}, func(e walk.Entry) error {
		if visited == maxScan {
			out.Truncated = true
			return walk.SkipAll
		}
		visited++
		switch e.Kind {
		case walk.KindDir:
			out.DirCount++
		case walk.KindFile:
			out.FileCount++
			out.TotalBytes += e.Size
			if name := languageOf(path.Base(e.Path)); name != "" {
				l := langs[name]
				if l == nil {
					l = &Language{Name: name}
					langs[name] = l
				}
				l.Files++
				l.Bytes += e.Size
			}
		}
		return nil
	})
	if err != nil {
		return OverviewOutput{}, walkFailure(t, err, ".")
	}
	for _, l := range langs {
		out.Languages = append(out.Languages, *l)
	}
	slices.SortFunc(out.Languages, func(a, b Language) int {
		return cmp.Or(cmp.Compare(b.Files, a.Files), cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Name, b.Name))
	})
	if len(out.Languages) > MaxOverviewLanguages {
		out.Languages = out.Languages[:MaxOverviewLanguages]
	}
	return out, nil
}

// instructionFiles returns the present instruction files: instructionPaths
// and the top-level files whose name starts with "README" in any letter
// case. A symbolic link counts when it resolves to a regular file inside
// the project. Ignore rules do not apply.
func instructionFiles(t *project.Tree) []string {
	candidates := slices.Clone(instructionPaths)
	if d, err := t.Root().Open("."); err == nil {
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, name := range names {
			if strings.HasPrefix(strings.ToUpper(name), "README") {
				candidates = append(candidates, name)
			}
		}
	}
	found := []string{}
	for _, c := range candidates {
		loc, clean, err := t.Resolve(c)
		if err != nil {
			continue
		}
		if st, err := t.Root().Stat(loc); err == nil && st.Mode().IsRegular() {
			found = append(found, clean)
		}
	}
	slices.Sort(found)
	return found
}

// languageOf names the language of a file by its base name, or "".
func languageOf(base string) string {
	if l, ok := languageByName[base]; ok {
		return l
	}
	ext := path.Ext(base)
	if ext == base {
		return "" // a dot file such as .bashrc has no extension
	}
	return languageByExt[strings.ToLower(ext)]
}

var languageByName = map[string]string{
	"Makefile":    "Makefile",
	"GNUmakefile": "Makefile",
	"Dockerfile":  "Dockerfile",
}

var languageByExt = map[string]string{
	".go": "Go", ".rs": "Rust", ".py": "Python", ".pyi": "Python",
	".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript", ".jsx": "JavaScript",
	".ts": "TypeScript", ".tsx": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
	".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin", ".scala": "Scala", ".groovy": "Groovy", ".gradle": "Groovy",
	".swift": "Swift", ".mm": "Objective-C++",
	".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".hh": "C++", ".hpp": "C++", ".hxx": "C++",
	".cs": "C#", ".fs": "F#", ".vb": "Visual Basic",
	".rb": "Ruby", ".php": "PHP", ".pl": "Perl", ".pm": "Perl", ".lua": "Lua", ".r": "R", ".jl": "Julia",
	".dart": "Dart", ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hrl": "Erlang",
	".hs": "Haskell", ".ml": "OCaml", ".mli": "OCaml", ".clj": "Clojure", ".cljs": "Clojure",
	".zig": "Zig", ".nim": "Nim", ".sol": "Solidity",
	".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".fish": "Shell", ".ps1": "PowerShell",
	".sql": "SQL", ".proto": "Protocol Buffers", ".tf": "HCL", ".hcl": "HCL",
	".html": "HTML", ".htm": "HTML", ".css": "CSS", ".scss": "SCSS", ".sass": "SCSS", ".less": "Less",
	".vue": "Vue", ".svelte": "Svelte",
	".md": "Markdown", ".markdown": "Markdown", ".rst": "reStructuredText",
	".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".xml": "XML",
}
