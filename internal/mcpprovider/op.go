package mcpprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds of a request and its result.
const (
	// MaxTools bounds the tools listed from one provider (more are left
	// out, Truncated set).
	MaxTools = 256
	// MaxListPages bounds the tools/list pages read from one provider.
	MaxListPages = 16
	// MaxDescriptionRunes bounds a tool description in a listing.
	MaxDescriptionRunes = 1024
	// MaxArgumentsBytes bounds a call's encoded arguments.
	MaxArgumentsBytes = 256 << 10
)

// The operations of a request.
const (
	OpList     = "list"
	OpDescribe = "describe"
	OpCall     = "call"
)

// Request is one mcp_tool request.
type Request struct {
	Op       string `json:"op"`
	Provider string `json:"provider"`
	Tool     string `json:"tool,omitempty"`
	// Arguments are the tool's arguments (a JSON object).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// SchemaRevision is the revision describe returned; a call names it.
	SchemaRevision string `json:"schema_revision,omitempty"`
}

// Result is one request's answer: Tools for list, Described for
// describe, Call for call.
type Result struct {
	Op        string     `json:"op"`
	Provider  string     `json:"provider"`
	Tools     []ToolInfo `json:"tools,omitempty"`
	Total     int        `json:"total,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	Described *Described `json:"described,omitempty"`
	Call      *Call      `json:"call,omitempty"`
}

// ToolInfo is a tool in a listing.
type ToolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Revision    string `json:"schema_revision"`
}

// Described is a tool's definition as the provider states it and its
// schema revision.
type Described struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"input_schema"`
	OutputSchema any    `json:"output_schema,omitempty"`
	Revision     string `json:"schema_revision"`
}

// Call is a tool's answer, redacted: its content blocks and structured
// content as the provider sent them.
type Call struct {
	Tool              string          `json:"tool"`
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
}

// Revision is the schema revision of t: a digest of its definition as
// the provider states it (name, description, schemas, annotations).
func Revision(t *mcp.Tool) string {
	b, _ := json.Marshal(t)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Do runs req against project p: bad input is refused before any provider
// starts; a call without the current schema revision is describe_required
// and calls nothing.
func (m *Manager) Do(ctx context.Context, p project.Project, req Request) (Result, error) {
	if err := check(req); err != nil {
		return Result{}, err
	}
	if _, _, err := m.provider(p, req.Provider); err != nil {
		return Result{}, err
	}
	if req.Op == OpCall && req.SchemaRevision == "" {
		return Result{}, describeRequired(req, "a call names the schema_revision describe returned")
	}
	in, done, err := m.acquire(ctx, p, req.Provider)
	if err != nil {
		return Result{}, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, m.opt.RequestTimeout)
	defer cancel()
	tools, truncated, err := in.list(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{Op: req.Op, Provider: req.Provider}
	if req.Op == OpList {
		res.Total, res.Truncated = len(tools), truncated
		for _, t := range tools {
			d, _ := redact.Truncate(redact.String(t.Description), MaxDescriptionRunes)
			res.Tools = append(res.Tools, ToolInfo{Name: t.Name, Description: d, Revision: Revision(t)})
		}
		return res, nil
	}
	var tool *mcp.Tool
	for _, t := range tools {
		if t.Name == req.Tool {
			tool = t
		}
	}
	if tool == nil {
		return Result{}, failure.New(failure.UnknownProviderTool, "provider %s has no tool %q (op list names its tools)", req.Provider, req.Tool).
			WithDetail("provider", req.Provider).WithDetail("tool", req.Tool)
	}
	rev := Revision(tool)
	if req.Op == OpDescribe {
		res.Described = &Described{Name: tool.Name, Description: redact.String(tool.Description), InputSchema: tool.InputSchema, OutputSchema: tool.OutputSchema, Revision: rev}
		return res, nil
	}
	if req.SchemaRevision != rev {
		return Result{}, describeRequired(req, "the tool's definition changed since revision "+req.SchemaRevision).WithDetail("schema_revision", rev)
	}
	call, err := in.call(ctx, req)
	if err != nil {
		return Result{}, err
	}
	res.Call = call
	return res, nil
}

// check validates req's shape.
func check(req Request) error {
	switch req.Op {
	case OpList:
	case OpDescribe, OpCall:
		if req.Tool == "" {
			return failure.New(failure.InvalidArguments, "op %s needs tool", req.Op)
		}
	default:
		return failure.New(failure.InvalidArguments, "op %q must be list, describe or call", req.Op)
	}
	if req.Provider == "" {
		return failure.New(failure.InvalidArguments, "provider is required")
	}
	if req.Op != OpCall && (len(req.Arguments) > 0 || req.SchemaRevision != "") {
		return failure.New(failure.InvalidArguments, "arguments and schema_revision belong to op call")
	}
	if len(req.Arguments) > MaxArgumentsBytes {
		return failure.New(failure.RequestTooLarge, "arguments over %d bytes", MaxArgumentsBytes)
	}
	if a := bytes.TrimSpace(req.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) && a[0] != '{' {
		return failure.New(failure.InvalidArguments, "arguments must be a JSON object")
	}
	return nil
}

func describeRequired(req Request, why string) *failure.Error {
	return failure.New(failure.DescribeRequired, "mcp_tool call %s/%s: %s; run op describe and call at its schema_revision", req.Provider, req.Tool, why).
		WithDetail("provider", req.Provider).WithDetail("tool", req.Tool)
}

// list returns the provider's tools, listed once per instance (again
// after the provider says its list changed).
func (in *instance) list(ctx context.Context) ([]*mcp.Tool, bool, error) {
	in.mu.Lock()
	tools, truncated := in.tools, in.truncated
	in.mu.Unlock()
	if tools != nil {
		return tools, truncated, nil
	}
	tools = []*mcp.Tool{}
	params := &mcp.ListToolsParams{}
	for page := 0; ; page++ {
		if page == MaxListPages {
			truncated = true
			break
		}
		r, err := in.session.ListTools(ctx, params)
		if err != nil {
			return nil, false, in.failed(ctx, err, "tools/list", failure.OperationFailed)
		}
		for _, t := range r.Tools {
			if len(tools) == MaxTools {
				truncated = true
				break
			}
			tools = append(tools, t)
		}
		if r.NextCursor == "" || truncated {
			break
		}
		params = &mcp.ListToolsParams{Cursor: r.NextCursor}
	}
	in.mu.Lock()
	in.tools, in.truncated, in.listed = tools, truncated, true
	in.mu.Unlock()
	return tools, truncated, nil
}

// call calls the tool and returns its redacted answer; a tool that
// reports an error is a failure (operation_failed, outcome tool_error)
// carrying the redacted answer.
func (in *instance) call(ctx context.Context, req Request) (*Call, error) {
	var args any
	if a := bytes.TrimSpace(req.Arguments); len(a) > 0 && !bytes.Equal(a, []byte("null")) {
		args = json.RawMessage(a)
	}
	r, err := in.session.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: args})
	if err != nil {
		return nil, in.failed(ctx, err, "tools/call "+req.Tool, failure.OperationFailed)
	}
	c := &Call{Tool: req.Tool}
	if c.Content, err = redacted(r.Content); err != nil {
		return nil, err
	}
	if r.StructuredContent != nil {
		if c.StructuredContent, err = redacted(r.StructuredContent); err != nil {
			return nil, err
		}
	}
	if r.IsError {
		return nil, failure.New(failure.OperationFailed, "provider %s: tool %s reported an error", req.Provider, req.Tool).
			WithDetail("outcome", OutcomeToolError).WithDetail("provider", req.Provider).WithDetail("tool", req.Tool).
			WithDetail("content", c.Content)
	}
	return c, nil
}

// OutcomeToolError: the tool ran and reported an error.
const OutcomeToolError = "tool_error"

// redacted is v encoded with every recognised credential replaced.
func redacted(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, failure.Wrap(failure.OperationFailed, err, "the provider's answer does not encode")
	}
	s := redact.String(string(b))
	if !json.Valid([]byte(s)) {
		return nil, failure.New(failure.OperationFailed, "the provider's answer is not valid JSON once redacted")
	}
	return json.RawMessage(s), nil
}

// lookCommand finds command: a path as given, a name on env's PATH.
func lookCommand(command string, env []string) (string, error) {
	if strings.ContainsRune(command, filepath.Separator) || strings.ContainsRune(command, '/') {
		if _, err := os.Stat(command); err != nil {
			return "", err
		}
		return command, nil
	}
	return runner.LookPath(command, env)
}
