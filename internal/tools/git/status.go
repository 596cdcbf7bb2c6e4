package git

import (
	"context"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/kernel"
)

func (t *Tools) gitStatus(ctx context.Context, inv *kernel.Invocation, _ StatusInput) (StatusOutput, error) {
	st, _, err := gitrepo.ReadStatus(ctx, t.Host, inv.Project.Root)
	return st, err
}

// Status reads the project's git status on this machine for the closeout
// tools until they read it through gitrepo themselves.
func Status(ctx context.Context, root string) (StatusOutput, bool, error) {
	return gitrepo.ReadStatus(ctx, nil, root)
}
