package git

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workspace"
)

func (t *Tools) gitStatus(ctx context.Context, inv *kernel.Invocation, in StatusInput) (StatusOutput, error) {
	return workspace.Do(ctx, t.Runners.For(inv.Project), inv.Project, statusOp, in)
}
