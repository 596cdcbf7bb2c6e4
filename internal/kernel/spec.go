// Package kernel is the tool registry and the one dispatch pipeline that
// every transport (REST, MCP, CLI, tests) calls.
//
// A tool is declared once as a [Spec] with typed input and output; its JSON
// schemas are derived from the Go types, so every transport's view of a tool
// comes from the same declaration and cannot drift.
//
// # Pipeline
//
// [Kernel.Dispatch] runs, in order: tool lookup; strict argument decoding
// (unknown fields and wrong types rejected); scope check; the claims (each
// session id the call names read once and judged once: the business
// session_id, which authorizes the call and may supply its project, and
// the recording_session_id, provenance only, together yielding the
// evidence [Binding]); project resolution; a durable tool_call_started
// record before any mutating tool runs; execution; tool_call_finished; the
// evidence record; and the [Result] envelope with its typed facts. A
// failure at any step before execution changes nothing but the evidence of
// the refusal.
package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/webcodex/webcodex/internal/auth"
)

// Edit surfaces (Spec.EditSurface): the canonical fenced text-edit tool
// agents should prefer, and the advanced whole-file tools.
const (
	EditCanonical = "canonical"
	EditAdvanced  = "advanced"
)

// SessionUse says whether a tool takes a business session_id.
type SessionUse int

// Session uses.
const (
	// SessionNone: the tool takes no business session.
	SessionNone SessionUse = iota
	// SessionOptional: session_id may be given; when given it is
	// authorized and the call is recorded in it with role business.
	SessionOptional
	// SessionRequired: session_id must be given.
	SessionRequired
)

// ProjectScoped is implemented by inputs that name a project.
type ProjectScoped interface{ ProjectID() string }

// SessionScoped is implemented by inputs that name a business session.
type SessionScoped interface{ BusinessSessionID() string }

// ProjectRef is embedded by inputs whose project is required. Its member
// has no description: what a project id is (agent:local:NAME) is said once,
// in the MCP server instructions and docs/tools.md, not in every tool's
// schema (decision 0024).
type ProjectRef struct {
	Project string `json:"project"`
}

// ProjectID implements ProjectScoped.
func (r ProjectRef) ProjectID() string { return r.Project }

// OptionalProjectRef is embedded by inputs that may take the project from
// their business session.
type OptionalProjectRef struct {
	Project string `json:"project,omitempty" jsonschema:"default: the session's project"`
}

// ProjectID implements ProjectScoped.
func (r OptionalProjectRef) ProjectID() string { return r.Project }

// SessionRef is embedded by inputs that optionally name a business session.
// Like ProjectRef's, its member's meaning is said once, not per tool.
type SessionRef struct {
	SessionID string `json:"session_id,omitempty"`
}

// BusinessSessionID implements SessionScoped.
func (r SessionRef) BusinessSessionID() string { return r.SessionID }

// RequiredSessionRef is embedded by inputs that require a business session.
type RequiredSessionRef struct {
	SessionID string `json:"session_id"`
}

// BusinessSessionID implements SessionScoped.
func (r RequiredSessionRef) BusinessSessionID() string { return r.SessionID }

// Annotations are the behavioural hints published with a tool.
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
}

// Spec declares a tool with input In and output Out.
type Spec[In, Out any] struct {
	Name        string
	Description string
	// Category groups tools for telemetry (files, search, edit, git,
	// sessions, ...).
	Category string
	// EditSurface labels file-editing tools for telemetry: EditCanonical
	// or EditAdvanced; "" for every other tool.
	EditSurface string
	// Scopes the caller must all hold.
	Scopes      []auth.Scope
	Annotations Annotations
	// Mutates marks tools that change project files or session state;
	// their tool_call_started is durable before they run.
	Mutates bool
	// Writes marks tools denied in read_only sessions (file writes and
	// shells).
	Writes bool
	// Session says whether the tool takes a business session_id.
	Session SessionUse
	// PreparesBeforeEffect marks a mutating tool whose handler calls
	// Invocation.BeforeEffect before its first effect: it runs while its
	// tool_call_started commits (others run after that commit).
	PreparesBeforeEffect bool
	// Runners marks a tool whose every effect goes through the runner
	// serving the call's project (package workspace). A tool without it is
	// refused, before anything is recorded, on a project a remote runner
	// serves: it would touch this host's filesystem instead.
	Runners bool
	// Handler runs the tool. It returns a *failure.Error for expected
	// failures.
	Handler func(ctx context.Context, inv *Invocation, in In) (Out, error)
}

// Tool is a registered tool with its erased handler and derived schemas.
type Tool struct {
	Name         string
	Description  string
	Category     string
	EditSurface  string
	Scopes       []auth.Scope
	Annotations  Annotations
	Mutates      bool
	Writes       bool
	Session      SessionUse
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema

	// PreparesBeforeEffect is Spec.PreparesBeforeEffect (mutating tools).
	PreparesBeforeEffect bool
	// Runners is Spec.Runners.
	Runners bool

	resolved *jsonschema.Resolved
	decode   func(raw json.RawMessage) (any, error)
	run      func(ctx context.Context, inv *Invocation, in any) (any, error)
}

var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// A Checker is a tool input with a rule its schema does not state (a value
// the schema admits but this server cannot serve). Check runs right after
// the input decodes, before the scope check, the project, the session and
// any recording, so its refusal is a parse failure: nothing is resolved,
// recorded or changed, and the caller gets the *failure.Error it returns.
type Checker interface {
	Check() error
}

// Register adds a tool to r. It panics on an invalid declaration (a
// programming error, found at start-up).
func Register[In, Out any](r *Registry, s Spec[In, Out]) {
	if !toolNameRE.MatchString(s.Name) {
		panic(fmt.Sprintf("kernel: invalid tool name %q", s.Name))
	}
	if s.Handler == nil || s.Description == "" {
		panic(fmt.Sprintf("kernel: tool %s needs a handler and a description", s.Name))
	}
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("kernel: tool %s input schema: %v", s.Name, err))
	}
	out, err := jsonschema.For[Out](&jsonschema.ForOptions{TypeSchemas: outputTypeSchemas})
	if err != nil {
		panic(fmt.Sprintf("kernel: tool %s output schema: %v", s.Name, err))
	}
	shape, err := shapeOutput[Out](out)
	if err != nil {
		panic(fmt.Sprintf("kernel: tool %s: %v", s.Name, err))
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("kernel: tool %s input schema: %v", s.Name, err))
	}
	var zero In
	_, sessionScoped := any(zero).(SessionScoped)
	if (s.Session != SessionNone) != sessionScoped {
		panic(fmt.Sprintf("kernel: tool %s: Session use and SessionScoped input disagree", s.Name))
	}
	t := &Tool{
		Name: s.Name, Description: s.Description, Category: s.Category, EditSurface: s.EditSurface,
		Scopes: s.Scopes, Annotations: s.Annotations, Mutates: s.Mutates,
		Writes: s.Writes, Session: s.Session, Runners: s.Runners,
		InputSchema: in, OutputSchema: out, resolved: resolved,
	}
	t.PreparesBeforeEffect = s.PreparesBeforeEffect && s.Mutates
	t.decode = func(raw json.RawMessage) (any, error) {
		var v In
		if err := decodeStrict(raw, resolved, &v); err != nil {
			return nil, err
		}
		if c, ok := any(v).(Checker); ok {
			if err := c.Check(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	t.run = func(ctx context.Context, inv *Invocation, in any) (any, error) {
		out, err := s.Handler(ctx, inv, in.(In))
		shape.apply(&out)
		return out, err
	}
	r.add(t)
}

// SchemaMap returns schema as a generic JSON object, a fresh copy on every
// call that the caller may modify (for example to add transport-specific
// members). A nil or non-object schema becomes {"type":"object"}.
func SchemaMap(schema any) map[string]any {
	b, _ := json.Marshal(schema)
	var m map[string]any
	json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{"type": "object"}
	}
	return m
}
