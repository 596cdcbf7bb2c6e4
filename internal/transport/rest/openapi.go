package rest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// MaxActionOperations is the most operations a GPT Action may declare; the
// default /openapi.json stays within it.
const MaxActionOperations = 30

// DefaultCategories are the tool categories the default /openapi.json
// describes: what a GPT Action needs to carry a task (sessions, files,
// search, edit, git, processes and jobs, validation). Tools of any other
// category (today the persistent session shells) are left out of the
// default document and named in its info.description, with the
// ?tools= query that describes them.
var DefaultCategories = []string{"sessions", "files", "search", "edit", "git", "exec", "validate"}

// AllTools is the ?tools= value that selects every registered tool, for
// OpenAPI clients without the GPT Actions limit.
const AllTools = "all"

// DefaultTools splits the registry into the tools of the default document
// and the rest, both sorted by name.
func DefaultTools(reg *kernel.Registry) (in, out []*kernel.Tool) {
	for _, t := range reg.Tools() {
		if slices.Contains(DefaultCategories, t.Category) {
			in = append(in, t)
		} else {
			out = append(out, t)
		}
	}
	return in, out
}

// OpenAPI returns the OpenAPI 3.1 document describing tools: one
// POST /api/actions/{tool} operation per tool (operationId = tool name)
// whose request body is the tool's input schema plus optional
// recording_session_id and ack_session_message_ids, and whose 200 response is the ToolResult envelope:
// either {success: true, output: <the tool's output schema>} or
// {success: false, output: {failure_kind, recovery_kind, state_changed,
// ...}, error: {kind, message}}, told apart by the success constant.
// description becomes info.description.
func OpenAPI(tools []*kernel.Tool, serverURL, version, description string) map[string]any {
	paths := map[string]any{}
	for _, t := range tools {
		in := kernel.SchemaMap(t.InputSchema)
		props, _ := in["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			in["properties"] = props
		}
		props["recording_session_id"] = map[string]any{
			"type":        "string",
			"description": "exact wc_sess_ id to record this call in (provenance only)",
		}
		props["ack_session_message_ids"] = map[string]any{
			"type": "array", "maxItems": workflow.MaxAckIDs, "items": map[string]any{"type": "string"},
			"description": "ACK-required wc_msg_ ids from session_attention",
		}
		paths["/api/actions/"+t.Name] = map[string]any{
			"post": map[string]any{
				"operationId": t.Name,
				"summary":     firstSentence(t.Description),
				"description": t.Description,
				"requestBody": map[string]any{
					"required": true,
					"content":  map[string]any{"application/json": map[string]any{"schema": in}},
				},
				"responses": map[string]any{
					"200": map[string]any{
						"description": "ToolResult: success=true with the tool's output, or success=false with error {kind, message} and the failure facts as output",
						"content":     jsonContent(toolResultSchema(t)),
					},
					"400": map[string]any{
						"description": "the request body is not a JSON object (the tool did not run)",
						"content":     jsonContent(envelopeErrorSchema()),
					},
					"401": map[string]any{
						"description": "missing or invalid bearer credential",
						"content":     jsonContent(envelopeErrorSchema()),
					},
					"413": map[string]any{
						"description": "the request body is too large (the tool did not run)",
						"content":     jsonContent(envelopeErrorSchema()),
					},
				},
			},
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "WebCodex",
			"version":     version,
			"description": description,
		},
		"paths": paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	if serverURL != "" {
		doc["servers"] = []any{map[string]any{"url": serverURL}}
	}
	return doc
}

func jsonContent(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// toolResultSchema is the 200 body of t: two closed shapes told apart by
// the success constant, so exactly one matches any real result.
func toolResultSchema(t *kernel.Tool) map[string]any {
	return map[string]any{
		"anyOf": []any{
			map[string]any{
				"type":     "object",
				"required": []string{"success", "output"},
				"properties": map[string]any{
					"success":           map[string]any{"const": true},
					"output":            kernel.SchemaMap(t.OutputSchema),
					"warnings":          warningsSchema(),
					"session_attention": attentionSchema(),
					// The window plane's ambient blocks (docs/tools.md).
					"peer_messages":       attentionSchema(),
					"peer_awareness":      attentionSchema(),
					"recorder_continuity": attentionSchema(),
					// Declared intents' overlap notice (decision 0079).
					"overlap": attentionSchema(),
					// The read set's block (decision 0080).
					"changed_since_read": attentionSchema(),
				},
				"additionalProperties": false,
			},
			map[string]any{
				"type":     "object",
				"required": []string{"success", "output", "error"},
				"properties": map[string]any{
					"success":           map[string]any{"const": false},
					"output":            failureOutputSchema(),
					"error":             errorSchema(),
					"warnings":          warningsSchema(),
					"session_attention": attentionSchema(),
					// The window plane's ambient blocks (docs/tools.md).
					"peer_messages":       attentionSchema(),
					"peer_awareness":      attentionSchema(),
					"recorder_continuity": attentionSchema(),
					// Declared intents' overlap notice (decision 0079).
					"overlap": attentionSchema(),
					// The read set's block (decision 0080).
					"changed_since_read": attentionSchema(),
				},
				"additionalProperties": false,
			},
		},
	}
}

// failureOutputSchema is the output of a failed call: the failure facts,
// plus the kind-specific details of the error.
func failureOutputSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []string{"failure_kind", "recovery_kind", "state_changed"},
		"properties": map[string]any{
			"failure_kind":  map[string]any{"type": "string"},
			"recovery_kind": map[string]any{"type": "string"},
			"state_changed": map[string]any{"type": "boolean", "description": "whether the failed call changed project files or session state"},
		},
	}
}

func errorSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []string{"kind", "message"},
		"properties": map[string]any{
			"kind":    map[string]any{"type": "string"},
			"message": map[string]any{"type": "string"},
		},
		"additionalProperties": false,
	}
}

// warningsSchema: facts not part of the tool's result, e.g. an evidence gap.
func warningsSchema() map[string]any {
	return map[string]any{"type": "array", "items": errorSchema()}
}

// attentionSchema: the recording session's board attention, added after
// the effect (workflow.Attention).
func attentionSchema() map[string]any {
	return map[string]any{"type": "object"}
}

// envelopeErrorSchema is the body of a request refused before any tool ran
// (httpserver.ErrorBody).
func envelopeErrorSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []string{"success", "error"},
		"properties": map[string]any{
			"success": map[string]any{"const": false},
			"error":   errorSchema(),
		},
		"additionalProperties": false,
	}
}

func firstSentence(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

const baseDescription = "Tools for AI coding agents on registered projects, with Workflow Session ledgers."

// defaultDescription says which tools the default document leaves out and
// the exact URL that describes them.
func defaultDescription(docURL string, in, out []*kernel.Tool) string {
	if len(out) == 0 {
		return baseDescription
	}
	names := make([]string, len(out))
	for i, t := range out {
		names[i] = t.Name
	}
	return fmt.Sprintf("%s This document describes %d of the %d tools, to stay within the %d operations a GPT Action accepts. "+
		"Left out: %s. Import them as a second action from %s?tools=%s; %s?tools=%s describes every tool, "+
		"and ?tools=a,b,c any chosen set.",
		baseDescription, len(in), len(in)+len(out), MaxActionOperations,
		strings.Join(names, ", "), docURL, strings.Join(names, ","), docURL, AllTools)
}

// openAPI serves /openapi.json: by default the tools of DefaultCategories;
// ?tools=a,b,c selects those tools (unknown names are an error, so a typo
// cannot silently drop an operation) and ?tools=all every tool.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	url := s.PublicURL
	if url == "" {
		url = "http://" + r.Host
	}
	url = strings.TrimSuffix(url, "/")
	reg := s.Kernel.Registry()
	q := r.URL.Query().Get("tools")
	var tools []*kernel.Tool
	var desc string
	switch q {
	case "":
		in, out := DefaultTools(reg)
		tools, desc = in, defaultDescription(url+"/openapi.json", in, out)
	case AllTools:
		tools, desc = reg.Tools(), baseDescription+" This document describes every tool."
	default:
		for _, name := range strings.Split(q, ",") {
			t, ok := reg.Lookup(strings.TrimSpace(name))
			if !ok {
				httpserver.WriteError(w, http.StatusBadRequest, failure.New(failure.InvalidArguments, "unknown tool %q in tools=", strings.TrimSpace(name)))
				return
			}
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
		desc = fmt.Sprintf("%s This document describes the %d tools chosen with ?tools=.", baseDescription, len(tools))
	}
	httpserver.WriteJSON(w, http.StatusOK, OpenAPI(tools, url, s.Version, desc))
}
