// Package files provides the read-only file tools: read_files,
// list_project_files and project_overview.
//
// Every path argument goes through the project path policy before any
// I/O, and every open, stat and directory read goes through the call's
// root handle ([project.Tree]), so nothing outside the project is read even
// when a directory is swapped for a symlink meanwhile. Listings and the overview are
// gitignore-aware (see package walk). read_files is the only one of these
// tools that observes paths: a successful call records the paths it read
// with [kernel.Invocation.Observe]; enumerations record nothing.
package files

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Category is the telemetry category of the file tools.
const Category = "files"

// The operations these tools run where the project's files are (see
// package workspace).
var (
	readOp = workspace.NewOp("files.read", readOnRunner)
	listOp = workspace.NewOp("files.list", func(ctx context.Context, _ workspace.Env, p project.Project, in ListInput) (ListOutput, error) {
		return listFiles(ctx, p, in, MaxListScan)
	})
	overviewOp = workspace.NewOp("files.overview", func(ctx context.Context, _ workspace.Env, p project.Project, _ OverviewInput) (OverviewOutput, error) {
		return overview(ctx, p, MaxOverviewScan)
	})
)

// Ops returns the operations of the file tools, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{readOp, listOp, overviewOp} }

// Register adds read_files, list_project_files and project_overview to reg;
// runners serves each call's project.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	scopes := []auth.Scope{auth.ScopeProjectRead}
	ann := kernel.Annotations{ReadOnly: true, Idempotent: true}
	kernel.Register(reg, kernel.Spec[ReadFilesInput, ReadFilesOutput]{
		Runners: true,
		Name:    "read_files",
		Description: "Read 1-8 text files or line ranges. Each gives the exact lines, the file's sha256 and " +
			"read_revision (the edit fence), total_lines and next_start_line when more follow.",
		Category: Category, Scopes: scopes, Annotations: ann, Session: kernel.SessionOptional,
		Handler: readFilesHandler(runners),
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Runners: true,
		Name:    "list_project_files",
		Description: "List the files and directories under a project path, honouring .gitignore unless " +
			"include_ignored; globs filter (without '/' they match base names, '!' excludes).",
		Category: Category, Scopes: scopes, Annotations: ann, Session: kernel.SessionOptional,
		Handler: listHandler(runners),
	})
	kernel.Register(reg, kernel.Spec[OverviewInput, OverviewOutput]{
		Runners: true,
		Name:    "project_overview",
		Description: "Summarize a project: top-level entries, file count and size, languages, " +
			"agent instruction files and whether it is a git repository.",
		Category: Category, Scopes: scopes, Annotations: ann, Session: kernel.SessionOptional,
		Handler: overviewHandler(runners),
	})
}
