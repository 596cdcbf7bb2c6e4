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
