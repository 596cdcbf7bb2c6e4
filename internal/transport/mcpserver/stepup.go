package mcpserver

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// codeInsufficientScope is the JSON-RPC error code (in the range JSON-RPC
// leaves to servers) of a tools/call refused for lack of scope.
const codeInsufficientScope = -32003

// toolsCall is what the step-up check reads of a JSON-RPC message.
type toolsCall struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"params"`
}

// stepUp refuses, before the SDK dispatches it, a tools/call of a tool
// whose scopes the caller's credential lacks (call_tool is judged by the
// tool it names): HTTP 403 with the step-up challenge
// (httpserver.InsufficientScopeChallenge: error="insufficient_scope",
// every scope the tool needs, resource_metadata), so that an OAuth client
// can ask for them and retry, as the MCP authorization profile has it. The
// body is a JSON-RPC error response to the call whose data is the refused
// ToolResult (kind insufficient_scope), the REST body of the same refusal:
// a client that does not step up (the go-sdk client without an OAuth
// handler) gets the call's error and keeps its connection, which a 403
// carrying a result would end. The call never reaches the kernel: no
// session, no evidence record; the audit event records it as failed.
//
// A caller holding every scope of every tool, and any message that is not
// a tools/call request naming a registered tool, pass unread.
func (s *Server) stepUp(next http.Handler) http.Handler {
	var all []auth.Scope
	for _, t := range s.opts.Kernel.Registry().Tools() {
		for _, sc := range t.Scopes {
			if !slices.Contains(all, sc) {
				all = append(all, sc)
			}
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := auth.PrincipalFrom(r.Context())
		if r.Method != http.MethodPost || !ok || len(p.Missing(all)) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		var call toolsCall
		if json.Unmarshal(httpserver.Body(r), &call) != nil || call.Method != "tools/call" || len(call.ID) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		name := call.Params.Name
		if name == gateway.CallTool {
			var inner struct {
				Tool string `json:"tool"`
			}
			json.Unmarshal(call.Params.Arguments, &inner) // a bad envelope is the gateway's to refuse
			name = inner.Tool
		}
		need, err := s.opts.Kernel.ScopeRefusal(p, name)
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		res := kernel.Failure(err)
		t, _ := s.opts.Kernel.Registry().Lookup(name)
		// As for a dispatched call: the tool's ergonomics, then the
		// method and the tool called (call_tool itself, through the
		// gateway), which is the event's action name.
		auditmw.ReportTool(r.Context(), t, res)
		auditmw.ReportMethod(r.Context(), call.Method, call.Params.Name, true)
		w.Header().Set("WWW-Authenticate", httpserver.InsufficientScopeChallenge(r, need))
		body, encErr := httpserver.EncodeJSON(map[string]any{
			"jsonrpc": "2.0", "id": call.ID,
			"error": map[string]any{"code": codeInsufficientScope, "message": res.Error.Message, "data": json.RawMessage(res.Body)},
		})
		if encErr != nil {
			httpserver.WriteError(w, http.StatusForbidden, err)
			return
		}
		httpserver.WriteJSONBytes(w, http.StatusForbidden, body)
	})
}
