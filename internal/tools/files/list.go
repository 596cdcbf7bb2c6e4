package files

import (
	"context"
	"errors"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/walk"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds of list_project_files.
const (
	// DefaultListLimit is the number of entries returned when limit is
	// omitted.
	DefaultListLimit = 500
	// MaxListLimit is the largest limit a caller may ask for.
	MaxListLimit = 5000
	// MaxListScan bounds the entries one listing visits (returned or
	// filtered out by globs); past it total is a lower bound.
	MaxListScan = 100_000
)

// ListInput is the input of list_project_files.
type ListInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Path           string   `json:"path,omitempty" jsonschema:"directory to list; default the project root"`
	Globs          []string `json:"globs,omitempty" jsonschema:"doublestar globs; without '/' they match base names, '!' excludes"`
	IncludeIgnored bool     `json:"include_ignored,omitempty" jsonschema:"also list files .gitignore excludes (never .git)"`
	Limit          int      `json:"limit,omitempty" jsonschema:"entries to return; default 500, at most 5000"`
}

// ListOutput is the output of list_project_files.
type ListOutput struct {
	// Path is the canonical listed directory.
	Path    string      `json:"path"`
	Entries []ListEntry `json:"entries"`
	// Total counts the matching entries found; it exceeds len(Entries)
	// when the limit cut the listing.
	Total int `json:"total" jsonschema:"matching entries found, returned or not"`
	// Truncated is set when entries were left out (limit or scan bound).
	Truncated bool `json:"truncated"`
	// TotalIsLowerBound is set when the walk stopped at MaxListScan
	// visited entries, so more may exist.
	TotalIsLowerBound bool `json:"total_is_lower_bound,omitempty" jsonschema:"the walk stopped early; total is a lower bound"`
}

// ListEntry is one listed file-system object.
type ListEntry struct {
	Path      string    `json:"path" jsonschema:"project-relative path"`
	Kind      walk.Kind `json:"kind" jsonschema:"file, dir, symlink or other"`
	SizeBytes int64     `json:"size_bytes" jsonschema:"size of a regular file; 0 for other kinds"`
}

func listHandler(runners workspace.Runners) func(context.Context, *kernel.Invocation, ListInput) (ListOutput, error) {
	return func(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
		return workspace.Do(ctx, runners.For(inv.Project), inv.Project, listOp, in)
	}
}

// listFiles runs list_project_files visiting at most maxScan entries.
func listFiles(ctx context.Context, p project.Project, in ListInput, maxScan int) (ListOutput, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return ListOutput{}, failure.New(failure.InvalidArguments, "limit must be 1-%d", MaxListLimit)
	}
	globs, err := walk.CompileGlobs("globs", in.Globs)
	if err != nil {
		return ListOutput{}, err
	}
	t, err := p.OpenTree()
	if err != nil {
		return ListOutput{}, err
	}
	defer t.Close()
	loc, dir, err := resolveDir(t, in.Path)
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Path: dir, Entries: []ListEntry{}}
	visited := 0
	err = walk.Walk(ctx, t.Root(), dir, loc, walk.Options{IncludeIgnored: in.IncludeIgnored}, func(e walk.Entry) error {
		if visited == maxScan {
			out.TotalIsLowerBound = true
			return walk.SkipAll
		}
		visited++
		if !globs.Match(e.Path) {
			return nil
		}
		out.Total++
		if len(out.Entries) < limit {
			out.Entries = append(out.Entries, ListEntry{Path: e.Path, Kind: e.Kind, SizeBytes: e.Size})
		}
		return nil
	})
	if err != nil {
		return ListOutput{}, walkFailure(t, err, dir)
	}
	out.Truncated = out.Total > len(out.Entries) || out.TotalIsLowerBound
	return out, nil
}

// resolveDir resolves the project-relative directory rel ("" means the
// root) and returns its location in t and its canonical form. It fails
// with not_found when it does not exist and invalid_arguments when it is
// not a directory.
func resolveDir(t *project.Tree, rel string) (loc, clean string, err error) {
	if rel == "" {
		rel = "."
	}
	loc, clean, err = t.Resolve(rel)
	if err != nil {
		return "", "", err
	}
	st, err := t.Root().Stat(loc)
	if err != nil {
		return "", "", t.Failure(err, clean)
	}
	if !st.IsDir() {
		return "", "", failure.New(failure.InvalidArguments, "%q is not a directory", clean)
	}
	return loc, clean, nil
}

// walkFailure maps an error of walk.Walk over directory dir of t.
func walkFailure(t *project.Tree, err error, dir string) error {
	var fe *failure.Error
	switch {
	case errors.As(err, &fe):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return cancelled(err)
	default:
		return t.Failure(err, dir)
	}
}

// cancelled reports a call whose context ended before the tool finished.
func cancelled(err error) error {
	return failure.Wrap(failure.Interrupted, err, "the call was cancelled before it finished")
}
