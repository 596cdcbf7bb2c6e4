package auditmw

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// RegisterOperator adds the operator audit API to mux. Every route needs a
// credential holding account:manage (admin implies it). The routes are not
// tools: they are never listed in OpenAPI or MCP. A nil m registers
// nothing (audit disabled).
//
//	POST /api/audit/sessions  {limit?, status?}          → {sessions}
//	POST /api/audit/session   {session_id, events_limit?} → {session, events}
//	POST /api/audit/stats     {session_id?, limit?}       → Stats
//	POST /api/audit/tools     {limit?}                    → ToolReport
//	POST /api/audit/close     {session_id}                → {session}
func (m *Middleware) RegisterOperator(mux *httpserver.Mux) {
	if m == nil || m.Audit == nil {
		return
	}
	mux.Authenticated("POST /api/audit/sessions", m.operator(func(w http.ResponseWriter, r *http.Request, body []byte) error {
		var req struct {
			Limit  int          `json:"limit"`
			Status audit.Status `json:"status"`
		}
		if err := decode(body, &req); err != nil {
			return err
		}
		sessions, err := m.Audit.ListSessions(r.Context(), req.Status, req.Limit)
		if err != nil {
			return err
		}
		if sessions == nil {
			sessions = []audit.Session{}
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
		return nil
	}))
	mux.Authenticated("POST /api/audit/session", m.operator(func(w http.ResponseWriter, r *http.Request, body []byte) error {
		var req struct {
			SessionID   string `json:"session_id"`
			EventsLimit int    `json:"events_limit"`
		}
		if err := decode(body, &req); err != nil {
			return err
		}
		sess, events, err := m.Audit.SessionWithEvents(r.Context(), req.SessionID, req.EventsLimit)
		if err != nil {
			return err
		}
		if events == nil {
			events = []audit.EventView{}
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"session": sess, "events": events})
		return nil
	}))
	mux.Authenticated("POST /api/audit/stats", m.operator(func(w http.ResponseWriter, r *http.Request, body []byte) error {
		var req struct {
			SessionID string `json:"session_id"`
			Limit     int    `json:"limit"`
		}
		if err := decode(body, &req); err != nil {
			return err
		}
		st, err := m.Audit.Stats(r.Context(), req.SessionID, req.Limit)
		if err != nil {
			return err
		}
		httpserver.WriteJSON(w, http.StatusOK, st)
		return nil
	}))
	mux.Authenticated("POST /api/audit/tools", m.operator(func(w http.ResponseWriter, r *http.Request, body []byte) error {
		var req struct {
			Limit int `json:"limit"`
		}
		if err := decode(body, &req); err != nil {
			return err
		}
		rep, err := m.Audit.Tools(r.Context(), req.Limit)
		if err != nil {
			return err
		}
		httpserver.WriteJSON(w, http.StatusOK, rep)
		return nil
	}))
	mux.Authenticated("POST /api/audit/close", m.operator(func(w http.ResponseWriter, r *http.Request, body []byte) error {
		var req struct {
			SessionID string `json:"session_id"`
		}
		if err := decode(body, &req); err != nil {
			return err
		}
		sess, err := m.Audit.CloseSession(r.Context(), req.SessionID)
		if err != nil {
			return err
		}
		httpserver.WriteJSON(w, http.StatusOK, map[string]any{"session": sess})
		return nil
	}))
}

// operator checks the scope, reads the body and maps errors to HTTP.
func (m *Middleware) operator(fn func(http.ResponseWriter, *http.Request, []byte) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalFrom(r.Context())
		if !p.Has(auth.ScopeAccountManage) {
			httpserver.WriteInsufficientScope(w, r, []auth.Scope{auth.ScopeAccountManage}, failure.New(failure.InsufficientScope, "the audit API requires %s", auth.ScopeAccountManage))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			httpserver.WriteError(w, http.StatusRequestEntityTooLarge, failure.New(failure.RequestTooLarge, "request body exceeds %d bytes", httpserver.MaxBodyBytes))
			return
		}
		if err := fn(w, r, body); err != nil {
			k := failure.KindOf(err)
			if k == failure.Internal || k == "" {
				m.log().Error("audit api", "path", r.URL.Path, "err", err)
			}
			httpserver.WriteError(w, httpserver.StatusFor(k), err)
		}
	})
}

// decode reads an optional JSON object body strictly.
func decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return failure.New(failure.InvalidArguments, "invalid request body: %v", err)
	}
	return nil
}
