package handoff

import (
	"context"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// workspace reads the project's git status through gitrepo on host
// and returns the snapshot, or nil when it cannot be proven (no git, not a
// repository, a git error or timeout, or output cut short so a conflict
// could be hidden past the cut).
func workspace(ctx context.Context, host runner.Host, root string) *handoff.WorkspaceSnapshot {
	st, complete, err := gitrepo.ReadStatus(ctx, host, root)
	if err != nil || !complete || !st.IsGitRepo {
		return nil
	}
	return &handoff.WorkspaceSnapshot{
		Branch: st.Branch, Head: st.Head, Dirty: !st.Clean, Conflicted: st.Conflicted > 0,
		Ahead: st.Ahead, Behind: st.Behind,
	}
}
