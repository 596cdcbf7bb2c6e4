// Package git provides the read-only git tools git_status and git_diff.
//
// # Contract
//
// The tools read git through internal/gitrepo, which runs the git binary
// found on the server's PATH through the runner host with a fixed argv (no
// shell), in the project root, with a scrubbed environment (see the
// gitrepo package), under GitTimeout and with every output bounded. They
// never take optional locks or write the repository (git_diff gives git a
// private copy of the index, which porcelain diff would otherwise refresh
// in place), never run external diff or textconv drivers and disable
// fsmonitor hooks. Paths are reported relative to the
// project root, also when the project is a subdirectory of a larger
// repository (changes outside the project are then not reported).
//
// # Paths handed to git
//
// git_diff's paths go through the path policy and are then checked through
// the project's root handle (project.Tree) at call time, just before git
// runs: a path whose existing part leads outside the root, also through a
// symlink that appeared after the policy check, is permission_denied and
// git is not run. git then opens the paths itself, with
// GIT_LITERAL_PATHSPECS=1 and --relative; it does not follow symbolic
// links in the work tree (it diffs a link as a link and treats a path
// beyond one as not being in the work tree). What is not guaranteed: a
// swap made after the check and before git's own lookup is seen by git,
// not by this package, so the confinement there is git's rule, not the
// root handle's.
//
// A project that is not inside a git work tree is not an error for
// git_status (is_git_repo=false); git_diff fails with invalid_arguments
// and the detail is_git_repo=false. A missing git binary is unavailable;
// a git failure (for example a repository git refuses as of dubious
// ownership) or a timeout is operation_failed.
//
// Limitation: git itself may run clean/smudge filter drivers configured by
// the repository while it computes status or diff. Those are the
// repository's own configuration; this package cannot disable them.
package git

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds.
const (
	// GitTimeout bounds one git tool call (all of its git processes).
	GitTimeout = gitrepo.Timeout
	// MaxStatusEntries bounds the entries of git_status.
	MaxStatusEntries = gitrepo.MaxStatusEntries
	// MaxStatusOutputBytes bounds the raw output read from git status.
	MaxStatusOutputBytes = gitrepo.MaxStatusOutputBytes
	// MaxDiffPaths bounds the paths filter of git_diff.
	MaxDiffPaths = 32
	// DefaultContextLines and MaxContextLines bound git_diff context_lines.
	DefaultContextLines = 3
	MaxContextLines     = 10
	// DefaultDiffBytes and MaxDiffBytes bound the hunk text git_diff
	// returns (max_bytes).
	DefaultDiffBytes = 64 << 10
	MaxDiffBytes     = 512 << 10
	// MaxDiffFiles bounds the files listed by git_diff.
	MaxDiffFiles = 500
	// MaxDiffListBytes bounds the raw file listing read from git diff.
	MaxDiffListBytes = 4 << 20
	// MaxUntracked bounds the untracked paths listed by git_diff.
	MaxUntracked = 100
	// MaxIndexCopyBytes bounds the index git_diff copies so that git's
	// opportunistic index refresh never writes the repository's index.
	MaxIndexCopyBytes = gitrepo.MaxIndexCopyBytes
	// MaxStderrBytes bounds the git diagnostics kept for an error message.
	MaxStderrBytes = gitrepo.MaxStderrBytes
)

// Status entry kinds (gitrepo's).
const (
	KindModified   = gitrepo.KindModified
	KindAdded      = gitrepo.KindAdded
	KindDeleted    = gitrepo.KindDeleted
	KindRenamed    = gitrepo.KindRenamed
	KindUntracked  = gitrepo.KindUntracked
	KindConflicted = gitrepo.KindConflicted
)

// Diff file statuses.
const (
	StatusAdded       = "added"
	StatusDeleted     = "deleted"
	StatusModified    = "modified"
	StatusRenamed     = "renamed"
	StatusCopied      = "copied"
	StatusTypeChanged = "type_changed"
	StatusUnmerged    = "unmerged"
)

// Tools holds the dependencies of the git tools.
type Tools struct {
	// Runners serves each call's project: git runs on its host.
	Runners workspace.Runners
}

// The operations the git tools run where the project's repository is (see
// package workspace): git runs on that machine's host.
var (
	statusOp = workspace.NewOp("git.status", func(ctx context.Context, env workspace.Env, p project.Project, _ StatusInput) (StatusOutput, error) {
		st, _, err := gitrepo.ReadStatus(ctx, env.Host, p.Root)
		return st, err
	})
	diffOp = workspace.NewOp("git.diff", diff)
)

// Ops returns the git operations, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{statusOp, diffOp} }

// Register adds git_status and git_diff to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[StatusInput, StatusOutput]{
		Runners: true,
		Name:    "git_status",
		Description: "The project's git state: branch, HEAD, ahead/behind and " +
			"up to 500 changed, untracked or conflicted paths.",
		Category:    "git",
		Scopes:      []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionOptional,
		Handler:     t.gitStatus,
	})
	kernel.Register(reg, kernel.Spec[DiffInput, DiffOutput]{
		Runners: true,
		Name:    "git_diff",
		Description: "Unstaged (or staged) changes as parsed hunks, optionally for up to 32 paths; " +
			"hunk text is bounded by max_bytes and untracked paths are listed apart.",
		Category:    "git",
		Scopes:      []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionOptional,
		Handler:     t.gitDiff,
	})
}

// StatusInput is the input of git_status.
type StatusInput struct {
	kernel.ProjectRef
	kernel.SessionRef
}

// StatusOutput is the output of git_status: gitrepo's status.
type StatusOutput = gitrepo.Status

// StatusEntry is one path of git_status.
type StatusEntry = gitrepo.Entry

// DiffInput is the input of git_diff.
type DiffInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Paths        []string `json:"paths,omitempty" jsonschema:"up to 32 files or directories to diff"`
	Staged       bool     `json:"staged,omitempty" jsonschema:"diff the index against HEAD"`
	ContextLines *int     `json:"context_lines,omitempty" jsonschema:"context lines around changes, 0-10 (default 3)"`
	MaxBytes     *int     `json:"max_bytes,omitempty" jsonschema:"bound on returned hunk text, 1-524288 (default 65536)"`
}

// DiffOutput is the output of git_diff.
type DiffOutput struct {
	Staged       bool       `json:"staged"`
	ContextLines int        `json:"context_lines"`
	Files        []DiffFile `json:"files"`
	// TotalFiles counts every changed file, including those beyond
	// MaxDiffFiles; it is a lower bound only when git's file listing
	// itself exceeded MaxDiffListBytes (Truncated is then set).
	TotalFiles int `json:"total_files"`
	Additions  int `json:"additions"`
	Deletions  int `json:"deletions"`
	// Truncated says some hunk text or some files were left out.
	Truncated bool `json:"truncated"`
	// Untracked lists untracked paths (directories end in /), at most
	// MaxUntracked.
	Untracked          []string `json:"untracked"`
	UntrackedTotal     int      `json:"untracked_total"`
	UntrackedTruncated bool     `json:"untracked_truncated"`
}

// DiffFile is one changed file of git_diff.
type DiffFile struct {
	Path      string `json:"path"`
	OldPath   string `json:"old_path,omitempty"`
	Status    string `json:"status" jsonschema:"added, deleted, modified, renamed, copied, type_changed or unmerged"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary"`
	Hunks     []Hunk `json:"hunks"`
	// HunksTruncated says some of this file's hunk text was left out.
	HunksTruncated bool `json:"hunks_truncated,omitempty"`
}

// Hunk is one hunk of a file's diff.
type Hunk struct {
	Header   string `json:"header"`
	OldStart int    `json:"old_start"`
	OldLines int    `json:"old_lines"`
	NewStart int    `json:"new_start"`
	NewLines int    `json:"new_lines"`
	// Lines is the hunk body: each line starts with ' ', '+', '-' or '\'
	// (several such columns in a combined diff of a conflict).
	Lines string `json:"lines"`
	// Truncated says Lines was cut at a line boundary.
	Truncated bool `json:"truncated,omitempty"`
}
