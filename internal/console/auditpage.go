package console

import (
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/console/svgchart"
	"github.com/webcodex/webcodex/internal/failure"
)

// The audit pages show the Action Audit trail exactly as the operator audit
// API does (POST /api/audit/*): the same service calls and bounds, and the
// same scope, account:manage. The per-tool figures are audit.Service.Tools
// (the report of `webcodex audit tools`), drawn as SVG charts.
func init() {
	funcs["percent"] = svgchart.Percent
	funcs["bytes"] = svgchart.Bytes
	extraRouteFuncs = append(extraRouteFuncs, func(s *Server) {
		s.handle("GET "+Prefix+"/audit", s.page(s.auditPage))
		s.handle("GET "+Prefix+"/audit/sessions/{id}", s.page(s.auditSession))
	})
}

// AuditData is the model of the audit page.
type AuditData struct {
	Sessions []AuditSessionRow
	// Tools is the per-tool report; Charts draw it.
	Tools  audit.ToolReport
	Charts AuditCharts
}

// AuditSessionRow is one Action Audit session as the list shows it.
type AuditSessionRow struct {
	audit.Session
	Created, LastEvent time.Time
}

// AuditCharts are the per-tool charts of a report.
type AuditCharts struct {
	Calls, Success, Latency, Bytes template.HTML
}

// AuditSessionData is the model of one Action Audit session's page.
type AuditSessionData struct {
	Session AuditSessionRow
	Events  []AuditEventRow
	// Limit is how many of the newest events were asked for.
	Limit int
}

// AuditEventRow is one audited call.
type AuditEventRow struct {
	audit.EventView
	Started time.Time
	Failed  bool
}

// requireAuditScope is the operator audit API's check.
func requireAuditScope(r *http.Request) error {
	if !viewerOf(r).Principal.Has(auth.ScopeAccountManage) {
		return failure.New(failure.InsufficientScope, "the audit pages require %s, like the audit API", auth.ScopeAccountManage)
	}
	return nil
}

func (s *Server) auditService() (*audit.Service, error) {
	if s.opts.Audit == nil {
		return nil, failure.New(failure.Unavailable, "the action audit is disabled on this server")
	}
	return s.opts.Audit, nil
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) error {
	if err := requireAuditScope(r); err != nil {
		return err
	}
	svc, err := s.auditService()
	if err != nil {
		return err
	}
	sessions, err := svc.ListSessions(r.Context(), "", 0)
	if err != nil {
		return err
	}
	rep, err := svc.Tools(r.Context(), 0)
	if err != nil {
		return err
	}
	d := AuditData{Tools: rep, Charts: auditCharts(rep)}
	for _, ss := range sessions {
		d.Sessions = append(d.Sessions, auditRow(ss))
	}
	return s.render(w, r, http.StatusOK, "audit", "Audit", "audit", d)
}

func (s *Server) auditSession(w http.ResponseWriter, r *http.Request) error {
	if err := requireAuditScope(r); err != nil {
		return err
	}
	svc, err := s.auditService()
	if err != nil {
		return err
	}
	limit := 0
	if v := r.URL.Query().Get("events"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil {
			return failure.New(failure.InvalidArguments, "events must be a number")
		}
	}
	sess, events, err := svc.SessionWithEvents(r.Context(), r.PathValue("id"), limit)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = audit.DefaultEventsLimit
	}
	d := AuditSessionData{Session: auditRow(sess), Limit: min(limit, audit.MaxEventsLimit)}
	for _, e := range events {
		d.Events = append(d.Events, AuditEventRow{EventView: e, Started: time.Unix(e.StartedAt, 0), Failed: e.Status == audit.EventFailed || e.Status == audit.EventTimeoutOrUnknown})
	}
	return s.render(w, r, http.StatusOK, "audit_session", "Audit session "+sess.SessionID, "audit", d)
}

func auditRow(ss audit.Session) AuditSessionRow {
	row := AuditSessionRow{Session: ss, Created: time.Unix(ss.CreatedAt, 0)}
	if ss.LastEventAt != nil {
		row.LastEvent = time.Unix(*ss.LastEventAt, 0)
	}
	return row
}

// auditCharts draws the report's per-tool figures, most-called tool first
// (the report's order).
func auditCharts(rep audit.ToolReport) AuditCharts {
	var calls, success, bytes []svgchart.Bar
	var latency []svgchart.Range
	for _, t := range rep.Tools {
		calls = append(calls, svgchart.Bar{Label: t.Tool, Value: float64(t.Count), Text: plural(t.Count, "call")})
		success = append(success, svgchart.Bar{Label: t.Tool, Value: t.SuccessRate, Text: svgchart.Percent(t.SuccessRate) + " (" + strconv.FormatInt(t.Successes, 10) + " ok)"})
		latency = append(latency, svgchart.Range{Label: t.Tool, P50: t.P50MS, P95: t.P95MS})
		bytes = append(bytes, svgchart.Bar{Label: t.Tool, Value: float64(t.MeanBytes), Text: "mean " + svgchart.Bytes(t.MeanBytes) + " · p95 " + svgchart.Bytes(t.P95Bytes)})
	}
	return AuditCharts{
		Calls:   svgchart.Bars("Calls per tool", calls),
		Success: svgchart.Bars("Success rate per tool", success),
		Latency: svgchart.Latency("Latency per tool", latency),
		Bytes:   svgchart.Bars("Result size per tool", bytes),
	}
}

// plural is "1 call", "2 calls".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
