package telemetry

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
)

// This file is the whole mapping of WebCodex facts to span names and
// attributes. Nothing else in the code base names an attribute.
//
// Conventions followed: the OpenTelemetry semantic conventions for
// generative AI and MCP, open-telemetry/semantic-conventions-genai
// v0.1.0 (MCP and gen-AI spans, status Development), over the general
// semantic conventions v1.45.0 (HTTP server spans, error.type). What the
// conventions do not cover is named under webcodex.*.
//
// What is never put on a span: tool arguments, results, file paths,
// commands, message bodies, resource URIs, URL paths and queries. Only
// names WebCodex registered (methods, tools, routes), ids it minted or
// verified, kinds and numbers are.

// SemconvVersion names the conventions the mapping follows.
const SemconvVersion = "semantic-conventions-genai v0.1.0 over semantic-conventions v1.45.0"

// SchemaURL is the schema of the general conventions the resource names.
const SchemaURL = "https://opentelemetry.io/schemas/1.45.0"

// Attribute names.
const (
	keyMCPMethod       = "mcp.method.name"
	keyMCPProtocol     = "mcp.protocol.version"
	keyJSONRPCID       = "jsonrpc.request.id"
	keyNetTransport    = "network.transport"
	keyOperation       = "gen_ai.operation.name"
	keyToolName        = "gen_ai.tool.name"
	keyConversationID  = "gen_ai.conversation.id"
	keyErrorType       = "error.type"
	keyHTTPMethod      = "http.request.method"
	keyHTTPRoute       = "http.route"
	keyHTTPStatus      = "http.response.status_code"
	keyServiceName     = "service.name"
	keyServiceVersion  = "service.version"
	keyRequestID       = "webcodex.request.id"
	keyInvocationID    = "webcodex.invocation.id"
	keyLeafIndex       = "webcodex.evidence.leaf_index"
	keyCallSource      = "webcodex.call.source"
	keyEvidenceBinding = "webcodex.evidence.binding"
)

// Attribute values.
const (
	operationExecuteTool = "execute_tool"
	methodToolsCall      = "tools/call"
	// errorToolError is error.type of an MCP tools/call whose result is
	// an error result (isError), as the MCP conventions name it.
	errorToolError = "tool_error"
	// errorOther is error.type when no finer class is known.
	errorOther = "_OTHER"
)

// Network transports (network.transport) of MCP requests.
const (
	TransportTCP  = "tcp"
	TransportPipe = "pipe"
)

// maxSpanAttributes is the most attributes one span gets (a tool span:
// its ToolCall's eight; an HTTP span's request and status are six, an MCP
// span's request and outcome seven).
const maxSpanAttributes = 8

// maxNameBytes bounds a name put in a span name or attribute (a tool or
// method name is a registered name; a longer one is cut).
const maxNameBytes = 128

func clip(s string) string {
	if len(s) > maxNameBytes {
		return s[:maxNameBytes]
	}
	return s
}

// MCPRequest is what an MCP request span records.
type MCPRequest struct {
	// Method is the JSON-RPC method the SDK dispatched.
	Method string
	// Tool is the registered tool a tools/call named ("" otherwise, or
	// when the name is not registered: a caller's unknown name is not
	// recorded).
	Tool string
	// RPCID is the JSON-RPC id as its JSON text ("" when unknown).
	RPCID string
	// ProtocolVersion is the MCP protocol version of the request.
	ProtocolVersion string
	// Transport is TransportTCP or TransportPipe.
	Transport string
	// RequestID is the HTTP request's id ("" on stdio).
	RequestID string
}

// MCPSpanName is "{mcp.method.name} {target}" with the tool as the
// target of a tools/call, else the method alone.
func MCPSpanName(method, tool string) string {
	if method == methodToolsCall && tool != "" {
		return clip(method) + " " + clip(tool)
	}
	return clip(method)
}

func (m MCPRequest) appendAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(keyMCPMethod, clip(m.Method)))
	if m.Method == methodToolsCall {
		attrs = append(attrs, attribute.String(keyOperation, operationExecuteTool))
		if m.Tool != "" {
			attrs = append(attrs, attribute.String(keyToolName, clip(m.Tool)))
		}
	}
	if m.RPCID != "" {
		attrs = append(attrs, attribute.String(keyJSONRPCID, clip(m.RPCID)))
	}
	if m.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String(keyMCPProtocol, clip(m.ProtocolVersion)))
	}
	if m.Transport != "" {
		attrs = append(attrs, attribute.String(keyNetTransport, m.Transport))
	}
	if m.RequestID != "" {
		attrs = append(attrs, attribute.String(keyRequestID, m.RequestID))
	}
	return attrs
}

// MCPOutcome is how an MCP request ended: RPCErrorCode is the JSON-RPC
// error code of an error response (0: none, HasRPCError false);
// ToolError is true for a tools/call answered with an error result.
type MCPOutcome struct {
	HasRPCError  bool
	RPCErrorCode int64
	ToolError    bool
}

func (o MCPOutcome) appendAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	switch {
	case o.HasRPCError && o.RPCErrorCode != 0:
		return append(attrs, attribute.String(keyErrorType, strconv.FormatInt(o.RPCErrorCode, 10)))
	case o.HasRPCError:
		return append(attrs, attribute.String(keyErrorType, errorOther))
	case o.ToolError:
		return append(attrs, attribute.String(keyErrorType, errorToolError))
	}
	return attrs
}

// HTTPRequest is what an HTTP request span records: the route pattern
// (never the URL path) and the request id. Traceparent is the request's
// W3C traceparent header ("" when none): a well-formed one makes the span
// a child of the caller's span (see StartHTTP); it is not an attribute.
type HTTPRequest struct {
	Method      string
	Route       string
	RequestID   string
	Traceparent string
}

// HTTPSpanName is "{method} {route}", or the method alone when no route
// matched.
func HTTPSpanName(method, route string) string {
	if route == "" {
		return clip(method)
	}
	return clip(method) + " " + clip(route)
}

func (h HTTPRequest) appendAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(keyHTTPMethod, clip(h.Method)), attribute.String(keyRequestID, h.RequestID))
	if h.Route != "" {
		attrs = append(attrs, attribute.String(keyHTTPRoute, clip(h.Route)))
	}
	return attrs
}

// httpStatus is the response status and, for a server error (5xx), its
// error.type (the status code as text, as the HTTP conventions have it).
func appendHTTPStatus(attrs []attribute.KeyValue, code int) []attribute.KeyValue {
	attrs = append(attrs, attribute.Int(keyHTTPStatus, code))
	if code >= 500 {
		attrs = append(attrs, attribute.String(keyErrorType, strconv.Itoa(code)))
	}
	return attrs
}

// ToolSpanName is "execute_tool {gen_ai.tool.name}", or "execute_tool"
// for a name that is not a registered tool.
func ToolSpanName(tool string) string {
	if tool == "" {
		return operationExecuteTool
	}
	return operationExecuteTool + " " + clip(tool)
}

// ToolCall is what a tool execution span records when it ends; every
// member is a fact the kernel decided.
type ToolCall struct {
	// Tool is the registered tool ("" when the name is not registered).
	Tool string
	// Source is the transport the call came by (rest, mcp, ...).
	Source string
	// InvocationID is the call's evidence record id.
	InvocationID string
	// Binding is the evidence binding state (verified, sessionless,
	// invalid_claim, unknown).
	Binding string
	// VerifiedRecorder is the Workflow Session the kernel verified the
	// recorder claim against; "" when none was claimed or the claim was
	// not verified. Only it becomes gen_ai.conversation.id.
	VerifiedRecorder string
	// LeafIndex is the call's evidence record's leaf index in the
	// journal, when it was appended before the call ended (HasLeaf).
	LeafIndex uint64
	HasLeaf   bool
	// ErrorKind is the failure kind of a failed call ("" on success).
	ErrorKind string
}

func (c ToolCall) appendAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(keyOperation, operationExecuteTool))
	if c.Tool != "" {
		attrs = append(attrs, attribute.String(keyToolName, clip(c.Tool)))
	}
	if c.Source != "" {
		attrs = append(attrs, attribute.String(keyCallSource, c.Source))
	}
	if c.InvocationID != "" {
		attrs = append(attrs, attribute.String(keyInvocationID, c.InvocationID))
	}
	if c.Binding != "" {
		attrs = append(attrs, attribute.String(keyEvidenceBinding, c.Binding))
	}
	if c.VerifiedRecorder != "" {
		attrs = append(attrs, attribute.String(keyConversationID, c.VerifiedRecorder))
	}
	if c.HasLeaf {
		attrs = append(attrs, attribute.Int64(keyLeafIndex, int64(c.LeafIndex)))
	}
	if c.ErrorKind != "" {
		attrs = append(attrs, attribute.String(keyErrorType, clip(c.ErrorKind)))
	}
	return attrs
}
