// Package edit provides the fenced file-writing tools apply_text_edits and
// write_project_file.
//
// # Contract
//
// Every change to an existing file is fenced: the caller names the bytes it
// last read with a read revision (filerev.Of) or a full SHA-256, and the
// change applies only when the file still holds exactly those bytes.
// apply_text_edits is all-or-nothing: every change of a call is planned in
// memory and checked first; a conflict or invalid argument writes nothing.
// Files are replaced atomically (a temporary file in the same directory,
// fsync, rename, fsync of the directory) and keep their permission bits.
// Every directory creation, staging file, rename and removal goes through
// the call's handle on the project root ([project.Tree]); the staging file
// is created, renamed and cleaned up through one handle on the target's
// directory, so it never lands, or is left, outside the project.
//
// Calls that touch the same file serialize on a per-path lock held from the
// fence check to the last write, so of two calls fenced by the same revision
// exactly one succeeds and the other fails with the edit_conflict kind and
// conflict_kind sha256_mismatch.
//
// # Path policy
//
// Paths go through the path policy (project.Tree.ResolveEntry). In addition these tools refuse
// (permission_denied) any path with a ".git" component, so that repository
// metadata (hooks, config, filters) cannot be rewritten through them, and
// refuse (invalid_arguments) a path whose last component is a symbolic link,
// because an atomic rename would replace the link rather than its target.
//
// # Failure detail
//
// An edit_conflict failure carries the detail keys conflict_kind (one of
// the Conflict* constants), change_index, path and, when useful, reason
// (one of the Reason* constants), edit_index, match_count and
// candidate_lines (at most MaxCandidateLines 1-based line numbers).
package edit

import (
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Bounds. Each is enforced before any file is written.
const (
	// MaxChanges bounds the file changes of one apply_text_edits call.
	MaxChanges = 16
	// MaxEditsPerChange bounds the edits of one replace change.
	MaxEditsPerChange = 64
	// MaxFileBytes bounds the size of a file these tools read or produce.
	MaxFileBytes = 8 << 20
	// MaxContentBytes bounds one content, old_text or new_text argument.
	MaxContentBytes = 1 << 20
	// MaxMatchCount bounds occurrence and expected_match_count.
	MaxMatchCount = 10000
	// MaxCandidateLines bounds the candidate_lines detail of a conflict.
	MaxCandidateLines = 5
	// MaxPreviewBytes bounds the dry-run preview of one file.
	MaxPreviewBytes = 4096
)

// Operations of a change.
const (
	OpReplace = "replace"
	OpCreate  = "create"
	OpDelete  = "delete"
)

// Conflict kinds: the closed set of values of the conflict_kind detail.
const (
	ConflictMultipleMatches      = "multiple_matches"
	ConflictMatchNotFound        = "match_not_found"
	ConflictOccurrenceOutOfRange = "occurrence_out_of_range"
	ConflictOverlappingEdits     = "overlapping_edits"
	ConflictSHA256Mismatch       = "sha256_mismatch"
)

// Reasons refine a sha256_mismatch conflict in the reason detail.
const (
	// ReasonFenceMismatch: the file exists but holds other bytes than the
	// fence names.
	ReasonFenceMismatch = "fence_mismatch"
	// ReasonMissing: a fenced change names a file that does not exist.
	ReasonMissing = "missing"
	// ReasonAlreadyExists: a create names a path that already exists.
	ReasonAlreadyExists = "already_exists"
	// ReasonUnfencedOverwrite: write_project_file was asked to overwrite an
	// existing file without a fence.
	ReasonUnfencedOverwrite = "unfenced_overwrite"
)

// Register adds apply_text_edits and write_project_file to reg.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	kernel.Register(reg, kernel.Spec[ApplyInput, ApplyOutput]{
		Name: "apply_text_edits",
		Description: "Apply 1-16 file changes all-or-nothing: op replace (exact old_text edits), create or delete. Replace and delete need " +
			"expected_read_revision or expected_sha256 from your last read; on any conflict nothing is written; dry_run previews.",
		Category:    "edit",
		EditSurface: kernel.EditCanonical,
		Scopes:      []auth.Scope{auth.ScopeProjectWrite},
		Annotations: kernel.Annotations{Destructive: true},
		Mutates:     true,
		Writes:      true,
		Session:     kernel.SessionOptional,
		Handler:     handler(runners, applyOp, applyEdits, func(in ApplyInput) bool { return in.DryRun }),
		Runners:     true,
		// Plans and stages its files while tool_call_started commits.
		PreparesBeforeEffect: true,
	})
	kernel.Register(reg, kernel.Spec[WriteInput, WriteOutput]{
		Name: "write_project_file",
		Description: "Write a whole file, creating it and its directories if absent; overwriting " +
			"needs expected_read_revision or expected_sha256 of the current file.",
		Category:    "edit",
		EditSurface: kernel.EditAdvanced,
		Scopes:      []auth.Scope{auth.ScopeProjectWrite},
		Annotations: kernel.Annotations{Destructive: true},
		Mutates:     true,
		Writes:      true,
		Session:     kernel.SessionOptional,
		Handler:     handler(runners, writeOp, writeFile, func(WriteInput) bool { return false }),
		Runners:     true,
		// Plans and stages its files while tool_call_started commits.
		PreparesBeforeEffect: true,
	})
}

// ApplyInput is the input of apply_text_edits.
type ApplyInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Changes []Change `json:"changes" jsonschema:"1-16 file changes, all-or-nothing; each path at most once"`
	DryRun  bool     `json:"dry_run,omitempty" jsonschema:"plan and preview only; write nothing"`
}

// Change is one file change of apply_text_edits.
type Change struct {
	Path                 string     `json:"path" jsonschema:"project-relative path"`
	Op                   string     `json:"op" jsonschema:"replace, create or delete"`
	ExpectedReadRevision string     `json:"expected_read_revision,omitempty" jsonschema:"read_revision of your last read; replace and delete need it or expected_sha256"`
	ExpectedSHA256       string     `json:"expected_sha256,omitempty" jsonschema:"full hex SHA-256 of the file as last read"`
	Edits                []TextEdit `json:"edits,omitempty" jsonschema:"replace only: 1-64 exact, non-overlapping text edits"`
	Content              *string    `json:"content,omitempty" jsonschema:"create only: the whole content of the new file"`
}

// TextEdit replaces exact occurrences of OldText with NewText.
//
// Without Occurrence or ExpectedMatchCount, OldText must match exactly once.
// With Occurrence n, the n-th non-overlapping match is replaced. With
// ExpectedMatchCount c (and no Occurrence), the file must hold exactly c
// matches and all are replaced.
type TextEdit struct {
	OldText            string `json:"old_text" jsonschema:"exact, non-empty text to find"`
	NewText            string `json:"new_text" jsonschema:"replacement text"`
	Occurrence         *int   `json:"occurrence,omitempty" jsonschema:"1-based index of the match to replace"`
	ExpectedMatchCount *int   `json:"expected_match_count,omitempty" jsonschema:"matches the file must hold; without occurrence all are replaced"`
}

// ApplyOutput is the output of apply_text_edits.
type ApplyOutput struct {
	DryRun bool         `json:"dry_run"`
	Files  []FileResult `json:"files"`
	// ChangedPaths lists the paths whose bytes were (or, in a dry run,
	// would be) changed, in change order.
	ChangedPaths []string `json:"changed_paths"`
}

// FileResult describes one planned or applied change.
type FileResult struct {
	Path string `json:"path"`
	Op   string `json:"op"`
	// Changed is false when the change leaves the file's bytes as they
	// were; such a file is not rewritten.
	Changed              bool   `json:"changed"`
	PreviousReadRevision string `json:"previous_read_revision,omitempty" jsonschema:"read revision before the change; empty for create"`
	ReadRevision         string `json:"read_revision,omitempty" jsonschema:"read revision after the change; empty for delete"`
	SHA256               string `json:"sha256,omitempty" jsonschema:"SHA-256 after the change; empty for delete"`
	Bytes                int    `json:"bytes" jsonschema:"size after the change"`
	Replacements         int    `json:"replacements,omitempty"`
	AddedLines           int    `json:"added_lines"`
	RemovedLines         int    `json:"removed_lines"`
	Preview              string `json:"preview,omitempty" jsonschema:"dry run only: diff-like preview without context lines"`
	PreviewTruncated     bool   `json:"preview_truncated,omitempty"`
}

// WriteInput is the input of write_project_file.
type WriteInput struct {
	kernel.ProjectRef
	kernel.SessionRef
	Path                 string `json:"path" jsonschema:"project-relative path"`
	Content              string `json:"content" jsonschema:"the whole new content"`
	ExpectedReadRevision string `json:"expected_read_revision,omitempty" jsonschema:"read_revision of the file to overwrite (or give expected_sha256)"`
	ExpectedSHA256       string `json:"expected_sha256,omitempty" jsonschema:"full hex SHA-256 of the existing file"`
}

// WriteOutput is the output of write_project_file.
type WriteOutput struct {
	Path string `json:"path"`
	// Created is true when the file did not exist before.
	Created bool `json:"created"`
	// Changed is false when the file already held exactly Content; it is
	// then not rewritten.
	Changed      bool   `json:"changed"`
	ReadRevision string `json:"read_revision"`
	SHA256       string `json:"sha256"`
	Bytes        int    `json:"bytes"`
}
