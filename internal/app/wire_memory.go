package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/transport/mcpserver"
)

// newMemory is the Project Memory service over memory.db, or nil for an
// app without stores (a registry built only to list the tools).
func newMemory(a *App) *memory.Service {
	if a.Stores == nil || a.Stores.Memory == nil {
		return nil
	}
	return NewMemory(a.Stores)
}

// NewMemory is the Project Memory service over the stores' memory.db
// (also for the CLI, which reaches stores only through this package).
func NewMemory(s *Stores) *memory.Service { return memory.NewService(s.Memory, nil) }

// memoryProjector answers the MCP memory.bootstrap material from the
// scope of the requested project.
type memoryProjector struct{ svc *memory.Service }

// Bootstrap implements mcpserver.MemoryProjector.
func (m memoryProjector) Bootstrap(ctx context.Context, p project.Project) (memory.Bootstrap, error) {
	return m.svc.Bootstrap(ctx, memory.ScopeFor(p.ID, p.Root))
}

// memoryBootstrap is the projector, or nil without a memory store.
func memoryBootstrap(a *App) mcpserver.MemoryProjector {
	svc := newMemory(a)
	if svc == nil {
		return nil
	}
	return memoryProjector{svc: svc}
}
