package runnerhub

import (
	"context"
	"strings"

	"github.com/webcodex/webcodex/internal/project"
)

// worktreeOf returns the name of the runner's managed worktree rooted at
// root (a project registered for this runner after its hello, so not in
// the connection's projects): its directory is named after it.
func (r *remote) worktreeOf(ctx context.Context, root string) (string, bool) {
	name := root[strings.LastIndexAny(root, `/\`)+1:]
	p, err := r.hub.o.Projects.Get(ctx, project.RunnerID(r.clientID, name))
	return name, err == nil && p.Worktree() && p.Runner == r.clientID && p.Root == root
}
