// Package mcpserver is the MCP transport: every kernel tool becomes an MCP
// tool on one official go-sdk server, served statelessly over Streamable HTTP
// at /mcp (modern 2026-07-28 and legacy 2025-11-25 clients on one endpoint)
// and over stdio.
//
// The transport adds nothing to dispatch: a tools/call is stripped of its
// wrapper metadata (recording_session_id, ack_session_message_ids, and on
// 2026-07-28 only context_request) by wrapper.Split, turned into a
// kernel.Call and answered with the kernel's Result.Body as the first text
// block (the bytes of the evidence result_digest), any warnings and context
// as a second one, and the ToolResult as structuredContent. Wrapper metadata
// exists only here; REST and OpenAPI never see it. No protocol session,
// Mcp-Session-Id or host window ever selects a Workflow Session.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/telemetry"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// Protocol eras as recorded for audit.
const (
	EraModern = "stateless_2026"
	EraLegacy = "legacy"
)

// modernVersion is the first protocol version of the stateless era.
const modernVersion = "2026-07-28"

// ToolsListTTLMs is the cache lifetime advertised on tools/list and
// server/discover: the tool set is fixed for the life of the process.
const ToolsListTTLMs = 5 * 60 * 1000

// Options configure a Server.
type Options struct {
	Kernel *kernel.Kernel
	// Projects resolves the project of a project.instructions request.
	Projects kernel.ProjectResolver
	Logger   *slog.Logger
	Version  string
	// Local is the principal of stdio calls (the local user).
	Local auth.Principal
	// Profile is the set of tools tools/list shows besides the gateway
	// tools (decision 0024); the zero Profile lists every tool. Every
	// tool is callable whatever the profile.
	Profile gateway.Profile
	// Memory projects the memory.bootstrap material; nil leaves it
	// unavailable.
	Memory MemoryProjector
	// Skills projects the skills.catalog material; nil leaves it
	// unavailable (no_runtime).
	Skills SkillCatalog
	// Tracing, when set, gets a span per MCP request (see trace); nil is
	// tracing off.
	Tracing *telemetry.Tracing
	// Plugins projects the plugins.catalog material; nil leaves it
	// unavailable (no_runtime).
	Plugins PluginCatalog
}

// Server is the MCP transport over one kernel.
type Server struct {
	opts Options
	mcp  *mcp.Server
	log  *slog.Logger
	// modern and legacy hold each kernel tool as a modern (2026-07-28)
	// and a legacy (2025-11-25) client lists it: legacy without the
	// context_request wrapper member.
	modern, legacy map[string]*mcp.Tool
	// profile decides which tools tools/list shows; listed is how many
	// it shows, gateway tools included.
	profile gateway.Profile
	listed  int
	// tokenProfiles caches the resolved tool profiles of tokens that have
	// their own (auth.Principal.Tools), by their names.
	tokenProfiles sync.Map
	// toolsBytes is the size of the encoded tool list per era, measured
	// once at New for the audit trail's tools/list surface.
	toolsBytes map[string]int64
}

// ToolResult is the structuredContent of every tools/call: the kernel's
// ToolResult plus, when requested, the context sidecar.
type ToolResult struct {
	Success bool              `json:"success"`
	Output  any               `json:"output"`
	Error   *kernel.ErrorBody `json:"error,omitempty"`
	// Warnings are the kernel's warnings (an evidence gap).
	Warnings []kernel.Warning `json:"warnings,omitempty"`
	// Context holds the materials asked for with context_request, added
	// after the tool's effect; it never gates the call.
	Context map[string]Material `json:"context,omitempty"`
	// Projections are the kernel's ambient blocks (session_attention).
	kernel.Projections
}

var instructions = "WebCodex tools act on registered projects: project is a project id like agent:local:NAME. " +
	"Start or continue a task with work_on_project; pass the returned session_id (an exact wc_sess_ id) to later calls " +
	"as session_id where a tool takes one (the call is authorized by and recorded in that session), else as recording_session_id. " +
	"Sessions are continued only by exact id. " +
	"tools/list shows a profile of the tools; list_tools names them all, describe_tool gives one's schema, call_tool calls any by name. " +
	"ack_session_message_ids takes wc_msg_ ids to acknowledge; context_request (2026-07-28 only) takes material keys: " +
	strings.Join(knownMaterials, ", ") + "."

// New builds the MCP server with every tool of the kernel's registry.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: o, log: o.Logger, profile: o.Profile}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "webcodex", Title: "WebCodex", Version: o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(o.Logger),
		// Declared truthfully: tools (a fixed set), and empty prompt and
		// resource lists, which the SDK answers whether declared or not.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
		},
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = ToolsListTTLMs
			c.CacheScope = "public"
			// A token with its own tool profile gets its own list.
			if _, own := s.profileOf(s.requestPrincipal(req)); own {
				c.CacheScope = "private"
			}
		},
	})
	s.modern, s.legacy = map[string]*mcp.Tool{}, map[string]*mcp.Tool{}
	var modern, legacy []*mcp.Tool
	for _, t := range o.Kernel.Registry().Tools() {
		mt := mcpTool(t, true)
		s.mcp.AddTool(dispatchTool(mt), s.handler(t))
		s.modern[t.Name], s.legacy[t.Name] = mt, mcpTool(t, false)
		if s.profile.Listed(t.Name) {
			modern, legacy = append(modern, mt), append(legacy, s.legacy[t.Name])
		}
	}
	s.addGateway()
	for _, n := range gateway.Names {
		modern, legacy = append(modern, gatewayTools[n]), append(legacy, gatewayTools[n])
	}
	s.listed = len(modern)
	s.toolsBytes = map[string]int64{EraModern: encodedLen(modern), EraLegacy: encodedLen(legacy)}
	s.mcp.AddReceivingMiddleware(s.trace, report, s.listForEra, encodeResults)
	return s
}

// encodeResults hands the SDK every tools/call result as an
// encodedResult, which encodes itself in one pass. It is the innermost of
// the server's middleware, so nothing of WebCodex sees the wrapper.
func encodeResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
			return encodedResult{r}, nil
		}
		return res, err
	}
}

// encodedResult is a CallToolResult whose JSON is the bytes the SDK's own
// encoding produces, written without re-scanning the content: the SDK's
// CallToolResult.MarshalJSON marshals each text block and the
// structuredContent through nested json.Marshal calls, and encoding/json
// re-validates and re-compacts the output of every nested marshaler, so a
// 4 KiB read was scanned once per level. Here each text is escaped once,
// the structuredContent bytes (res.Body, already compact) are copied with
// the HTML escaping json.Marshal applies to them, and only the small
// envelope (isError, resultType) is marshaled by the SDK.
type encodedResult struct{ *mcp.CallToolResult }

// MarshalJSON returns the result's encoding, byte for byte the one of
// CallToolResult.MarshalJSON.
func (r encodedResult) MarshalJSON() ([]byte, error) {
	return encodeCallResult(r.CallToolResult)
}

// envelopeHead is how the SDK's encoding of a CallToolResult with no
// content, no structuredContent and no _meta begins; what follows it is
// the envelope's other members.
const envelopeHead = `{"content":null`

// encodeCallResult encodes r as CallToolResult.MarshalJSON does. Results
// of another shape than the transport's own (text blocks without _meta or
// annotations, raw structuredContent, no _meta, input requests or request
// state) are left to the SDK.
func encodeCallResult(r *mcp.CallToolResult) ([]byte, error) {
	structured, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(structured) == 0 || len(r.Content) == 0 || len(r.Meta) > 0 || r.InputRequests != nil || r.RequestState != "" {
		return r.MarshalJSON()
	}
	texts := make([]string, len(r.Content))
	size := len(structured) + 64
	for i, c := range r.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || len(t.Meta) > 0 || t.Annotations != nil {
			return r.MarshalJSON()
		}
		texts[i] = t.Text
		size += len(t.Text) + len(t.Text)/8 + 32
	}
	env := *r
	env.Content, env.StructuredContent = nil, nil
	tail, err := env.MarshalJSON()
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(tail, []byte(envelopeHead))
	if !ok {
		return r.MarshalJSON()
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+len(rest)))
	buf.WriteString(`{"content":[`)
	for i, t := range texts {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"type":"text","text":`)
		q, err := json.Marshal(t) // escapes HTML, as json.Marshal of the block does
		if err != nil {
			return nil, err
		}
		buf.Write(q)
		buf.WriteByte('}')
	}
	buf.WriteString(`],"structuredContent":`)
	json.HTMLEscape(buf, structured)
	buf.Write(rest)
	return buf.Bytes(), nil
}

// CompactInputSchemas says whether tools/list strips descriptions from
// input schemas (output schemas are always compacted): it does not, so
// models see every argument's documentation.
const CompactInputSchemas = false

// report tells the audit trail what the SDK dispatched: the method, the
// tool of a tools/call (as the SDK parsed it) and whether the answer is a
// JSON-RPC error. It is the outermost receiving middleware.
func report(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		tool := ""
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil {
			tool = ct.Params.Name
		}
		auditmw.ReportMethod(ctx, method, tool, err != nil)
		return res, err
	}
}

// listForEra serves each era its own tool list: the profile's tools and
// the gateway tools; a legacy (before 2026-07-28) tools/list gets the
// input schemas without context_request.
// It then measures the list for the audit trail: tool count and the sizes
// of the result as the SDK encodes it (no HTML escaping), never the tools.
func (s *Server) listForEra(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || method != "tools/list" {
			return res, err
		}
		version := ""
		if lt, ok := req.(*mcp.ListToolsRequest); ok {
			version = lt.ProtocolVersion()
		}
		listEra := era(version)
		profile, own := s.profileOf(s.requestPrincipal(req))
		shown := *lr
		shown.Tools = make([]*mcp.Tool, 0, s.listed)
		for _, t := range lr.Tools {
			_, kernelTool := s.legacy[t.Name]
			switch {
			case kernelTool && !profile.Listed(t.Name):
			case kernelTool && listEra == EraLegacy:
				shown.Tools = append(shown.Tools, s.legacy[t.Name])
			case kernelTool:
				// The SDK holds the dispatch copy (dispatchTool).
				shown.Tools = append(shown.Tools, s.modern[t.Name])
			default:
				shown.Tools = append(shown.Tools, t)
			}
		}
		lr = &shown
		var answer mcp.Result = lr
		if listEra == EraLegacy {
			answer = legacyToolsList{lr}
		}
		// The tools are fixed for the life of the process: their encoded
		// size per era was measured once (toolsBytes); only the rest of
		// the result (cursor, cache hints) is encoded here.
		toolsBytes := s.toolsBytes[listEra]
		if own || len(lr.Tools) != s.listed {
			toolsBytes = -1
		}
		rest := *lr
		rest.Tools = nil
		var shellOf any = &rest
		if listEra == EraLegacy {
			shellOf = legacyToolsList{&rest}
		}
		shell, err1 := httpserver.EncodeJSON(shellOf)
		if toolsBytes < 0 {
			tb, err2 := httpserver.EncodeJSON(lr.Tools)
			toolsBytes, err1 = int64(len(tb)), errors.Join(err1, err2)
		}
		if err1 == nil {
			auditmw.ReportToolsList(ctx, audit.ToolSurface{
				ProtocolEra: listEra, CompactSchemas: CompactInputSchemas, ToolCount: len(lr.Tools),
				// shell holds "tools":null in place of the tools.
				SerializedToolsBytes: toolsBytes, SerializedResultBytes: int64(len(shell)) - int64(len("null")) + toolsBytes,
				GatewayToolIncluded: true,
			})
		}
		return answer, nil
	}
}

// legacyToolsList is a tools/list result as a legacy (before 2026-07-28)
// client gets it: the members of its protocol version only (tools,
// nextCursor, _meta), without the 2026-07-28 cache hints ttlMs and
// cacheScope, which the SDK sets on every list result (decision 0046).
type legacyToolsList struct{ *mcp.ListToolsResult }

// MarshalJSON encodes the legacy members of the result.
func (r legacyToolsList) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta       mcp.Meta    `json:"_meta,omitempty"`
		NextCursor string      `json:"nextCursor,omitempty"`
		Tools      []*mcp.Tool `json:"tools"`
	}{r.Meta, r.NextCursor, r.Tools})
}

// encodedLen is the size of tools as the SDK encodes a tools/list (sorted
// by name, as the SDK lists them), or -1 when they cannot be encoded.
func encodedLen(tools []*mcp.Tool) int64 {
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	b, err := httpserver.EncodeJSON(tools)
	if err != nil {
		return -1
	}
	return int64(len(b))
}

// sdkLogger keeps the SDK's warnings and errors and drops its per-request
// lifecycle messages: a stateless server "connects" a session on every POST.
func sdkLogger(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.min}
}

func (h minLevel) WithGroup(g string) slog.Handler { return minLevel{h.Handler.WithGroup(g), h.min} }

// MCP returns the underlying go-sdk server.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// ServeStdio serves MCP on standard input and output until ctx ends or
// input ends and every request read has been answered (see StdioTransport).
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ServeStream(ctx, os.Stdin, os.Stdout)
}

// ServeStream serves MCP on in and out as ServeStdio does on standard
// input and output.
func (s *Server) ServeStream(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.mcp.Run(ctx, &StdioTransport{In: in, Out: out, Logger: s.log})
}

func (s *Server) handler(t *kernel.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p, ok := s.principal(req)
		if !ok {
			return refused(ctx, t, failure.New(failure.Unauthenticated, "no authenticated principal")), nil
		}
		callEra := era(req.ProtocolVersion())
		args, w, err := splitArguments(req.Params.Arguments, callEra == EraModern)
		call := kernel.Call{
			Tool: t.Name, Arguments: args, RecordingSessionID: w.recorder, AckMessageIDs: w.acks,
			Principal: p, Source: kernel.SourceMCP, ProtocolEra: callEra,
			ClientWindow: clientWindow(req.Params.Meta, p),
			// An envelope the splitter refused is refused by the kernel,
			// which records it.
			Refusal: err,
		}
		if name, version, ok := clientInfo(req); ok {
			call.ClientName = clipTo(name+"/"+version, 128)
		}
		if req.Extra != nil && req.Extra.Header != nil {
			call.UserAgent = clipTo(req.Extra.Header.Get("User-Agent"), 256)
		}
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			call.Progress = func(progress, total float64, message string) {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: progress, Total: total, Message: message,
				}); err != nil {
					s.log.Debug("progress notification", "tool", t.Name, "err", err)
				}
			}
		}
		res := s.opts.Kernel.Dispatch(ctx, call)
		var materials map[string]Material
		if len(w.context) > 0 && err == nil {
			materials = s.materials(ctx, p, args, w.context)
		}
		auditmw.ReportTool(ctx, t, res)
		auditmw.ReportWindow(ctx, windowFacts(call, res))
		return result(res, materials), nil
	}
}

// clientInfo returns the calling client's name and version, as
// req.ClientInfo() does. A modern-era request carries them in its _meta as
// a generic JSON object, which ClientInfo re-encodes and decodes (with a
// 32 KiB decoder buffer) on every call; when that object holds only the
// Implementation's string members, under their exact names, the strings
// are taken as they are, which is what that decoding gives. Anything else
// goes through ClientInfo.
func clientInfo(req *mcp.CallToolRequest) (name, version string, ok bool) {
	if req.Params != nil {
		if m, isMap := req.Params.Meta[mcp.MetaKeyClientInfo].(map[string]any); isMap {
			if name, version, ok := plainImplementation(m); ok {
				return name, version, true
			}
		}
	}
	if ci := req.ClientInfo(); ci != nil {
		return ci.Name, ci.Version, true
	}
	return "", "", false
}

// plainImplementation reads name and version from m when every member of m
// is a string member of mcp.Implementation (false otherwise).
func plainImplementation(m map[string]any) (name, version string, ok bool) {
	for k, v := range m {
		s, isString := v.(string)
		if !isString {
			return "", "", false
		}
		switch k {
		case "name":
			name = s
		case "version":
			version = s
		case "title", "description", "websiteUrl":
		default:
			return "", "", false
		}
	}
	return name, version, true
}

// principal returns the caller: the bearer principal on HTTP, the local
// user on stdio.
func (s *Server) principal(req *mcp.CallToolRequest) (auth.Principal, bool) {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		p, ok := req.Extra.TokenInfo.Extra[principalKey].(auth.Principal)
		return p, ok
	}
	if req.Extra != nil && req.Extra.Header != nil {
		return auth.Principal{}, false // HTTP without a verified credential
	}
	return s.opts.Local, s.opts.Local.ID != ""
}

func era(version string) string {
	if version >= modernVersion {
		return EraModern
	}
	return EraLegacy
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// refused renders a call of tool t the transport refused before dispatch
// (a pre-result rejection for audit).
func refused(ctx context.Context, t *kernel.Tool, err error) *mcp.CallToolResult {
	res := kernel.Failure(err)
	auditmw.ReportTool(ctx, t, res)
	return result(res, nil)
}

// Sidecar is the second text content block of a tools/call, present only
// when the call has warnings, requested context or ambient projections
// (session_attention): what is not the tool's own {success, output, error}.
type Sidecar struct {
	Warnings []kernel.Warning    `json:"warnings,omitempty"`
	Context  map[string]Material `json:"context,omitempty"`
	kernel.Projections
}

// result renders a kernel Result as an MCP CallToolResult:
//   - the first content block's text is res.Body verbatim, the
//     {success, output, error} bytes whose SHA-256 is the evidence
//     record's result_digest;
//   - a second text block holds the Sidecar (warnings, context,
//     session_attention) when there is one;
//   - structuredContent is the ToolResult: res.Body's members plus, when
//     present, warnings, context and session_attention;
//   - isError is set when the call failed.
func result(res kernel.Result, materials map[string]Material) *mcp.CallToolResult {
	body := res.Body
	if body == nil {
		res = kernel.Failure(failure.New(failure.Internal, "result not serializable"))
		body = res.Body
	}
	r := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           !res.Success,
	}
	if len(res.Warnings) == 0 && len(materials) == 0 && res.Projections.Empty() {
		return r
	}
	side, err := httpserver.EncodeJSON(Sidecar{Warnings: res.Warnings, Context: materials, Projections: res.Projections})
	if err != nil {
		return r
	}
	full, ok := joinObjects(body, side)
	if !ok {
		full, err = httpserver.EncodeJSON(ToolResult{Success: res.Success, Output: res.Output, Error: res.Error, Warnings: res.Warnings,
			Context: materials, Projections: res.Projections})
		if err != nil {
			return r
		}
	}
	r.Content = append(r.Content, &mcp.TextContent{Text: string(side)})
	r.StructuredContent = json.RawMessage(full)
	return r
}

// joinObjects returns the members of JSON object a followed by those of
// JSON object b as one object, the bytes of encoding a struct whose fields
// are a's then b's: the ToolResult is the Body's {success, output, error}
// followed by the Sidecar's members, so it is built from the bytes
// already encoded instead of encoding the tool's output a second time.
// ok is false when either is not an encoded object.
func joinObjects(a, b []byte) (joined []byte, ok bool) {
	if len(a) < 2 || a[0] != '{' || a[len(a)-1] != '}' || len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	switch {
	case len(b) == 2:
		return a, true
	case len(a) == 2:
		return b, true
	}
	joined = make([]byte, 0, len(a)+len(b)-1)
	joined = append(joined, a[:len(a)-1]...)
	joined = append(joined, ',')
	return append(joined, b[1:]...), true
}

// mcpTool describes a kernel tool for tools/list: its input schema with the
// wrapper members added (context_request only when modern), the ToolResult
// envelope as output schema, and its annotations (local projects: never
// open-world).
func mcpTool(t *kernel.Tool, modern bool) *mcp.Tool {
	closed := false
	// destructiveHint means something only for a tool that is not
	// read-only (its default is true).
	var destructive *bool
	if !t.Annotations.ReadOnly {
		destructive = &t.Annotations.Destructive
	}
	out := map[string]any{
		"type":     "object",
		"required": []string{"success", "output"},
		"properties": map[string]any{
			"success": map[string]any{"type": "boolean"},
			"output":  outline(kernel.SchemaMap(t.OutputSchema)),
			"error":   map[string]any{"type": "object"},
		},
	}
	if modern {
		out["properties"].(map[string]any)["context"] = map[string]any{"type": "object"}
	}
	// Schemas are serialized once here, not on every tools/list.
	in, _ := json.Marshal(inputSchema(t, modern))
	outB, _ := json.Marshal(out)
	return &mcp.Tool{
		Name:         t.Name,
		Description:  t.Description,
		InputSchema:  json.RawMessage(in),
		OutputSchema: json.RawMessage(outB),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnly,
			DestructiveHint: destructive,
			IdempotentHint:  t.Annotations.Idempotent,
			OpenWorldHint:   &closed,
		},
	}
}

// dispatchInputSchema is the input schema of the copy of a kernel tool
// the SDK dispatches: an object, with no x-mcp-header annotation.
var dispatchInputSchema = json.RawMessage(`{"type":"object"}`)

// dispatchTool returns the copy of t registered with the SDK, which uses
// a registered tool's input schema on a call for one thing only: on every
// Streamable HTTP tools/call it re-encodes and re-decodes the whole schema
// to find x-mcp-header annotations (about 70 µs and 25 KiB of garbage for
// read_files). The kernel validates arguments against its own schema and
// tools/list serves t itself (listForEra), so the copy's schema is the
// bare object, which binds the same headers as t's: none. A schema that
// declares x-mcp-header keeps it (the SDK then checks those headers).
func dispatchTool(t *mcp.Tool) *mcp.Tool {
	raw, _ := t.InputSchema.(json.RawMessage)
	if raw == nil || bytes.Contains(raw, []byte(`"x-mcp-header"`)) {
		return t
	}
	d := *t
	d.InputSchema = dispatchInputSchema
	return &d
}

func inputSchema(t *kernel.Tool, modern bool) map[string]any {
	in := kernel.SchemaMap(t.InputSchema)
	props, _ := in["properties"].(map[string]any)
	props = maps.Clone(props)
	if props == nil {
		props = map[string]any{}
	}
	props[fieldRecorder] = map[string]any{"type": "string", "maxLength": MaxRecordingSessionIDBytes}
	props[fieldAcks] = map[string]any{"type": "array", "maxItems": MaxAckIDs, "items": map[string]any{"type": "string"}}
	if modern {
		props[fieldContext] = map[string]any{"type": "array", "maxItems": MaxContextKeys, "items": map[string]any{"type": "string"}}
	}
	in["properties"] = props
	Portable(in)
	return in
}

// principalKey is where the HTTP bearer verifier leaves the principal in
// the go-sdk TokenInfo.
const principalKey = "webcodex.principal"

// Handler returns the stateless Streamable HTTP handler for /mcp. It must be
// mounted on the httpserver.Mux as an authenticated route: the Mux puts the
// principal in the request context (auth.WithPrincipal) and reads the body
// once (httpserver.Body); maxBody is the SDK's own bound over the same
// bytes. A tools/call of a tool whose scopes the caller lacks is answered
// 403 with a step-up challenge before the SDK sees it (stepUp).
func (s *Server) Handler(maxBody int64) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		Logger:                       sdkLogger(s.log),
		MaxRequestBodyBytes:          maxBody,
	})
	return sdkauth.RequireBearerToken(principalFromRequest, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(prefilter(s.rpcID(s.stepUp(h))))
}
