// Package git provides the read-only git tools git_status and git_diff.
//
// # Contract
//
// The tools run the git binary found on the server's PATH with a fixed
// argv (no shell), in the project root, with a scrubbed environment (PATH,
// HOME, LANG=C, LC_ALL=C, GIT_TERMINAL_PROMPT=0, GIT_OPTIONAL_LOCKS=0,
// GIT_LITERAL_PATHSPECS=1, GIT_PAGER=cat; nothing else of the server's
// environment), under GitTimeout and with every output bounded. They never
// take optional locks or write the repository (git_diff gives git a private
// copy of the index, which porcelain diff would otherwise refresh in
// place), never run external diff or textconv drivers and disable
// fsmonitor hooks. Paths are reported relative to the
// project root, also when the project is a subdirectory of a larger
// repository (changes outside the project are then not reported).
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
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
)

// Bounds.
const (
	// GitTimeout bounds one git tool call (all of its git processes).
	GitTimeout = 30 * time.Second
	// MaxStatusEntries bounds the entries of git_status.
	MaxStatusEntries = 500
	// MaxStatusOutputBytes bounds the raw output read from git status.
	MaxStatusOutputBytes = 4 << 20
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
	MaxIndexCopyBytes = 64 << 20
	// MaxStderrBytes bounds the git diagnostics kept for an error message.
	MaxStderrBytes = 4096
)

// Status entry kinds.
const (
	KindModified   = "modified"
	KindAdded      = "added"
	KindDeleted    = "deleted"
	KindRenamed    = "renamed"
	KindUntracked  = "untracked"
	KindConflicted = "conflicted"
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

// Register adds git_status and git_diff to reg.
func Register(reg *kernel.Registry) {
	kernel.Register(reg, kernel.Spec[StatusInput, StatusOutput]{
		Name: "git_status",
		Description: "Report the git state of the project: branch, HEAD, upstream with ahead/behind, and up to 500 " +
			"changed, untracked or conflicted paths. A project outside git reports is_git_repo=false.",
		Category:    "git",
		Scopes:      []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionOptional,
		Handler:     gitStatus,
	})
	kernel.Register(reg, kernel.Spec[DiffInput, DiffOutput]{
		Name: "git_diff",
		Description: "Show the unstaged (or, with staged=true, the staged) changes of the project as parsed hunks, " +
			"optionally limited to up to 32 paths. Hunk text is bounded by max_bytes (default 64 KiB, at most " +
			"512 KiB); the file list and line counts stay complete up to 500 files. Untracked paths are listed separately.",
		Category:    "git",
		Scopes:      []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Session:     kernel.SessionOptional,
		Handler:     gitDiff,
	})
}

// StatusInput is the input of git_status.
type StatusInput struct {
	kernel.ProjectRef
	kernel.SessionRef
}

// StatusOutput is the output of git_status.
type StatusOutput struct {
	IsGitRepo bool `json:"is_git_repo"`
	// Branch is the checked-out branch; empty when HEAD is detached.
	Branch   string `json:"branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	// Head is the commit HEAD names; empty before the first commit.
	Head     string `json:"head,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Ahead    int    `json:"ahead"`
	Behind   int    `json:"behind"`
	// Entries holds at most MaxStatusEntries entries in git's order.
	Entries []StatusEntry `json:"entries"`
	// Total counts every entry read; Truncated says Entries (or git's
	// output, in which case Total is a lower bound) was cut.
	Total      int  `json:"total"`
	Truncated  bool `json:"truncated"`
	Clean      bool `json:"clean" jsonschema:"true when nothing is modified, staged, untracked or conflicted"`
	Conflicted int  `json:"conflicted"`
}

// StatusEntry is one path of git_status.
type StatusEntry struct {
	Path    string `json:"path" jsonschema:"project-relative; untracked directories end in /"`
	OldPath string `json:"old_path,omitempty" jsonschema:"source path of a rename or copy"`
	// IndexStatus and WorktreeStatus are git's X and Y status letters
	// ("." for unchanged, "?" for untracked).
	IndexStatus    string `json:"index_status"`
	WorktreeStatus string `json:"worktree_status"`
	Kind           string `json:"kind" jsonschema:"modified, added, deleted, renamed, untracked or conflicted"`
}

// DiffInput is the input of git_diff.
type DiffInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Paths        []string `json:"paths,omitempty" jsonschema:"up to 32 project-relative paths (files or directories) to limit the diff to"`
	Staged       bool     `json:"staged,omitempty" jsonschema:"diff the index against HEAD instead of the work tree against the index"`
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
