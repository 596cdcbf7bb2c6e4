package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/requestid"
	"github.com/webcodex/webcodex/internal/telemetry"
)

// trace is the outermost receiving middleware: one server span per MCP
// request the SDK dispatches ("tools/call {tool}", see
// telemetry.MCPSpanName), the parent of the kernel's execute_tool span.
// Only registered names, the JSON-RPC id and the request id are
// recorded, never params.
func (s *Server) trace(next mcp.MethodHandler) mcp.MethodHandler {
	if s.opts.Tracing == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r := telemetry.MCPRequest{Method: method, RPCID: rpcIDFrom(ctx), RequestID: requestid.From(ctx), Transport: telemetry.TransportPipe}
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			r.Transport = telemetry.TransportTCP
		}
		if ct, ok := req.(*mcp.CallToolRequest); ok {
			r.ProtocolVersion = ct.ProtocolVersion()
			if ct.Params != nil && s.registered(ct.Params.Name) {
				r.Tool = ct.Params.Name
			}
		}
		ctx, span := s.opts.Tracing.StartMCP(ctx, r)
		res, err := next(ctx, method, req)
		var o telemetry.MCPOutcome
		if err != nil {
			o.HasRPCError = true
			if we, ok := errors.AsType[*jsonrpc.Error](err); ok {
				o.RPCErrorCode = we.Code
			}
		} else if er, ok := res.(encodedResult); ok && er.CallToolResult != nil {
			o.ToolError = er.IsError
		} else if cr, ok := res.(*mcp.CallToolResult); ok && cr != nil {
			o.ToolError = cr.IsError
		}
		span.EndMCP(o)
		return res, err
	}
}

// registered reports whether name is a tool the server serves (a kernel
// tool or a gateway tool): only such a name is put on a span.
func (s *Server) registered(name string) bool {
	if _, ok := s.opts.Kernel.Registry().Lookup(name); ok {
		return true
	}
	return slices.Contains(gateway.Names, name)
}

type rpcIDKey struct{}

func rpcIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(rpcIDKey{}).(string)
	return id
}

// maxRPCIDBytes bounds the JSON-RPC id text put on a span.
const maxRPCIDBytes = 128

// rpcID reads the JSON-RPC id of a POSTed message (when tracing is on)
// for the request's span: the SDK does not hand it to middleware. An id
// longer than maxRPCIDBytes is not recorded.
func (s *Server) rpcID(next http.Handler) http.Handler {
	if s.opts.Tracing == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.Unmarshal(httpserver.Body(r), &msg) != nil || len(msg.ID) == 0 || len(msg.ID) > maxRPCIDBytes {
			next.ServeHTTP(w, r)
			return
		}
		id := string(msg.ID)
		var text string
		if json.Unmarshal(msg.ID, &text) == nil {
			id = text // a string id is recorded as the string
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), rpcIDKey{}, id)))
	})
}
