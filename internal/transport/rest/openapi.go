package rest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
)

// OpenAPI returns the OpenAPI 3.1 document for the registry: one
// POST /api/actions/{tool} operation per tool (operationId = tool name) whose
// request body is the tool's input schema plus optional
// recording_session_id, and whose response is the ToolResult envelope with
// the tool's output schema.
//
// only, when non-empty, keeps just the named tools: GPT Actions accept at
// most MaxActionOperations operations per action, so a larger registry is
// imported as several actions or a chosen subset.
func OpenAPI(reg *kernel.Registry, serverURL, version string, only ...string) map[string]any {
	paths := map[string]any{}
	for _, t := range reg.Tools() {
		if len(only) > 0 && !slices.Contains(only, t.Name) {
			continue
		}
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
						"description": "ToolResult: success with output, or success=false with error {kind, message}",
						"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
							"type":     "object",
							"required": []string{"success", "output"},
							"properties": map[string]any{
								"success": map[string]any{"type": "boolean"},
								"output":  map[string]any{"oneOf": []any{kernel.SchemaMap(t.OutputSchema), map[string]any{"type": "object"}}},
								"error":   errorSchema,
								// Facts not part of the tool's result, e.g. an evidence gap.
								"warnings": map[string]any{"type": "array", "items": errorSchema},
							},
						}}},
					},
					"401": map[string]any{"description": "missing or invalid bearer credential"},
				},
			},
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "WebCodex",
			"version":     version,
			"description": "Tools for AI coding agents on registered projects, with Workflow Session ledgers.",
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

var errorSchema = map[string]any{
	"type":     "object",
	"required": []string{"kind", "message"},
	"properties": map[string]any{
		"kind":    map[string]any{"type": "string"},
		"message": map[string]any{"type": "string"},
	},
}

func firstSentence(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' && (i+1 == len(s) || s[i+1] == ' ') {
			return s[:i+1]
		}
	}
	return s
}

// MaxActionOperations is the most operations a GPT Action may declare.
const MaxActionOperations = 30

// openAPI serves /openapi.json; ?tools=a,b,c selects a subset (unknown
// names are an error, so a typo cannot silently drop an operation).
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	url := s.PublicURL
	if url == "" {
		url = "http://" + r.Host
	}
	var only []string
	if q := r.URL.Query().Get("tools"); q != "" {
		for _, name := range strings.Split(q, ",") {
			name = strings.TrimSpace(name)
			if _, ok := s.Kernel.Registry().Lookup(name); !ok {
				httpserver.WriteError(w, http.StatusBadRequest, failure.New(failure.InvalidArguments, "unknown tool %q in tools=", name))
				return
			}
			only = append(only, name)
		}
	}
	httpserver.WriteJSON(w, http.StatusOK, OpenAPI(s.Kernel.Registry(), url, s.Version, only...))
}
