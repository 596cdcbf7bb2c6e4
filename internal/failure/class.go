package failure

// Failure kinds (the ToolResult's output.failure_kind): the coarse class a
// model acts on, one per Kind.
const (
	ClassInvalidArguments      = "invalid_arguments"
	ClassPermissionDenied      = "permission_denied"
	ClassStalePrecondition     = "stale_precondition"
	ClassOutcomeUnknown        = "outcome_unknown"
	ClassNotStarted            = "not_started"
	ClassCapabilityUnavailable = "capability_unavailable"
	ClassCommandFailed         = "command_failed"
	ClassValidationFailed      = "validation_failed"
	ClassEvidenceGap           = "evidence_gap"
	ClassTimeout               = "timeout"
	ClassResetRequired         = "reset_required"
	ClassOperationFailed       = "operation_failed"
)

// Recovery kinds (output.recovery_kind): what the caller should do next.
const (
	RecoverFixInput          = "fix_input"
	RecoverRequestPermission = "request_permission"
	RecoverRereadAndRetry    = "reread_and_retry"
	RecoverInspectState      = "inspect_state"
	RecoverRetryLater        = "retry_later"
	RecoverInspectOutput     = "inspect_output"
	RecoverRerun             = "rerun_with_complete_output"
	RecoverReopenShell       = "reopen_shell"
	RecoverInspectError      = "inspect_error"
	// RecoverRetrySame: repeat the same call with the same idempotency
	// key; it either replays the durable result or runs once.
	RecoverRetrySame = "retry_same"
)

// Class is how one Kind is presented everywhere: the failure_kind and
// recovery_kind of a failed ToolResult, and the HTTP status of a request
// that fails outside a tool result (a ToolResult itself is always HTTP
// 200).
type Class struct {
	FailureKind  string
	RecoveryKind string
	HTTPStatus   int
}

// HTTP statuses of the table (the net/http values, kept here so that this
// package imports no transport).
const (
	statusBadRequest  = 400
	statusUnauth      = 401
	statusForbidden   = 403
	statusNotFound    = 404
	statusConflict    = 409
	statusTooLarge    = 413
	statusTooMany     = 429
	statusInternal    = 500
	statusUnavailable = 503
)

// classes is the one table of presentation: every Kind has a row (a test
// checks it), so a new kind cannot be added without deciding its class.
var classes = map[Kind]Class{
	Internal:                 {ClassOperationFailed, RecoverInspectError, statusInternal},
	InvalidArguments:         {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	UnknownTool:              {ClassInvalidArguments, RecoverFixInput, statusNotFound},
	Unauthenticated:          {ClassPermissionDenied, RecoverRequestPermission, statusUnauth},
	InsufficientScope:        {ClassPermissionDenied, RecoverRequestPermission, statusForbidden},
	PermissionDenied:         {ClassPermissionDenied, RecoverRequestPermission, statusForbidden},
	NotFound:                 {ClassNotStarted, RecoverFixInput, statusNotFound},
	RequestTooLarge:          {ClassInvalidArguments, RecoverFixInput, statusTooLarge},
	UnknownProject:           {ClassInvalidArguments, RecoverFixInput, statusNotFound},
	UnknownSessionID:         {ClassNotStarted, RecoverFixInput, statusNotFound},
	InvalidSessionID:         {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	SessionClosed:            {ClassNotStarted, RecoverFixInput, statusConflict},
	SessionGuardDenied:       {ClassPermissionDenied, RecoverRequestPermission, statusForbidden},
	SessionProjectMismatch:   {ClassNotStarted, RecoverFixInput, statusConflict},
	SessionAuthorityDenied:   {ClassPermissionDenied, RecoverRequestPermission, statusForbidden},
	InvalidExecutionContext:  {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	InvalidCodingInstruction: {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	EditConflict:             {ClassStalePrecondition, RecoverRereadAndRetry, statusConflict},
	StalePrecondition:        {ClassStalePrecondition, RecoverRereadAndRetry, statusConflict},
	OutcomeUnknown:           {ClassOutcomeUnknown, RecoverInspectState, statusInternal},
	Unavailable:              {ClassCapabilityUnavailable, RecoverRetryLater, statusUnavailable},
	Conflict:                 {ClassStalePrecondition, RecoverRereadAndRetry, statusConflict},
	Interrupted:              {ClassOutcomeUnknown, RecoverInspectState, statusUnavailable},
	Cancelled:                {ClassOutcomeUnknown, RecoverInspectState, statusInternal},
	OperationFailed:          {ClassOperationFailed, RecoverInspectError, statusInternal},
	NotStarted:               {ClassNotStarted, RecoverFixInput, statusConflict},
	CommandFailed:            {ClassCommandFailed, RecoverInspectOutput, statusInternal},
	TimedOut:                 {ClassTimeout, RecoverInspectOutput, statusInternal},
	ShellBusy:                {ClassCapabilityUnavailable, RecoverRetryLater, statusConflict},
	ShellResetRequired:       {ClassResetRequired, RecoverReopenShell, statusConflict},
	ShellClosed:              {ClassResetRequired, RecoverReopenShell, statusConflict},
	ValidationFailed:         {ClassValidationFailed, RecoverInspectOutput, statusInternal},
	EvidenceGap:              {ClassEvidenceGap, RecoverRerun, statusInternal},
	InvalidLedger:            {ClassOperationFailed, RecoverInspectError, statusBadRequest},
	JobNotFound:              {ClassNotStarted, RecoverFixInput, statusNotFound},
	JobAuthorityDenied:       {ClassPermissionDenied, RecoverRequestPermission, statusForbidden},
	JobProjectMismatch:       {ClassNotStarted, RecoverFixInput, statusConflict},
	QueueFull:                {ClassCapabilityUnavailable, RecoverRetryLater, statusTooMany},
	TooManyRequests:          {ClassCapabilityUnavailable, RecoverRetryLater, statusTooMany},
	// Message board.
	IdempotencyConflict:            {ClassInvalidArguments, RecoverFixInput, statusConflict},
	AlreadyCompleted:               {ClassStalePrecondition, RecoverInspectState, statusConflict},
	InvalidAssignmentFence:         {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	SessionMessageNotTodo:          {ClassInvalidArguments, RecoverFixInput, statusConflict},
	UnknownMessageID:               {ClassNotStarted, RecoverFixInput, statusNotFound},
	CompletionPersistenceUncertain: {ClassOutcomeUnknown, RecoverRetrySame, statusInternal},
	InvalidObservationToken:        {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	// Window plane.
	UnknownRecipient:        {ClassNotStarted, RecoverFixInput, statusNotFound},
	ClientWindowUnavailable: {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	// Not retryable: the build serves no other profile.
	GuidanceProfileUnavailable: {ClassCapabilityUnavailable, RecoverFixInput, statusBadRequest},
	// Revisions and Goals.
	RevisionConflict: {ClassStalePrecondition, RecoverRereadAndRetry, statusConflict},
	UnknownGoalID:    {ClassNotStarted, RecoverFixInput, statusNotFound},
	GoalLimitReached: {ClassNotStarted, RecoverInspectState, statusConflict},
	// Managed worktrees.
	UnknownRef:      {ClassInvalidArguments, RecoverFixInput, statusNotFound},
	NotAGitCheckout: {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	WorktreeExists:  {ClassNotStarted, RecoverInspectState, statusConflict},
	BaseRefMismatch: {ClassInvalidArguments, RecoverFixInput, statusConflict},
	NotAWorktree:    {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	ProjectInUse:    {ClassNotStarted, RecoverInspectState, statusConflict},
	// Server-run git confined to its project.
	GitDirOutsideProject: {ClassPermissionDenied, RecoverFixInput, statusForbidden},
	// Project Memory.
	InvalidRevision: {ClassInvalidArguments, RecoverFixInput, statusBadRequest},
	UnknownMemory:   {ClassNotStarted, RecoverFixInput, statusNotFound},
	MemoryScopeFull: {ClassNotStarted, RecoverFixInput, statusConflict},
	// Runners.
	RunnerUnavailable:  {ClassNotStarted, RecoverRetryLater, statusUnavailable},
	ResourceNotAllowed: {ClassNotStarted, RecoverFixInput, statusBadRequest},
	// Code navigation.
	LanguageServerUnavailable: {ClassCapabilityUnavailable, RecoverFixInput, statusUnavailable},
	// MCP providers: describe, then call at the revision it returned.
	DescribeRequired:    {ClassStalePrecondition, RecoverRereadAndRetry, statusConflict},
	UnknownMCPProvider:  {ClassInvalidArguments, RecoverFixInput, statusNotFound},
	UnknownProviderTool: {ClassInvalidArguments, RecoverFixInput, statusNotFound},
}

// ClassOf returns the presentation of k. A kind without a row (only
// possible for a value that is not one of Kinds) is presented as Internal.
func ClassOf(k Kind) Class {
	if c, ok := classes[k]; ok {
		return c
	}
	return classes[Internal]
}
