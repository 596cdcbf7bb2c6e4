// Package audit is the Action Audit Session domain: it groups audited
// HTTP/API calls (REST, MCP, operator routes) into audit sessions, sanitizes
// each event at write time so that no secret, command body or output ever
// reaches disk, keeps per-session counters, and aggregates bounded stats for
// the operator audit API.
//
// Action Audit Sessions are not Workflow Sessions: their ids are UUIDs or
// client-supplied strings (never wc_sess_*), they live in their own database
// file (audit.db) or PostgreSQL schema (audit), and nothing here reads or
// drives workflow state.
//
// # Limits
//
// Every list-style call clamps its limit the same way (see [ClampLimit]):
// 0 means the documented default, a value above the maximum is cut to the
// maximum, and a negative value is rejected with failure.InvalidArguments.
package audit

import (
	"context"
	"time"
)

// Bounds. Each is part of the documented contract (DESIGN.md §5).
const (
	// IdleReuse is ACTION_SESSION_IDLE_TIMEOUT_SECS: a request without an
	// explicit audit id reuses the most recent open session whose last
	// activity is strictly less than this long ago.
	IdleReuse = 1800 * time.Second
	// MaxSessionIDChars bounds an explicit (client-supplied) audit id.
	MaxSessionIDChars = 120

	DefaultSessionsLimit = 50 // POST /api/audit/sessions
	MaxSessionsLimit     = 200
	DefaultEventsLimit   = 50 // POST /api/audit/session events_limit
	MaxEventsLimit       = 200
	DefaultStatsSessions = 20 // POST /api/audit/stats limit (sessions)
	MaxStatsSessions     = 50
	// MaxStatsEventsOneSession caps the events scanned when stats target
	// one session; MaxStatsEventsPerSession caps each session otherwise.
	MaxStatsEventsOneSession = 500
	MaxStatsEventsPerSession = 200

	// MaxEventsPerSession is the most events a session retains; older ones
	// are trimmed while the session counters stay cumulative. The store
	// trims in batches: an append past this bound deletes the session's
	// oldest down to an eighth below it (auditrow.TrimSlack, decision
	// 0041).
	MaxEventsPerSession = 500

	MaxSummaryTextChars = 500  // error_summary, warning_summary
	MaxFieldChars       = 200  // endpoint, operation, action_name, project, attribution, ids values
	MaxStringChars      = 1000 // any string left in summary
	MaxChangedFiles     = 100  // changed_files entries per event
	MaxPathChars        = 512  // one changed_files entry
	MaxIDs              = 32   // ids entries per event
	MaxSummaryKeys      = 64   // keys per summary object
	MaxSummaryItems     = 64   // items per summary array
	MaxSummaryDepth     = 8    // nesting depth of summary
	MaxFirstLinePreview = 80   // command digest first_line_preview
	TruncatedMarker     = "[TRUNCATED]"
	RedactedMarker      = "[REDACTED]"
)

// Status is an audit session's lifecycle state.
type Status string

const (
	StatusOpen   Status = "open"
	StatusClosed Status = "closed"
)

// Event statuses counted by the session counters. Other values are stored
// as given and counted in total_actions only.
const (
	EventSuccess          = "success"
	EventFailed           = "failed"
	EventTimeoutOrUnknown = "timeout_or_unknown"
	EventWarning          = "warning"
)

// Session is ActionSessionRecord. Times are unix seconds.
type Session struct {
	SessionID             string `json:"session_id"`
	Title                 string `json:"title"`
	Note                  string `json:"note"`
	Status                Status `json:"status"`
	CreatedAt             int64  `json:"created_at"`
	UpdatedAt             int64  `json:"updated_at"`
	ClosedAt              *int64 `json:"closed_at"`
	FirstEventAt          *int64 `json:"first_event_at"`
	LastEventAt           *int64 `json:"last_event_at"`
	TotalActions          int64  `json:"total_actions"`
	SuccessCount          int64  `json:"success_count"`
	FailedCount           int64  `json:"failed_count"`
	TimeoutOrUnknownCount int64  `json:"timeout_or_unknown_count"`
	WarningCount          int64  `json:"warning_count"`
	TotalDurationMS       int64  `json:"total_duration_ms"`
	ChangedFilesCount     int64  `json:"changed_files_count"`
	JobIDsCount           int64  `json:"job_ids_count"`
}

// Attribution is the non-secret caller snapshot taken from the
// authenticated request context at write time. It is stored with the event
// and aggregated by Stats, but never part of an [EventView]. Empty fields
// are stored as NULL (legacy rows are never inferred).
type Attribution struct {
	PrincipalKind   string // api_token, agent_token, account_credential, oauth2, bootstrap, shared-key, project-credential, open
	PrincipalUserID string // optional stable user id
	OAuthClientID   string // only for oauth2
}

// EventView is the public event shape of POST /api/audit/session: the
// event without any principal/user/client attribution.
type EventView struct {
	EventID        string            `json:"event_id"`
	SessionID      string            `json:"session_id"`
	StartedAt      int64             `json:"started_at"`
	EndedAt        int64             `json:"ended_at"`
	DurationMS     int64             `json:"duration_ms"`
	Endpoint       string            `json:"endpoint"`
	Operation      string            `json:"operation"`
	ActionName     string            `json:"action_name"`
	Project        string            `json:"project"`
	Status         string            `json:"status"`
	HTTPStatus     int               `json:"http_status"`
	ErrorSummary   string            `json:"error_summary"`
	WarningSummary string            `json:"warning_summary"`
	ChangedFiles   []string          `json:"changed_files"`
	IDs            map[string]string `json:"ids"`
	Summary        map[string]any    `json:"summary"`
	RequestBytes   int64             `json:"request_bytes"`
	ResponseBytes  int64             `json:"response_bytes"`
	// RequestID is the id of the HTTP request the event records (its
	// X-Request-Id response header, log lines and trace span); "" for
	// events stored before request ids.
	RequestID string `json:"request_id,omitempty"`
}

// Event is ActionEventRecord: one audited call, as stored — the public
// fields plus the caller attribution, which is excluded from JSON on
// purpose; public views go through [Event.View]. Times are unix seconds.
type Event struct {
	EventView
	Attribution Attribution `json:"-"`
	// Window holds the window facts of an MCP tool call (zero otherwise).
	Window WindowFacts `json:"-"`
}

// View returns the public view of e. It applies the read-time pass: keys
// that look secret are dropped entirely from ids and summary.
func (e Event) View() EventView {
	files := e.ChangedFiles
	if files == nil {
		files = []string{}
	}
	ids := make(map[string]string, len(e.IDs))
	for k, v := range e.IDs {
		if !IsSecretKey(k) {
			ids[k] = v
		}
	}
	summary, _ := dropSecretKeys(e.Summary).(map[string]any)
	if summary == nil {
		summary = map[string]any{}
	}
	v := e.EventView
	v.ChangedFiles, v.IDs, v.Summary = files, ids, summary
	return v
}

// ResolveRequest asks a Store to pick or create the session for a request.
type ResolveRequest struct {
	// Principal is the caller's key (its authority fingerprint; "" for
	// an unauthenticated caller): a session belongs to the principal that
	// created it, and only that principal's requests resolve to it.
	Principal string
	// Explicit is a validated client-supplied id, or "" for idle reuse.
	Explicit string
	// Now is the current time; IdleReuse is measured from it.
	Now time.Time
	// NewID mints the id of a session created for idle reuse.
	NewID func() string
}

// Resolved is the session a Store picked for a request.
type Resolved struct {
	ID      string
	Created bool
	// UpdatedAt is the session's last activity (unix seconds) as stored.
	UpdatedAt int64
}

// StatsQuery selects what Stats scans. Limits are already clamped.
type StatsQuery struct {
	SessionID        string // "" = the newest Sessions sessions
	Sessions         int    // sessions to scan when SessionID is ""
	EventsPerSession int    // newest events scanned per session
}

// OAuthClientUsage is one by_oauth_client entry. Name is filled by
// Service.Stats from its ClientNames lookup (the audit store knows only
// the id); empty when there is none or it does not know the client.
type OAuthClientUsage struct {
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Count    int64  `json:"count"`
}

// AttributionStats aggregates caller attribution over the scanned events.
type AttributionStats struct {
	ByPrincipalKind   map[string]int64   `json:"by_principal_kind"`
	AttributedCount   int64              `json:"attributed_count"`
	UnattributedCount int64              `json:"unattributed_count"`
	ByOAuthClient     []OAuthClientUsage `json:"by_oauth_client"`
}

// Stats is the POST /api/audit/stats aggregate with its coverage.
//
// Coverage: SessionsScanned sessions were read (SessionsAvailable exist in
// scope); EventsScanned of EventsAvailable retained events in those
// sessions were read; TruncatedSessions counts sessions whose events were
// cut by the per-session cap. Truncated is true when any session's events
// were cut; Partial is true when anything in scope (events or sessions)
// was not scanned.
type Stats struct {
	ByEndpoint map[string]int64 `json:"by_endpoint"`
	ByProject  map[string]int64 `json:"by_project"`
	ByStatus   map[string]int64 `json:"by_status"`
	// ByCategory counts model tool calls by tool category and other
	// events by operation.
	ByCategory                map[string]int64 `json:"by_category"`
	Attribution               AttributionStats `json:"attribution"`
	ChangedFilesDistinctCount int64            `json:"changed_files_distinct_count"`
	JobIDsDistinctCount       int64            `json:"job_ids_distinct_count"`
	EventsScanned             int64            `json:"events_scanned"`
	EventsAvailable           int64            `json:"events_available"`
	SessionsScanned           int64            `json:"sessions_scanned"`
	SessionsAvailable         int64            `json:"sessions_available"`
	TruncatedSessions         int64            `json:"truncated_sessions"`
	Partial                   bool             `json:"partial"`
	Truncated                 bool             `json:"truncated"`
}

// Store persists audit sessions and events. Implementations must run
// Resolve's check-and-create and AppendEvents' inserts + counter updates +
// trims each inside one write transaction.
type Store interface {
	// Resolve returns the session for a request, of req.Principal's
	// sessions only: the explicit id's session (created open when the id
	// is unknown); for an explicit id of another principal's session, the
	// session req.Principal was given for that id before or a new one with
	// id req.NewID(); with no explicit id, the principal's most recent
	// open session whose last activity (updated_at) is less than IdleReuse
	// before req.Now, or a new session with id req.NewID().
	Resolve(ctx context.Context, req ResolveRequest) (Resolved, error)
	// AppendEvents stores already sanitized events in one transaction
	// (all or none), creating missing sessions, updating the session
	// counters and keeping the newest events of each session: all of them
	// up to maxEvents, never more; an append past it trims the session to
	// its newest maxEvents less a slack (auditrow.TrimSlack, decision 0041).
	AppendEvents(ctx context.Context, evs []Event, maxEvents int, now time.Time) error
	// Ergonomics returns the newest limit summary.model_ergonomics records,
	// newest first, and how many are stored.
	Ergonomics(ctx context.Context, limit int) ([]ModelErgonomics, int64, error)
	// CloseSession marks the session closed (idempotent: an already closed
	// session is returned unchanged). Unknown id: failure.NotFound.
	CloseSession(ctx context.Context, id string, now time.Time) (Session, error)
	// ListSessions returns up to limit sessions, newest activity first;
	// status "" means any.
	ListSessions(ctx context.Context, status Status, limit int) ([]Session, error)
	// Session returns one session and its newest eventsLimit events,
	// oldest first. Unknown id: failure.NotFound.
	Session(ctx context.Context, id string, eventsLimit int) (Session, []Event, error)
	// Stats aggregates over the selected events. Read errors fail.
	Stats(ctx context.Context, q StatsQuery) (Stats, error)
	// LoopCalls returns the newest limit meaningful MCP tool calls,
	// newest first, and how many are stored.
	LoopCalls(ctx context.Context, limit int) ([]LoopCall, int64, error)
	// WindowRelations returns the relations of principal's window.
	WindowRelations(ctx context.Context, principal, window string) ([]WindowRelation, error)
	Close() error
}
