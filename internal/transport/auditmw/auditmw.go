// Package auditmw is the HTTP side of Action Audit Sessions: a middleware
// that records one audit event per audited request (REST tool calls and
// lists, MCP POSTs) and the operator audit API (POST /api/audit/*).
//
// It lives in the transport layer: it reads the authenticated principal
// from the request context and never touches Workflow Sessions. Domains
// never import it.
//
// What is stored per request: endpoint (path), operation, action name (the
// tool or MCP method), project, status, HTTP status, duration and byte
// counts, the caller attribution, and a summary of {transport, tool} plus,
// for a tool call, the model_ergonomics, or, for an MCP tools/list, the
// tool_surface. Arguments and results are never stored.
//
// The middleware never parses the request body or reads the response: the
// method is what the go-sdk dispatched ([ReportMethod]), the tool, project
// and outcome are what the transport and the kernel's Result say
// ([ReportName], [ReportTool], [ReportToolsList]). A request no transport
// reported on (malformed JSON-RPC, refused before dispatch) is recorded
// from what the HTTP layer knows: its route, status and sizes.
//
// When the handler returns, its event is committed by the audit service's
// group commit (Submit) before the response is complete for
// the client: the middleware holds the response's last bytes until then
// (see holdWriter), so an audit read made after a response was received
// includes its event. The session id echoed in the response header is
// resolved (and a new session created durably) before the handler runs.
package auditmw

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/requestid"
)

// Affinity headers and query parameter.
const (
	HeaderActionSession   = "x-action-session-id"
	HeaderWebcodexSession = "x-webcodex-session-id"
	QueryActionSession    = "action_session_id"
)

// Operations recorded in action_events.operation. OpMCP is the operation a
// route is wrapped with; an MCP tools/list is recorded as OpMCPToolsList
// with action name ActionToolsList.
const (
	OpToolsCall    = "tools_call"
	OpToolsList    = "tools_list"
	OpAction       = "action"
	OpMCP          = "mcp"
	OpMCPToolsList = "mcp_tools_list"

	ActionToolsList = "toolsList"
)

// Transports recorded in summary.transport.
const (
	TransportREST = "rest"
	TransportMCP  = "mcp"
)

// submitTimeout bounds how long a request waits for room in a full audit
// queue before writing its event itself (it then waits for that write).
const submitTimeout = 10 * time.Second

// Middleware records audited requests. The zero value is not usable; set
// Audit.
type Middleware struct {
	Audit *audit.Service
	Log   *slog.Logger

	failures atomic.Int64
}

// WriteFailures is how many audit writes and affinity look-ups failed
// since start. A failure never changes the audited response.
func (m *Middleware) WriteFailures() int64 {
	if m == nil || m.Audit == nil {
		return 0
	}
	return m.failures.Load() + m.Audit.WriteFailures()
}

func (m *Middleware) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}

func (m *Middleware) fail(msg string, err error) {
	m.failures.Add(1)
	m.log().Warn(msg, "err", err)
}

// Explicit returns the raw explicit audit id of r: the x-action-session-id
// header, else x-webcodex-session-id, else the action_session_id query
// value ("" when none is given).
func Explicit(r *http.Request) string {
	if v := r.Header.Get(HeaderActionSession); v != "" {
		return v
	}
	if v := r.Header.Get(HeaderWebcodexSession); v != "" {
		return v
	}
	if r.URL.RawQuery == "" {
		return "" // nothing to parse
	}
	return r.URL.Query().Get(QueryActionSession)
}

// Wrap audits every POST to h under operation op (OpToolsCall, OpToolsList,
// OpAction or OpMCP). Other methods pass through unaudited.
func (m *Middleware) Wrap(op string, h http.Handler) http.Handler {
	if m == nil || m.Audit == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		var principal string
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			principal = p.AuthorityFingerprint()
		}
		id, _, err := m.Audit.Affinity(r.Context(), principal, Explicit(r))
		if err != nil {
			if failure.KindOf(err) == failure.InvalidArguments {
				httpserver.WriteError(w, http.StatusBadRequest, err)
				return
			}
			// The audit store failing never blocks the call.
			m.fail("audit: session affinity", err)
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set(HeaderActionSession, id)

		hold := &holdWriter{ResponseWriter: w}
		defer hold.release() // after the event is committed (below)
		rec := httpserver.NewRecorder(hold)
		ctx, rep := withReport(r.Context(), start)
		h.ServeHTTP(rec, r.WithContext(ctx))
		f := rep.get()
		if op == OpMCP && notification(f, rec.Status()) {
			return // a JSON-RPC notification executes nothing: no row
		}

		ev := describe(op, r, f)
		ev.Endpoint = r.URL.Path
		ev.HTTPStatus = rec.Status()
		ev.Status = outcome(ev.HTTPStatus, f)
		ev.DurationMS = time.Since(start).Milliseconds()
		ev.StartedAt = start.Unix()
		ev.EndedAt = time.Now().Unix()
		ev.RequestBytes = int64(len(httpserver.Body(r)))
		ev.ResponseBytes = rec.Written()
		ev.RequestID = requestid.From(r.Context())
		if f.window != nil {
			ev.Window = *f.window
			ev.Window.StartedAtMS, ev.Window.EndedAtMS = start.UnixMilli(), time.Now().UnixMilli()
		}
		var attr audit.Attribution
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			attr = attribute(p)
		}
		// Submit returns once the event is committed; only then does the
		// deferred release let the response complete for the client.
		m.Audit.Submit(r.Context(), submitTimeout, id, ev, attr) // a failure is counted and logged by the service
	})
}

// attribute is the caller attribution Action Audit snapshots for p at
// event write time (spec §2): its canonical credential kind, its authority
// group as the stable user id, and its OAuth client id, only when the
// credential was issued to an OAuth client.
func attribute(p auth.Principal) audit.Attribution {
	return audit.Attribution{PrincipalKind: string(p.Kind), PrincipalUserID: p.Owner, OAuthClientID: p.OAuthClientID}
}

// isNotification reports whether an MCP method the SDK dispatched is a
// notification: MCP names every notification notifications/...
func isNotification(method string) bool { return strings.HasPrefix(method, "notifications/") }

// notification reports whether an MCP request was a JSON-RPC
// notification: the SDK dispatched a notifications/ method, or it
// dispatched none and answered 202 Accepted, which Streamable HTTP
// answers only to a POST that carries no request (the SDK handles some
// notifications, such as notifications/cancelled, outside its method
// handlers).
func notification(f facts, status int) bool {
	if f.methodSeen {
		return isNotification(f.method)
	}
	return status == http.StatusAccepted
}

// describe builds the event of a request from what the transport reported
// (f) and, for what no transport reports, the route: the GPT Actions path
// names its tool. Only names are kept, never argument values; the project
// is the one the kernel resolved.
func describe(op string, r *http.Request, f facts) audit.Event {
	var ev audit.Event
	ev.Operation = op
	transport := TransportREST
	switch op {
	case OpAction:
		ev.ActionName = r.PathValue("tool")
	case OpToolsCall:
		ev.ActionName = f.name
	case OpToolsList:
		ev.ActionName = "tools_list"
	case OpMCP:
		transport = TransportMCP
		ev.ActionName = f.method
		if f.method == "tools/call" {
			ev.ActionName = f.name
		}
	}
	ev.Project = f.project
	ev.Summary = map[string]any{"transport": transport}
	if f.name != "" && (op != OpMCP || f.method == "tools/call") {
		ev.Summary["tool"] = f.name
	}
	switch {
	case f.ergonomics != nil:
		ev.Summary[audit.SummaryErgonomics] = f.ergonomics
	case f.surface != nil:
		ev.Operation, ev.ActionName = OpMCPToolsList, ActionToolsList
		ev.Summary[audit.SummaryToolSurface] = f.surface
	}
	return ev
}

// outcome is failed when the HTTP status is not 2xx, when the SDK answered
// a JSON-RPC error, or when the tool call the transport reported failed
// (an MCP isError result, a REST success:false); success otherwise.
func outcome(status int, f facts) string {
	switch {
	case status < 200 || status > 299, f.failed, f.toolSeen && !f.succeeded:
		return audit.EventFailed
	}
	return audit.EventSuccess
}
