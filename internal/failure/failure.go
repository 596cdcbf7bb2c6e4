// Package failure defines the stable error kinds that every layer of WebCodex
// returns and every transport maps exactly once.
//
// A Kind is API: kinds are added, never renamed or removed. Domains return
// *Error values; low-level packages may return their own sentinels, which the
// domain wraps. KindOf folds anything that is not an *Error into Internal so
// that no foreign error text reaches a caller as a stable kind.
package failure

import (
	"errors"
	"fmt"
)

// Kind is a stable snake_case error identifier.
type Kind string

// The stable error kinds. Their string values are wire contracts.
const (
	Internal                 Kind = "internal"
	InvalidArguments         Kind = "invalid_arguments"
	UnknownTool              Kind = "unknown_tool"
	Unauthenticated          Kind = "unauthenticated"
	InsufficientScope        Kind = "insufficient_scope"
	PermissionDenied         Kind = "permission_denied"
	NotFound                 Kind = "not_found"
	RequestTooLarge          Kind = "request_too_large"
	UnknownProject           Kind = "unknown_project"
	UnknownSessionID         Kind = "unknown_session_id"
	InvalidSessionID         Kind = "invalid_session_id"
	SessionClosed            Kind = "session_closed"
	SessionGuardDenied       Kind = "session_guard_denied"
	SessionProjectMismatch   Kind = "session_project_mismatch"
	SessionAuthorityDenied   Kind = "session_authority_denied"
	InvalidExecutionContext  Kind = "invalid_execution_context"
	InvalidCodingInstruction Kind = "invalid_coding_instruction"
	EditConflict             Kind = "edit_conflict"
	StalePrecondition        Kind = "stale_precondition"
	OutcomeUnknown           Kind = "outcome_unknown"
	Unavailable              Kind = "unavailable"
	Conflict                 Kind = "conflict"
	Interrupted              Kind = "interrupted"
	Cancelled                Kind = "cancelled"
	OperationFailed          Kind = "operation_failed"
	NotStarted               Kind = "not_started"
	CommandFailed            Kind = "command_failed"
	TimedOut                 Kind = "timed_out"
	ShellBusy                Kind = "shell_busy"
	ShellResetRequired       Kind = "shell_reset_required"
	ShellClosed              Kind = "shell_closed"
	ValidationFailed         Kind = "validation_failed"
	EvidenceGap              Kind = "evidence_gap"
	InvalidLedger            Kind = "invalid_ledger"
	JobNotFound              Kind = "job_not_found"
	JobAuthorityDenied       Kind = "job_authority_denied"
	JobProjectMismatch       Kind = "job_project_mismatch"
	QueueFull                Kind = "queue_full"
	TooManyRequests          Kind = "too_many_requests"
	// Message board (Workflow Session-local messages and assignments).
	IdempotencyConflict            Kind = "idempotency_conflict"
	AlreadyCompleted               Kind = "already_completed"
	InvalidAssignmentFence         Kind = "invalid_assignment_fence"
	SessionMessageNotTodo          Kind = "session_message_not_todo"
	UnknownMessageID               Kind = "unknown_message_id"
	CompletionPersistenceUncertain Kind = "completion_persistence_uncertain"
	InvalidObservationToken        Kind = "invalid_observation_token"
	// Window plane (Window Peers).
	UnknownRecipient        Kind = "unknown_recipient"
	ClientWindowUnavailable Kind = "client_window_unavailable"
	// A presentation profile the spec names that this server does not
	// serve (work_on_project guidance_profile code_mode).
	GuidanceProfileUnavailable Kind = "guidance_profile_unavailable"
	// Compare-and-swap revisions (Goals, Project Memory): a stale
	// expected_revision; the detail carries current_revision.
	RevisionConflict Kind = "revision_conflict"
	// An expected_revision that is not a revision this server issues.
	InvalidRevision Kind = "invalid_revision"
	// Goals.
	UnknownGoalID    Kind = "unknown_goal_id"
	GoalLimitReached Kind = "goal_limit_reached"
	// Managed worktrees (work_on_project mode=worktree).
	UnknownRef      Kind = "unknown_ref"
	NotAGitCheckout Kind = "not_a_git_checkout"
	WorktreeExists  Kind = "worktree_exists"
	BaseRefMismatch Kind = "base_ref_mismatch"
	NotAWorktree    Kind = "not_a_worktree"
	ProjectInUse    Kind = "project_in_use"
	// A source project whose git directory (a .git file, a symlink or a
	// commondir) resolves outside its root: the server runs no git that
	// writes there.
	GitDirOutsideProject Kind = "git_dir_outside_project"
	// Project Memory.
	UnknownMemory   Kind = "unknown_memory"
	MemoryScopeFull Kind = "memory_scope_full"
	// Runners: the runner serving a project is not connected (nothing
	// was sent to it), and a resource the call may not use.
	RunnerUnavailable  Kind = "runner_unavailable"
	ResourceNotAllowed Kind = "resource_not_allowed"
	// Code navigation: no language server for the file's language is
	// installed where the project's files are; the message names the
	// server to install and nothing was started.
	LanguageServerUnavailable Kind = "language_server_unavailable"
	// MCP providers (mcp_tool): a call that does not name the schema
	// revision its tool was described at (none, or an old one) calls
	// nothing; a provider not configured where the project's files are;
	// a tool name not in the provider's list.
	DescribeRequired    Kind = "describe_required"
	UnknownMCPProvider  Kind = "unknown_mcp_provider"
	UnknownProviderTool Kind = "unknown_provider_tool"
)

// Kinds lists every kind defined in this package, for documentation and the
// transport mapping tests.
var Kinds = []Kind{
	Internal, InvalidArguments, UnknownTool, Unauthenticated, InsufficientScope,
	PermissionDenied, NotFound, RequestTooLarge, UnknownProject, UnknownSessionID,
	InvalidSessionID, SessionClosed, SessionGuardDenied, SessionProjectMismatch,
	SessionAuthorityDenied, InvalidExecutionContext, InvalidCodingInstruction,
	EditConflict, StalePrecondition, OutcomeUnknown, Unavailable, Conflict,
	Interrupted, Cancelled, OperationFailed, InvalidLedger,
	NotStarted, CommandFailed, TimedOut, ShellBusy, ShellResetRequired, ShellClosed,
	ValidationFailed, EvidenceGap,
	JobNotFound, JobAuthorityDenied, JobProjectMismatch,
	QueueFull, TooManyRequests,
	IdempotencyConflict, AlreadyCompleted, InvalidAssignmentFence,
	SessionMessageNotTodo, UnknownMessageID, CompletionPersistenceUncertain,
	InvalidObservationToken,
	UnknownRecipient, ClientWindowUnavailable, GuidanceProfileUnavailable,
	RevisionConflict, UnknownGoalID, GoalLimitReached,
	UnknownRef, NotAGitCheckout, WorktreeExists, BaseRefMismatch, NotAWorktree, ProjectInUse,
	GitDirOutsideProject,
	InvalidRevision, UnknownMemory, MemoryScopeFull,
	RunnerUnavailable, ResourceNotAllowed,
	LanguageServerUnavailable,
	DescribeRequired, UnknownMCPProvider, UnknownProviderTool,
}

// Error is a failure with a stable kind, a human message and optional
// structured detail that transports place in the ToolResult output.
type Error struct {
	Kind    Kind
	Message string
	// Detail holds bounded, non-secret structured facts about the failure
	// (for example the conflict kind of an edit). It may be nil.
	Detail map[string]any
	// Err is an optional wrapped cause; it is never shown to callers.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of kind k whose cause is err.
func Wrap(k Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...), Err: err}
}

// WithDetail returns e after setting detail key to value.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Detail == nil {
		e.Detail = map[string]any{}
	}
	e.Detail[key] = value
	return e
}

// KindOf returns the kind of err: the kind of the first *Error in its chain,
// or Internal for any other non-nil error, or "" for nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return Internal
}

// MessageOf returns the caller-safe message of err. Errors that are not
// *Error values are reported as "internal error" so that their text, which
// may contain paths or driver detail, never reaches a caller.
func MessageOf(err error) string {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	if err == nil {
		return ""
	}
	return "internal error"
}

// DetailOf returns the structured detail of the first *Error in err's chain.
func DetailOf(err error) map[string]any {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Detail
	}
	return nil
}

// Is reports whether err carries kind k.
func Is(err error, k Kind) bool { return KindOf(err) == k }
