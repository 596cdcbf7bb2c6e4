package console

import (
	"cmp"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
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
	// Coverage says which model tool calls the report covers and what
	// was trimmed (see toolCoverage).
	Coverage string
	// Tools is the per-tool report; Charts draw it.
	Tools  audit.ToolReport
	Charts AuditCharts
	// Usage is who made the calls: by credential kind and by OAuth
	// client (the attribution of POST /api/audit/stats over its default
	// window), with UsageCoverage saying what it covers.
	Usage         []KindUsage
	Clients       []audit.OAuthClientUsage
	Unattributed  int64
	UsageCoverage string
}

// KindUsage is the count of audited calls made with one credential kind.
type KindUsage struct {
	Kind  string
	Count int64
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
	// Coverage says which calls are shown, how many the store retains
	// and how many were trimmed (see sessionCoverage).
	Coverage string
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
	st, err := svc.Stats(r.Context(), "", 0)
	if err != nil {
		return err
	}
	d := AuditData{Tools: rep, Charts: auditCharts(rep), Coverage: toolCoverage(rep, sessions),
		Usage: kindUsage(st.Attribution), Clients: st.Attribution.ByOAuthClient, Unattributed: st.Attribution.UnattributedCount,
		UsageCoverage: usageCoverage(st)}
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
	// The store's count of the session's retained events (the stats
	// API's coverage of one session).
	st, err := svc.Stats(r.Context(), sess.SessionID, 0)
	if err != nil {
		return err
	}
	d := AuditSessionData{Session: auditRow(sess), Limit: min(limit, audit.MaxEventsLimit),
		Coverage: sessionCoverage(len(events), st.EventsAvailable, sess.TotalActions)}
	for _, e := range events {
		d.Events = append(d.Events, AuditEventRow{EventView: e, Started: time.Unix(e.StartedAt, 0), Failed: e.Status == audit.EventFailed || e.Status == audit.EventTimeoutOrUnknown})
	}
	return s.render(w, r, http.StatusOK, "audit_session", "Audit session "+sess.SessionID, "audit", d)
}

// kindUsage orders the by-kind counts most-used first, then by kind.
func kindUsage(a audit.AttributionStats) []KindUsage {
	out := make([]KindUsage, 0, len(a.ByPrincipalKind))
	for k, n := range a.ByPrincipalKind {
		out = append(out, KindUsage{Kind: k, Count: n})
	}
	slices.SortFunc(out, func(x, y KindUsage) int {
		if x.Count != y.Count {
			return cmp.Compare(y.Count, x.Count)
		}
		return strings.Compare(x.Kind, y.Kind)
	})
	return out
}

// usageCoverage says which calls the usage tables count: the events
// scanned of the newest audit sessions (the stats API's default window).
func usageCoverage(st audit.Stats) string {
	out := "Calls of the newest " + thousands(st.SessionsScanned) + " of " + thousands(st.SessionsAvailable) + " audit sessions (" +
		thousands(st.EventsScanned) + " of their " + thousands(st.EventsAvailable) + " retained calls)"
	if st.Partial {
		return out + "; older calls are not counted."
	}
	return out + "."
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

// sessionCoverage says what an audit session's page shows: the newest
// shown of the retained events of total calls ever recorded in it (the
// session's cumulative counter), and, when older events were trimmed
// (an audit session keeps at most audit.MaxEventsPerSession), how many.
func sessionCoverage(shown int, retained, total int64) string {
	out := "Shown: the newest " + thousands(int64(shown)) + ", oldest first, of "
	if retained < total {
		return out + "the newest " + thousands(retained) + " retained of " + thousands(total) + " calls in this audit session: " +
			thousands(total-retained) + " older " + noun(total-retained, "call was", "calls were") +
			" trimmed (an audit session keeps at most its newest " + thousands(audit.MaxEventsPerSession) + ")."
	}
	return out + "the " + thousands(total) + " " + noun(total, "call", "calls") + " in this audit session (none trimmed)."
}

// toolCoverage says which model tool calls the per-tool report covers:
// the newest EventsScanned of the EventsAvailable retained ones, and
// which of the listed audit sessions recorded more calls than a session
// retains (audit.MaxEventsPerSession), so that their older calls were
// trimmed and are counted nowhere. A session's counters are cumulative;
// only a session past the bound was ever trimmed.
func toolCoverage(rep audit.ToolReport, sessions []audit.Session) string {
	out := "The newest " + thousands(rep.EventsScanned) + " of the " + thousands(rep.EventsAvailable) + " retained model tool calls"
	if rep.Truncated {
		out += " (the older retained ones are left out)"
	}
	var trimmed, recorded int64
	for _, ss := range sessions {
		if ss.TotalActions > audit.MaxEventsPerSession {
			trimmed++
			recorded += ss.TotalActions
		}
	}
	if trimmed == 0 {
		return out + "; none of the " + thousands(int64(len(sessions))) + " audit sessions listed below was trimmed."
	}
	return out + ". Older calls were trimmed and are not counted: " + thousands(trimmed) + " of the " + thousands(int64(len(sessions))) +
		" audit sessions listed below recorded " + thousands(recorded) + " calls and retain only the newest " +
		thousands(audit.MaxEventsPerSession) + " of each."
}

// noun is one when n is 1, else many.
func noun(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// thousands writes n with a comma between groups of three digits
// (2801 → "2,801").
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
