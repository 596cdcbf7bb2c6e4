package handoff

import (
	"context"

	"github.com/webcodex/webcodex/internal/tools/git"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// workspace reads the project's git status through the git tools' runner
// and returns the snapshot, or nil when it cannot be proven (no git, not a
// repository, a git error or timeout, or output cut short so a conflict
// could be hidden past the cut).
func workspace(ctx context.Context, root string) *handoff.WorkspaceSnapshot {
	st, complete, err := git.Status(ctx, root)
	if err != nil || !complete || !st.IsGitRepo {
		return nil
	}
	return &handoff.WorkspaceSnapshot{
		Branch: st.Branch, Head: st.Head, Dirty: !st.Clean, Conflicted: st.Conflicted > 0,
		Ahead: st.Ahead, Behind: st.Behind,
	}
}
