// Package auditrow is the stored form of an Action Audit event, shared by
// the SQLite store (auditdb) and the PostgreSQL store (auditpg) so that
// both keep exactly the same values and the same per-session arithmetic:
// changed_files, ids and summary as JSON text, attribution and window
// facts as NULL when empty, and one counter delta per session of a batch.
package auditrow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/failure"
)

// TrimSlack is how many events below maxEvents a trim goes (decision
// 0041): an append that takes a session past maxEvents deletes its
// oldest down to its newest maxEvents-TrimSlack(maxEvents), so one trim
// of about maxEvents/8 events replaces a trim of one event in nearly
// every append. A session therefore never holds more than maxEvents
// events, and once it has had that many it holds its newest
// maxEvents-TrimSlack to maxEvents. A bound under 8 is kept exactly.
func TrimSlack(maxEvents int) int { return maxEvents / 8 }

// EventColumns are the action_events columns an [audit.Event] is read
// from, in the order of [DecodeEvent]'s destinations.
const EventColumns = `event_id, session_id, started_at, ended_at, duration_ms, endpoint, operation, action_name, project,
	status, http_status, error_summary, warning_summary, changed_files_json, ids_json, summary_json,
	request_bytes, response_bytes, principal_kind, principal_user_id, oauth_client_id, request_id`

// InsertColumns are the action_events columns a [Row] is written to, in
// the order of [Row.Args].
const InsertColumns = `event_id, session_id, started_at, ended_at, duration_ms, endpoint, operation,
	action_name, project, status, http_status, error_summary, warning_summary, changed_files_json, ids_json,
	summary_json, request_bytes, response_bytes, principal_kind, principal_user_id, oauth_client_id,
	client_window, window_principal, meaningful, started_at_ms, ended_at_ms, request_id`

// SessionColumns are the action_sessions columns an [audit.Session] is
// read from.
const SessionColumns = `session_id, title, note, status, created_at, updated_at, closed_at, first_event_at, last_event_at,
	total_actions, success_count, failed_count, timeout_or_unknown_count, warning_count, total_duration_ms,
	changed_files_count, job_ids_count`

// Row is an event with its JSON columns encoded.
type Row struct {
	Event                   audit.Event
	Files, IDs, Summary     string
	FilesCount, JobIDsCount int
}

// Encode returns ev's stored form: a nil changed_files, ids or summary is
// stored as its empty JSON value.
func Encode(ev audit.Event) (Row, error) {
	files := ev.ChangedFiles
	if files == nil {
		files = []string{}
	}
	ids := ev.IDs
	if ids == nil {
		ids = map[string]string{}
	}
	summary := ev.Summary
	if summary == nil {
		summary = map[string]any{}
	}
	out := Row{Event: ev, FilesCount: len(files), JobIDsCount: audit.JobIDCount(ids)}
	if len(files) == 0 && len(ids) == 0 {
		// What json.Marshal writes for empty ones, without the reflection.
		out.Files, out.IDs = "[]", "{}"
		b, err := json.Marshal(summary)
		if err != nil {
			return Row{}, failure.Wrap(failure.Internal, err, "encode summary")
		}
		out.Summary = string(b)
		return out, nil
	}
	for _, f := range []struct {
		dst  *string
		v    any
		name string
	}{{&out.Files, files, "changed_files"}, {&out.IDs, ids, "ids"}, {&out.Summary, summary, "summary"}} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return Row{}, failure.Wrap(failure.Internal, err, "encode %s", f.name)
		}
		*f.dst = string(b)
	}
	return out, nil
}

// Args are r's values for [InsertColumns], in order: empty attribution
// and window strings and zero millisecond times as nil (NULL).
func (r Row) Args() []any {
	ev := r.Event
	return []any{ev.EventID, ev.SessionID, ev.StartedAt, ev.EndedAt, ev.DurationMS, ev.Endpoint, ev.Operation,
		ev.ActionName, ev.Project, ev.Status, ev.HTTPStatus, ev.ErrorSummary, ev.WarningSummary,
		r.Files, r.IDs, r.Summary, ev.RequestBytes, ev.ResponseBytes,
		nullable(ev.Attribution.PrincipalKind), nullable(ev.Attribution.PrincipalUserID),
		nullable(ev.Attribution.OAuthClientID),
		nullable(ev.Window.ClientWindow), nullable(ev.Window.Principal), b2i(ev.Window.Meaningful),
		nullableMS(ev.Window.StartedAtMS), nullableMS(ev.Window.EndedAtMS), nullable(ev.RequestID)}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullableMS stores a zero millisecond time as NULL.
func nullableMS(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Deltas are one session's counter deltas summed over a batch, and the
// first and last end of its events in it.
type Deltas struct {
	N, OK, Failed, Unknown, Warning, DurationMS, Files, Jobs int64
	First, Last                                              int64
}

// Sum sums the rows' counter deltas per session, so that each session of
// a batch gets one counter update: the sessions in order of first
// appearance, and each one's deltas.
func Sum(rows []Row) ([]string, map[string]*Deltas) {
	order := []string{}
	per := map[string]*Deltas{}
	for _, r := range rows {
		ev := r.Event
		d := per[ev.SessionID]
		if d == nil {
			d = &Deltas{First: ev.EndedAt}
			per[ev.SessionID] = d
			order = append(order, ev.SessionID)
		}
		d.N++
		d.OK += int64(b2i(ev.Status == audit.EventSuccess))
		d.Failed += int64(b2i(ev.Status == audit.EventFailed))
		d.Unknown += int64(b2i(ev.Status == audit.EventTimeoutOrUnknown))
		d.Warning += int64(b2i(ev.Status == audit.EventWarning))
		d.DurationMS += ev.DurationMS
		d.Files += int64(r.FilesCount)
		d.Jobs += int64(r.JobIDsCount)
		d.First, d.Last = min(d.First, ev.EndedAt), max(d.Last, ev.EndedAt)
	}
	return order, per
}

// Scanner is a row of either driver.
type Scanner interface{ Scan(dest ...any) error }

// ScanSession reads an [audit.Session] from r's [SessionColumns].
func ScanSession(r Scanner) (audit.Session, error) {
	var x audit.Session
	var status string
	var closed, first, last *int64
	err := r.Scan(&x.SessionID, &x.Title, &x.Note, &status, &x.CreatedAt, &x.UpdatedAt, &closed, &first, &last,
		&x.TotalActions, &x.SuccessCount, &x.FailedCount, &x.TimeoutOrUnknownCount, &x.WarningCount,
		&x.TotalDurationMS, &x.ChangedFilesCount, &x.JobIDsCount)
	if err != nil {
		return audit.Session{}, err
	}
	x.Status = audit.Status(status)
	x.ClosedAt, x.FirstEventAt, x.LastEventAt = closed, first, last
	return x, nil
}

// ScanEvent reads an [audit.Event] from r's [EventColumns].
func ScanEvent(r Scanner) (audit.Event, error) {
	var e audit.Event
	var files, ids, summary string
	var pk, pu, oc, rid *string
	err := r.Scan(&e.EventID, &e.SessionID, &e.StartedAt, &e.EndedAt, &e.DurationMS, &e.Endpoint, &e.Operation,
		&e.ActionName, &e.Project, &e.Status, &e.HTTPStatus, &e.ErrorSummary, &e.WarningSummary,
		&files, &ids, &summary, &e.RequestBytes, &e.ResponseBytes, &pk, &pu, &oc, &rid)
	if err != nil {
		return audit.Event{}, err
	}
	if err := json.Unmarshal([]byte(files), &e.ChangedFiles); err != nil {
		return audit.Event{}, fmt.Errorf("event %s changed_files_json: %w", e.EventID, err)
	}
	if err := json.Unmarshal([]byte(ids), &e.IDs); err != nil {
		return audit.Event{}, fmt.Errorf("event %s ids_json: %w", e.EventID, err)
	}
	if err := json.Unmarshal([]byte(summary), &e.Summary); err != nil {
		return audit.Event{}, fmt.Errorf("event %s summary_json: %w", e.EventID, err)
	}
	e.Attribution = audit.Attribution{PrincipalKind: deref(pk), PrincipalUserID: deref(pu), OAuthClientID: deref(oc)}
	e.RequestID = deref(rid)
	return e, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Rows is a driver's result set (*sql.Rows, pgx.Rows); the caller closes
// it.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// collect reads every row of rows with scan.
func collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Sessions reads every row of rows' [SessionColumns].
func Sessions(rows Rows) ([]audit.Session, error) { return collect(rows, ScanSession) }

// Events reads every row of rows' [EventColumns].
func Events(rows Rows) ([]audit.Event, error) { return collect(rows, ScanEvent) }

// Ergonomics reads rows of one column, a model_ergonomics record's JSON.
func Ergonomics(rows Rows) ([]audit.ModelErgonomics, error) {
	return collect(rows, func(r Scanner) (audit.ModelErgonomics, error) {
		var raw string
		var m audit.ModelErgonomics
		if err := r.Scan(&raw); err != nil {
			return m, err
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return m, fmt.Errorf("model_ergonomics: %w", err)
		}
		return m, nil
	})
}

// LoopCalls reads rows of client_window, window_principal, started_at_ms
// and ended_at_ms, NULLs read as "" and 0.
func LoopCalls(rows Rows) ([]audit.LoopCall, error) {
	return collect(rows, func(r Scanner) (audit.LoopCall, error) {
		var c audit.LoopCall
		err := r.Scan(&c.ClientWindow, &c.Principal, &c.StartedAtMS, &c.EndedAtMS)
		return c, err
	})
}

// Relations reads rows of kind and session_id.
func Relations(rows Rows) ([]audit.WindowRelation, error) {
	return collect(rows, func(r Scanner) (audit.WindowRelation, error) {
		var w audit.WindowRelation
		err := r.Scan(&w.Kind, &w.SessionID)
		return w, err
	})
}

// StatsSource is what [Stats] reads from a driver.
type StatsSource struct {
	// Sessions counts every session; HasSession says whether id exists.
	Sessions   func(ctx context.Context) (int64, error)
	HasSession func(ctx context.Context, id string) (bool, error)
	// Newest are the ids of the n sessions of newest activity.
	Newest func(ctx context.Context, n int) ([]string, error)
	// Count counts a session's stored events; Events are its newest
	// limit events, oldest first.
	Count  func(ctx context.Context, id string) (int64, error)
	Events func(ctx context.Context, id string, limit int) ([]audit.Event, error)
}

// Stats is [audit.Store.Stats] over src. Errors: failure.NotFound for an
// unknown q.SessionID; src's errors as they are.
func Stats(ctx context.Context, src StatsSource, q audit.StatsQuery) (audit.Stats, error) {
	var ids []string
	var available int64
	if q.SessionID != "" {
		ok, err := src.HasSession(ctx, q.SessionID)
		if err != nil {
			return audit.Stats{}, err
		}
		if !ok {
			return audit.Stats{}, failure.New(failure.NotFound, "audit session %q not found", q.SessionID)
		}
		ids, available = []string{q.SessionID}, 1
	} else {
		var err error
		if available, err = src.Sessions(ctx); err != nil {
			return audit.Stats{}, err
		}
		if ids, err = src.Newest(ctx, q.Sessions); err != nil {
			return audit.Stats{}, err
		}
	}
	b := audit.NewStatsBuilder()
	for _, id := range ids {
		n, err := src.Count(ctx, id)
		if err != nil {
			return audit.Stats{}, err
		}
		evs, err := src.Events(ctx, id, q.EventsPerSession)
		if err != nil {
			return audit.Stats{}, err
		}
		b.AddSession(n, int64(len(evs)))
		for _, e := range evs {
			b.Add(e)
		}
	}
	return b.Result(available), nil
}
