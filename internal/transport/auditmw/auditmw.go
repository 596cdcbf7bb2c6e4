// Package auditmw is the HTTP side of Action Audit Sessions: a middleware
// that records one audit event per audited request (REST tool calls and
// lists, MCP POSTs) and the operator audit API (POST /api/audit/*).
//
// It lives in the transport layer: it reads the authenticated principal
// from the request context and never touches Workflow Sessions. Domains
// never import it.
//
// What is stored per request: endpoint (path), operation, action name (the
// tool or MCP method), project (arguments.project when present), status,
// HTTP status, duration and byte counts, the caller attribution, and a
// summary of {transport, tool} plus, for a tool call, the
// model_ergonomics the serving transport reported with [ReportTool], or,
// for an MCP tools/list, the tool_surface reported with
// [ReportToolsList]. Arguments and results are never stored.
//
// When the handler returns, its event is committed by the audit service's
// background writer (group commit) before the response is complete for
// the client: the middleware holds the response's last bytes until then
// (see holdWriter), so an audit read made after a response was received
// includes its event. The session id echoed in the response header is
// resolved (and a new session created durably) before the handler runs.
package auditmw

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
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

// responseSniff is how many response bytes are kept to read the top-level
// success member (ToolResult and error bodies put it first).
const responseSniff = 64 << 10

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
		id, _, err := m.Audit.Affinity(r.Context(), Explicit(r))
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

		// Buffer the (already size-limited) body and hand the handler an
		// identical reader, read error included.
		body, rerr := io.ReadAll(r.Body)
		var rd io.Reader = bytes.NewReader(body)
		if rerr != nil {
			rd = io.MultiReader(rd, errReader{rerr})
		}
		r.Body = io.NopCloser(rd)

		hold := &holdWriter{ResponseWriter: w}
		defer hold.release() // after the event is committed (below)
		rec := &recorder{ResponseWriter: hold}
		if op == OpMCP && isMethod(body, "tools/list") {
			rec.keep = MaxSurfaceCapture
		}
		ctx, rep := withReport(r.Context(), start)
		h.ServeHTTP(rec, r.WithContext(ctx))
		if op == OpMCP && isNotification(body) {
			return // a JSON-RPC notification executes nothing: no row
		}

		ev := describe(op, r, body)
		switch ergo, surface := rep.get(); {
		case ergo != nil:
			ev.Summary[audit.SummaryErgonomics] = ergo
		case surface != nil:
			ev.Operation, ev.ActionName = OpMCPToolsList, ActionToolsList
			if rec.sniff.Len() < rec.keep {
				measureSurface(surface, rec.Header().Get("Content-Type"), rec.sniff.Bytes())
			}
			ev.Summary[audit.SummaryToolSurface] = surface
		}
		ev.Endpoint = r.URL.Path
		if ev.Operation == "" {
			ev.Operation = op
		}
		ev.HTTPStatus = rec.statusCode()
		ev.Status = outcome(rec)
		ev.DurationMS = time.Since(start).Milliseconds()
		ev.StartedAt = start.Unix()
		ev.EndedAt = time.Now().Unix()
		ev.RequestBytes = int64(len(body))
		ev.ResponseBytes = rec.n
		var attr audit.Attribution
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			attr = audit.Attribution{PrincipalKind: string(p.Kind), PrincipalUserID: p.Owner}
		}
		// Submit returns once the event is committed; only then does the
		// deferred release let the response complete for the client.
		m.Audit.Submit(r.Context(), submitTimeout, id, ev, attr) // a failure is counted and logged by the service
	})
}

// isMethod reports whether body is one JSON-RPC message calling method.
func isMethod(body []byte, method string) bool {
	var msg struct{ Method string }
	return json.Unmarshal(body, &msg) == nil && msg.Method == method
}

// isNotification reports whether body is one JSON-RPC message without an
// id (a notification).
func isNotification(body []byte) bool {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	_, hasID := msg["id"]
	_, hasMethod := msg["method"]
	return hasMethod && !hasID
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// describe extracts the action name, project and summary from the request
// body. Only names are kept, never argument values other than the project.
func describe(op string, r *http.Request, body []byte) audit.Event {
	var ev audit.Event
	transport, tool := TransportREST, ""
	switch op {
	case OpAction:
		ev.ActionName = r.PathValue("tool")
		var args struct{ Project any }
		json.Unmarshal(body, &args)
		ev.Project = projectOf(args.Project)
		tool = ev.ActionName
	case OpToolsCall:
		var req struct {
			Tool      string
			Arguments struct{ Project any }
		}
		json.Unmarshal(body, &req)
		ev.ActionName, tool = req.Tool, req.Tool
		ev.Project = projectOf(req.Arguments.Project)
	case OpToolsList:
		ev.ActionName = "tools_list"
	case OpMCP:
		transport = TransportMCP
		var req struct {
			Method string
			Params struct {
				Name      string
				Arguments struct{ Project any }
			}
		}
		json.Unmarshal(body, &req)
		ev.ActionName = req.Method
		if req.Method == "tools/call" {
			ev.ActionName, tool = req.Params.Name, req.Params.Name
			ev.Project = projectOf(req.Params.Arguments.Project)
		}
	}
	ev.Summary = map[string]any{"transport": transport}
	if tool != "" {
		ev.Summary["tool"] = tool
	}
	return ev
}

func projectOf(v any) string {
	s, _ := v.(string)
	return s
}

// outcome is success when the HTTP status is 2xx and the response does not
// report failure: a JSON body whose top-level success member is false, or
// (MCP) a JSON-RPC error or a tool result with isError. An MCP event stream
// with HTTP 2xx counts as success.
func outcome(rec *recorder) string {
	code := rec.statusCode()
	if code < 200 || code > 299 {
		return audit.EventFailed
	}
	ct := rec.Header().Get("Content-Type")
	if !strings.Contains(ct, "json") {
		return audit.EventSuccess
	}
	if rec.led {
		if rec.leading {
			return audit.EventSuccess
		}
		return audit.EventFailed
	}
	if failedJSON(rec.sniff.Bytes()) {
		return audit.EventFailed
	}
	return audit.EventSuccess
}

// failedJSON scans only the top-level members of a JSON object: success
// false, a non-null error member, or result.isError true mean failure.
func failedJSON(b []byte) bool {
	// Fast path: a ToolResult or error body opens with its success member,
	// and the scan below stops at the first success member it meets, so
	// this prefix decides exactly what the scan would.
	if v, ok := leadingSuccess(b); ok {
		return !v
	}
	return scanFailedJSON(b)
}

// scanFailedJSON is failedJSON without the fast path.
func scanFailedJSON(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := t.(string)
		switch key {
		case "success":
			var ok bool
			if dec.Decode(&ok) != nil {
				return false
			}
			return !ok
		case "error":
			var v any
			if dec.Decode(&v) != nil {
				return false
			}
			if v != nil {
				return true
			}
		case "result":
			var res struct {
				IsError bool `json:"isError"`
			}
			if dec.Decode(&res) != nil {
				return false
			}
			if res.IsError {
				return true
			}
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
		}
	}
	return false
}

// leadingSuccess reads b when it opens exactly with {"success":true or
// {"success":false followed by a delimiter; ok is false otherwise.
func leadingSuccess(b []byte) (v, ok bool) {
	const prefix = `{"success":`
	rest, found := bytes.CutPrefix(b, []byte(prefix))
	if !found {
		return false, false
	}
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		v, rest = true, rest[len("true"):]
	case bytes.HasPrefix(rest, []byte("false")):
		rest = rest[len("false"):]
	default:
		return false, false
	}
	if len(rest) == 0 {
		return false, false
	}
	switch rest[0] {
	case ',', '}', ' ', '\t', '\n', '\r':
		return v, true
	}
	return false, false
}

// recorder counts the response and keeps its first bytes: responseSniff,
// or keep when larger.
type recorder struct {
	http.ResponseWriter
	code  int
	n     int64
	keep  int
	sniff bytes.Buffer
	// led is true when the first write already decided failedJSON by its
	// leading success member (leading), so nothing was kept.
	led, leading bool
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.n == 0 && r.keep == 0 && !r.led && r.sniff.Len() == 0 {
		// The first bytes of the response: when they open with the
		// success member, failedJSON is decided and needs no copy.
		r.leading, r.led = leadingSuccess(b)
	}
	if room := max(responseSniff, r.keep) - r.sniff.Len(); room > 0 && !r.led {
		r.sniff.Write(b[:min(room, len(b))])
	}
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

func (r *recorder) statusCode() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// Flush keeps streaming (MCP event streams) working through the recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
