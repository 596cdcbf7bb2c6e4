package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/project"
)

// Material keys served by context_request.
const (
	MaterialWorkflow     = "webcodex.workflow"
	MaterialInstructions = "project.instructions"
)

var knownMaterials = []string{MaterialWorkflow, MaterialInstructions}

// Material is one context_request answer. Unavailable materials carry a
// reason and no content; a denied or unknown key never fails the call.
type Material struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Content is the material: text for webcodex.workflow, the instruction
	// files for project.instructions.
	Content any `json:"content,omitempty"`
}

// WorkflowGuide is the webcodex.workflow material: how to work with
// Workflow Sessions. It is public and the same for every caller.
const WorkflowGuide = "1. Call work_on_project {project, instruction} once per task; keep the returned session_id. " +
	"2. To continue the same task later (even from another window), pass that exact session_id to work_on_project. " +
	"3. Record other calls in the session with recording_session_id; tools that take session_id also enforce the session's mode (read_only denies writes). " +
	"4. Read before editing: edits are fenced by the read_revision from read_files; a stale fence changes nothing. " +
	"5. A result with failure_kind outcome_unknown is never retried blindly: inspect state first."

// materials answers a context_request after the tool has run. Each key is
// authorized on its own: project.instructions needs the call's explicit
// project argument and project:read; it is never inferred from a session,
// connection or window.
func (s *Server) materials(ctx context.Context, p auth.Principal, args json.RawMessage, keys []string) map[string]Material {
	out := make(map[string]Material, len(keys))
	for _, k := range keys {
		switch k {
		case MaterialWorkflow:
			out[k] = Material{Status: "available", Content: WorkflowGuide}
		case MaterialInstructions:
			out[k] = s.instructions(ctx, p, args)
		default:
			out[k] = Material{Status: "unavailable", Reason: "unknown_material"}
		}
	}
	return out
}

func (s *Server) instructions(ctx context.Context, p auth.Principal, args json.RawMessage) Material {
	if !p.Has(auth.ScopeProjectRead) {
		return Material{Status: "unavailable", Reason: "insufficient_scope"}
	}
	var a struct {
		Project string `json:"project"`
	}
	json.Unmarshal(args, &a)
	if a.Project == "" || s.opts.Projects == nil {
		return Material{Status: "unavailable", Reason: "project_required"}
	}
	pr, err := s.opts.Projects.Get(ctx, a.Project)
	if err != nil {
		return Material{Status: "unavailable", Reason: "unknown_project"}
	}
	var ins project.Instructions = pr.ReadInstructions()
	return Material{Status: "available", Content: ins}
}
