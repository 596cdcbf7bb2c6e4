// Package rest is the REST and GPT Actions transport: it adapts HTTP
// requests to kernel calls and publishes the OpenAPI 3.1 description
// generated from the same tool registry, so REST, OpenAPI and MCP cannot
// drift apart.
//
// Routes:
//
//	POST /api/tools/list          the registered tools with their schemas
//	POST /api/tools/call          {tool, arguments, recording_session_id?, ack_session_message_ids?}
//	POST /api/actions/{tool}      GPT Actions: the tool's arguments as the body
//	GET  /openapi.json            OpenAPI 3.1 (public)
//	GET  /healthz                 liveness (public)
//	GET  /api/status              version, uptime, counts
//
// A tool failure is a ToolResult with success=false and HTTP 200; HTTP error
// statuses are reserved for requests that never reached a tool (bad JSON,
// oversized body, missing credential).
package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
	"github.com/webcodex/webcodex/internal/transport/wrapper"
	"github.com/webcodex/webcodex/internal/window"
)

// StatusFunc reports the server status for /api/status.
type StatusFunc func(ctx context.Context) (any, error)

// Server is the REST transport.
type Server struct {
	Kernel *kernel.Kernel
	// Status builds the /api/status body.
	Status StatusFunc
	// PublicURL, when set, is the server URL published in OpenAPI.
	PublicURL string
	// Version is published in OpenAPI info.
	Version string
	// Audit, when set, records the tool routes as Action Audit events.
	Audit *auditmw.Middleware
}

// Register adds the REST routes to m.
func (s *Server) Register(m *httpserver.Mux) {
	m.Always("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpserver.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	m.Public("GET /openapi.json", http.HandlerFunc(s.openAPI))
	m.Authenticated("POST /api/tools/list", s.Audit.Wrap(auditmw.OpToolsList, http.HandlerFunc(s.listTools)))
	m.Authenticated("POST /api/tools/call", s.Audit.Wrap(auditmw.OpToolsCall, http.HandlerFunc(s.callTool)))
	m.Authenticated("POST /api/actions/{tool}", s.Audit.Wrap(auditmw.OpAction, http.HandlerFunc(s.callAction)))
	m.Authenticated("GET /api/status", http.HandlerFunc(s.status))
}

// ToolInfo is one entry of /api/tools/list.
type ToolInfo struct {
	Name         string             `json:"name"`
	Description  string             `json:"description"`
	Category     string             `json:"category"`
	Scopes       []auth.Scope       `json:"scopes"`
	Annotations  kernel.Annotations `json:"annotations"`
	InputSchema  any                `json:"input_schema"`
	OutputSchema any                `json:"output_schema"`
}

// ToolList is the body of /api/tools/list.
type ToolList struct {
	Tools []ToolInfo `json:"tools"`
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	out := ToolList{Tools: []ToolInfo{}}
	for _, t := range s.Kernel.Registry().Tools() {
		out.Tools = append(out.Tools, ToolInfo{
			Name: t.Name, Description: t.Description, Category: t.Category, Scopes: t.Scopes,
			Annotations: t.Annotations, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		})
	}
	httpserver.WriteJSON(w, http.StatusOK, out)
}

// CallRequest is the body of /api/tools/call.
type CallRequest struct {
	Tool               string          `json:"tool"`
	Arguments          json.RawMessage `json:"arguments,omitempty"`
	RecordingSessionID string          `json:"recording_session_id,omitempty"`
	// AckSessionMessageIDs acknowledge ACK-required messages of the
	// recording session (judged in the result's session_attention; they
	// never refuse the call).
	AckSessionMessageIDs []string `json:"ack_session_message_ids,omitempty"`
}

func (s *Server) callTool(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	dec := json.NewDecoder(bytes.NewReader(httpserver.Body(r)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpserver.WriteError(w, http.StatusBadRequest, failure.New(failure.InvalidArguments, "request body must be {tool, arguments, recording_session_id?, ack_session_message_ids?}: %v", err))
		return
	}
	if req.Tool == "" {
		httpserver.WriteError(w, http.StatusBadRequest, failure.New(failure.InvalidArguments, "tool is required"))
		return
	}
	s.dispatch(w, r, req)
}

// callAction serves GPT Actions: the body is the tool's argument object,
// which may also carry recording_session_id and ack_session_message_ids
// (split off by wrapper.Split, which refuses duplicate keys at any depth).
func (s *Server) callAction(w http.ResponseWriter, r *http.Request) {
	req := CallRequest{Tool: r.PathValue("tool")}
	body := httpserver.Body(r)
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) > 0 && (trimmed[0] != '{' || !json.Valid(body)) {
		s.reject(w, r, req.Tool, failure.New(failure.InvalidArguments, "request body must be a JSON object"))
		return
	}
	args, members, err := wrapper.Split(body, fieldRecorder, fieldAcks)
	if err != nil {
		s.reject(w, r, req.Tool, err)
		return
	}
	req.Arguments = args
	if raw, ok := members[fieldRecorder]; ok {
		if err := json.Unmarshal(raw, &req.RecordingSessionID); err != nil {
			s.reject(w, r, req.Tool, failure.New(failure.InvalidArguments, "%s must be a string", fieldRecorder))
			return
		}
	}
	if raw, ok := members[fieldAcks]; ok {
		if err := json.Unmarshal(raw, &req.AckSessionMessageIDs); err != nil {
			s.reject(w, r, req.Tool, failure.New(failure.InvalidArguments, "%s must be an array of message ids", fieldAcks))
			return
		}
	}
	s.dispatch(w, r, req)
}

// The wrapper members of a GPT Actions body.
const (
	fieldRecorder = "recording_session_id"
	fieldAcks     = "ack_session_message_ids"
)

// dispatch runs req and writes its ToolResult. Without warnings or
// ambient projections the body is exactly res.Body plus a newline, so
// sha256 of the body without its final newline is the evidence record's
// result_digest; with them it is {success, output, error, warnings,
// session_attention}, whose first three members are res.Body's.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, req CallRequest) {
	auditmw.ReportName(r.Context(), req.Tool)
	p, _ := auth.PrincipalFrom(r.Context())
	if need, err := s.Kernel.ScopeRefusal(p, req.Tool); err != nil {
		s.stepUp(w, r, req.Tool, need, err)
		return
	}
	res := s.Kernel.Dispatch(r.Context(), kernel.Call{
		Tool: req.Tool, Arguments: req.Arguments, RecordingSessionID: req.RecordingSessionID,
		AckMessageIDs: req.AckSessionMessageIDs, Principal: p, Source: kernel.SourceREST,
		// A host that is not an MCP client may name its window in a
		// header, hashed exactly like _meta["openai/session"].
		ClientWindow: window.Hash(r.Header.Get(window.HeaderWindow), p),
	})
	if res.Body == nil {
		res = kernel.Failure(failure.New(failure.Internal, "tool result not serializable"))
	}
	body := res.Body
	if len(res.Warnings) > 0 || !res.Projections.Empty() {
		var err error
		if body, err = httpserver.EncodeJSON(res); err != nil {
			body = res.Body
		}
	}
	t, _ := s.Kernel.Registry().Lookup(req.Tool)
	auditmw.ReportTool(r.Context(), t, res)
	httpserver.WriteJSONBytes(w, http.StatusOK, body)
}

// stepUp answers a call of a tool whose scopes the credential lacks,
// before dispatch: 403 with the step-up challenge naming need (every
// scope of the tool) and the refused ToolResult (insufficient_scope) as
// the body. The call never reaches the kernel: no session, no evidence
// record; the audit event records it as failed.
func (s *Server) stepUp(w http.ResponseWriter, r *http.Request, tool string, need []auth.Scope, err error) {
	res := kernel.Failure(err)
	t, _ := s.Kernel.Registry().Lookup(tool)
	auditmw.ReportTool(r.Context(), t, res)
	w.Header().Set("WWW-Authenticate", httpserver.InsufficientScopeChallenge(r, need))
	httpserver.WriteJSONBytes(w, http.StatusForbidden, res.Body)
}

// reject answers a GPT Actions request whose envelope is invalid before
// dispatch; a registered tool still counts the call as a pre-result
// rejection in its model_ergonomics.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, tool string, err error) {
	p, _ := auth.PrincipalFrom(r.Context())
	res := s.Kernel.Dispatch(r.Context(), kernel.Call{Tool: tool, Principal: p, Source: kernel.SourceREST, Refusal: err})
	t, _ := s.Kernel.Registry().Lookup(tool)
	auditmw.ReportTool(r.Context(), t, res)
	httpserver.WriteError(w, http.StatusBadRequest, err)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.PrincipalFrom(r.Context())
	if !p.Has(auth.ScopeRuntimeRead) && !p.Has(auth.ScopeProjectRead) {
		httpserver.WriteInsufficientScope(w, r, []auth.Scope{auth.ScopeRuntimeRead}, failure.New(failure.InsufficientScope, "status requires runtime:read"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	body, err := s.Status(ctx)
	if err != nil {
		httpserver.WriteError(w, httpserver.StatusFor(failure.KindOf(err)), err)
		return
	}
	httpserver.WriteJSON(w, http.StatusOK, body)
}
