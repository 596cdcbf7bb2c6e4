package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/skill"
)

// Material keys served by context_request.
const (
	MaterialWorkflow     = "webcodex.workflow"
	MaterialInstructions = "project.instructions"
	MaterialMemory       = "memory.bootstrap"
	MaterialSkills       = "skills.catalog"
	MaterialPlugins      = "plugins.catalog"
)

var knownMaterials = []string{MaterialWorkflow, MaterialInstructions, MaterialMemory, MaterialSkills, MaterialPlugins}

// Reasons of unavailable materials (stable strings).
const (
	ReasonUnknownMaterial   = "unknown_material"
	ReasonInsufficientScope = "insufficient_scope"
	ReasonProjectRequired   = "project_required"
	ReasonUnknownProject    = "unknown_project"
	// ReasonMemoryUnavailable: the server has no memory store or it
	// could not be read.
	ReasonMemoryUnavailable = "memory_unavailable"
	// ReasonNoRuntime: the server has no plugin (MCP provider) catalog,
	// or no skill catalog.
	ReasonNoRuntime = kernel.NoExtensionRuntime
	// ReasonSkillsUnreadable: the project's skills could not be listed
	// (its runner is away, say).
	ReasonSkillsUnreadable = "skills_unreadable"
	// ReasonPluginsUnreadable: the project's MCP providers could not be
	// read (its runner is away, say).
	ReasonPluginsUnreadable = "plugins_unreadable"
)

// PluginCatalog is the selection metadata of the MCP providers serving a
// project as plugins.catalog reads it (internal/app wires an mcpop.Finder).
type PluginCatalog interface {
	Catalog(ctx context.Context, p project.Project) (mcpprovider.Catalog, error)
}

// SkillCatalog is the selection metadata of a project's Agent Skills as
// skills.catalog reads it (internal/app wires a skill.Finder).
type SkillCatalog interface {
	Catalog(ctx context.Context, p project.Project) (skill.Catalog, error)
}

// MemoryProjector is Project Memory as memory.bootstrap reads it
// (internal/app wires the memory service).
type MemoryProjector interface {
	// Bootstrap returns the bounded projection of p's memory scope.
	Bootstrap(ctx context.Context, p project.Project) (memory.Bootstrap, error)
}

// Material is one context_request answer. Unavailable materials carry a
// reason and no content; a denied or unknown key never fails the call.
type Material struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Content is the material: text for webcodex.workflow, the instruction
	// files for project.instructions, a memory.Bootstrap for
	// memory.bootstrap, a skill.Catalog (metadata only, never a skill's
	// instructions) for skills.catalog.
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
// project argument and project:read, memory.bootstrap that and
// memory:read; neither is ever inferred from a session, connection or
// window.
func (s *Server) materials(ctx context.Context, p auth.Principal, args json.RawMessage, keys []string) map[string]Material {
	out := make(map[string]Material, len(keys))
	for _, k := range keys {
		switch k {
		case MaterialWorkflow:
			out[k] = Material{Status: "available", Content: WorkflowGuide}
		case MaterialInstructions:
			out[k] = s.instructions(ctx, p, args)
		case MaterialMemory:
			out[k] = s.memoryBootstrap(ctx, p, args)
		case MaterialSkills:
			out[k] = s.skillsCatalog(ctx, p, args)
		case MaterialPlugins:
			out[k] = s.pluginsCatalog(ctx, p, args)
		default:
			out[k] = unavailable(ReasonUnknownMaterial)
		}
	}
	return out
}

func unavailable(reason string) Material { return Material{Status: "unavailable", Reason: reason} }

// explicitProject resolves the call's explicit project argument for a
// material that needs every scope of need; the Material is set when it
// cannot.
func (s *Server) explicitProject(ctx context.Context, p auth.Principal, args json.RawMessage, need ...auth.Scope) (project.Project, *Material) {
	for _, sc := range need {
		if !p.Has(sc) {
			m := unavailable(ReasonInsufficientScope)
			return project.Project{}, &m
		}
	}
	var a struct {
		Project string `json:"project"`
	}
	json.Unmarshal(args, &a)
	if a.Project == "" || s.opts.Projects == nil {
		m := unavailable(ReasonProjectRequired)
		return project.Project{}, &m
	}
	pr, err := s.opts.Projects.Get(ctx, a.Project)
	if err != nil {
		m := unavailable(ReasonUnknownProject)
		return project.Project{}, &m
	}
	return pr, nil
}

func (s *Server) instructions(ctx context.Context, p auth.Principal, args json.RawMessage) Material {
	pr, denied := s.explicitProject(ctx, p, args, auth.ScopeProjectRead)
	if denied != nil {
		return *denied
	}
	var ins project.Instructions = pr.ReadInstructions()
	return Material{Status: "available", Content: ins}
}

// memoryBootstrap is the memory.bootstrap material: at most
// memory.MaxBootstrapBytes of the project's memory, pinned then newest
// entries first, truncation reported in it.
func (s *Server) memoryBootstrap(ctx context.Context, p auth.Principal, args json.RawMessage) Material {
	pr, denied := s.explicitProject(ctx, p, args, auth.ScopeProjectRead, auth.ScopeMemoryRead)
	if denied != nil {
		return *denied
	}
	if s.opts.Memory == nil {
		return unavailable(ReasonMemoryUnavailable)
	}
	b, err := s.opts.Memory.Bootstrap(ctx, pr)
	if err != nil {
		s.log.Warn("memory.bootstrap", "project", pr.ID, "err", err)
		return unavailable(ReasonMemoryUnavailable)
	}
	return Material{Status: "available", Content: b}
}

// skillsCatalog is the skills.catalog material: the selection metadata of
// the explicit project's skills (bounded by skill.MaxSkills and
// skill.MaxCatalogBytes), never their instructions. It needs project:read.
// pluginsCatalog is the plugins.catalog material: the MCP providers
// serving the call's explicit project (selection metadata; it starts none).
func (s *Server) pluginsCatalog(ctx context.Context, p auth.Principal, args json.RawMessage) Material {
	if s.opts.Plugins == nil {
		return unavailable(ReasonNoRuntime)
	}
	pr, denied := s.explicitProject(ctx, p, args, auth.ScopeProjectRead)
	if denied != nil {
		return *denied
	}
	c, err := s.opts.Plugins.Catalog(ctx, pr)
	if err != nil {
		s.log.Warn("plugins.catalog", "project", pr.ID, "err", err)
		return unavailable(ReasonPluginsUnreadable)
	}
	return Material{Status: "available", Content: c}
}

func (s *Server) skillsCatalog(ctx context.Context, p auth.Principal, args json.RawMessage) Material {
	if s.opts.Skills == nil {
		return unavailable(ReasonNoRuntime)
	}
	pr, denied := s.explicitProject(ctx, p, args, auth.ScopeProjectRead)
	if denied != nil {
		return *denied
	}
	c, err := s.opts.Skills.Catalog(ctx, pr)
	if err != nil {
		s.log.Warn("skills.catalog", "project", pr.ID, "err", err)
		return unavailable(ReasonSkillsUnreadable)
	}
	return Material{Status: "available", Content: c}
}
