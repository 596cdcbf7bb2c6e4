package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
	"github.com/webcodex/webcodex/internal/transport/wrapper"
)

// The gateway tools (decision 0024) are served here, not by the kernel:
// list_tools and describe_tool read the server's fixed catalog (like
// tools/list, they are in the audit trail, not in the evidence journal);
// call_tool is one kernel call of the named tool, exactly as a direct
// tools/call of it (same wrapper members, checks, ledger events and one
// evidence record, under the named tool's name). The gateway call itself
// adds no record of its own.

var gatewayTools = map[string]*mcp.Tool{
	gateway.ListTools: {
		Name:        gateway.ListTools,
		Description: "List every tool you may call with a one-line summary; listed=false tools are called with call_tool.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["success","output"],"properties":{"success":{"type":"boolean"},` +
			`"output":{"type":"object","properties":{"profile":{"type":"string"},"tools":{"type":"array"}}},"error":{"type":"object"}}}`),
		Annotations: readOnlyHints(),
	},
	gateway.DescribeTool: {
		Name:        gateway.DescribeTool,
		Description: "Return a tool's full tools/list entry: description, input and output schema, annotations.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["tool"],"properties":{"tool":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["success","output"],"properties":{"success":{"type":"boolean"},` +
			`"output":{"type":"object","properties":{"tool":{"type":"object"}}},"error":{"type":"object"}}}`),
		Annotations: readOnlyHints(),
	},
	gateway.CallTool: {
		Name: gateway.CallTool,
		Description: "Call any tool by name. arguments are exactly those of a direct call (wrapper members included); " +
			"the call is checked and recorded as that tool's.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["tool"],"properties":{"tool":{"type":"string"},"arguments":{"type":"object"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["success","output"],"properties":{"success":{"type":"boolean"},` +
			`"output":{"type":"object"},"error":{"type":"object"},"context":{"type":"object"}}}`),
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: new(bool)},
	},
}

func readOnlyHints() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}
}

// addGateway registers the gateway tools on the SDK server.
func (s *Server) addGateway() {
	s.mcp.AddTool(gatewayTools[gateway.ListTools], s.listTools)
	s.mcp.AddTool(gatewayTools[gateway.DescribeTool], s.describeTool)
	s.mcp.AddTool(gatewayTools[gateway.CallTool], s.callTool)
}

// listTools answers list_tools: the catalog of the caller.
func (s *Server) listTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := s.principal(req)
	if !ok {
		return refused(ctx, nil, failure.New(failure.Unauthenticated, "no authenticated principal")), nil
	}
	if err := gatewayArgs(req.Params.Arguments, &struct{}{}); err != nil {
		return refused(ctx, nil, err), nil
	}
	profile, _ := s.profileOf(p)
	return answered(ctx, map[string]any{
		"profile": profile.Name(),
		"tools":   gateway.Catalog(s.opts.Kernel.Registry(), profile, p),
	}), nil
}

// describeTool answers describe_tool: the named tool's entry as this
// client's era lists it, whether or not the profile lists it.
func (s *Server) describeTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if _, ok := s.principal(req); !ok {
		return refused(ctx, nil, failure.New(failure.Unauthenticated, "no authenticated principal")), nil
	}
	var in struct {
		Tool string `json:"tool"`
	}
	if err := gatewayArgs(req.Params.Arguments, &in); err != nil {
		return refused(ctx, nil, err), nil
	}
	t, ok := gatewayTools[in.Tool]
	if !ok {
		if era(req.ProtocolVersion()) == EraModern {
			t, ok = s.modern[in.Tool]
		} else {
			t, ok = s.legacy[in.Tool]
		}
	}
	if !ok {
		return refused(ctx, nil, failure.New(failure.UnknownTool, "no tool named %q", clip(in.Tool))), nil
	}
	return answered(ctx, map[string]any{"tool": t}), nil
}

// callTool answers call_tool: the named tool's own handler runs with the
// inner arguments, as if the client had called it directly. An unknown
// name goes to the kernel, which refuses it (unknown_tool) and records the
// refusal.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	err := gatewayArgs(req.Params.Arguments, &in)
	if err == nil && in.Tool == "" {
		err = failure.New(failure.InvalidArguments, "tool is required")
	}
	if err != nil {
		return s.refuseEnvelope(ctx, req, err), nil
	}
	inner := *req
	params := *req.Params
	params.Name, params.Arguments = in.Tool, in.Arguments
	inner.Params = &params
	if t, ok := s.opts.Kernel.Registry().Lookup(in.Tool); ok {
		return s.handler(t)(ctx, &inner)
	}
	return s.handler(&kernel.Tool{Name: in.Tool})(ctx, &inner)
}

// profileOf is the tool profile of p's tools/list: its token's own
// (own true) when it has one, else the server's. A token profile that no
// longer resolves (start-up refuses such tokens, so only a token created
// by another process since) falls back to the server's, logged.
func (s *Server) profileOf(p auth.Principal) (profile gateway.Profile, own bool) {
	if len(p.Tools) == 0 {
		return s.profile, false
	}
	key := strings.Join(p.Tools, "\x00")
	if v, ok := s.tokenProfiles.Load(key); ok {
		return v.(gateway.Profile), true
	}
	profile, err := gateway.ResolveList(s.opts.Kernel.Registry(), p.Tools)
	if err != nil {
		s.log.Warn("token tool profile does not resolve; the server's is listed", "token", p.ID, "err", err)
		return s.profile, false
	}
	s.tokenProfiles.Store(key, profile)
	return profile, true
}

// requestPrincipal is the caller of an MCP request: the bearer principal
// on HTTP, the local user on stdio, the zero Principal when neither.
func (s *Server) requestPrincipal(req mcp.Request) auth.Principal {
	extra := req.GetExtra()
	if extra != nil && extra.TokenInfo != nil {
		p, _ := extra.TokenInfo.Extra[principalKey].(auth.Principal)
		return p
	}
	if extra != nil && extra.Header != nil {
		return auth.Principal{}
	}
	return s.opts.Local
}

// refuseEnvelope answers a call_tool whose own arguments are malformed:
// the kernel refuses it (err) and records the refusal under call_tool, the
// name the client called.
func (s *Server) refuseEnvelope(ctx context.Context, req *mcp.CallToolRequest, err error) *mcp.CallToolResult {
	p, ok := s.principal(req)
	if !ok {
		return refused(ctx, nil, failure.New(failure.Unauthenticated, "no authenticated principal"))
	}
	res := s.opts.Kernel.Dispatch(ctx, kernel.Call{
		Tool: gateway.CallTool, Arguments: req.Params.Arguments, Principal: p,
		Source: kernel.SourceMCP, ProtocolEra: era(req.ProtocolVersion()), Refusal: err,
	})
	auditmw.ReportTool(ctx, nil, res)
	return result(res, nil)
}

// gatewayArgs decodes a gateway tool's arguments strictly: an object with
// no duplicate and no unknown member.
func gatewayArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if _, _, err := wrapper.Split(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return failure.New(failure.InvalidArguments, "invalid arguments: %v", err)
	}
	return nil
}

// answered is the result of a gateway catalog read.
func answered(ctx context.Context, out any) *mcp.CallToolResult {
	body, err := httpserver.EncodeJSON(struct {
		Success bool `json:"success"`
		Output  any  `json:"output"`
	}{true, out})
	if err != nil {
		return refused(ctx, nil, failure.New(failure.Internal, "result not serializable"))
	}
	res := kernel.Result{Success: true, Output: out, Body: bytes.TrimSuffix(body, []byte("\n"))}
	auditmw.ReportTool(ctx, nil, res)
	return result(res, nil)
}
