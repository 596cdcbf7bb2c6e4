package closeout

import (
	"context"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// MaxWorkspacePaths bounds the changed and the conflicted paths that
// finish_coding_task reports.
const MaxWorkspacePaths = 50

// snapshot is the git status of the project root, as both tools need it.
type snapshot struct {
	// Brief is the workspace as the handoff brief reports it.
	Brief handoff.WorkspaceSnapshot
	// Paths are the changed paths in git's order; Conflicts the unmerged.
	Paths, Conflicts []string
}

// workspace reads the project's git status through gitrepo on host, once.
// It returns nil when the state cannot be proven (no git, not a
// repository, a git error or timeout, or output cut short so a conflict
// could be hidden past the cut).
func workspace(ctx context.Context, host runner.Host, root string) *snapshot {
	st, complete, err := gitrepo.ReadStatus(ctx, host, root)
	if err != nil || !complete || !st.IsGitRepo {
		return nil
	}
	w := &snapshot{Brief: handoff.WorkspaceSnapshot{
		Branch: st.Branch, Head: st.Head, Dirty: !st.Clean, Conflicted: st.Conflicted > 0,
		Ahead: st.Ahead, Behind: st.Behind,
	}}
	for _, e := range st.Entries {
		w.Paths = append(w.Paths, e.Path)
		if e.Kind == gitrepo.KindConflicted {
			w.Conflicts = append(w.Conflicts, e.Path)
		}
	}
	return w
}

// brief returns the handoff brief's view of w (nil for nil).
func (w *snapshot) brief() *handoff.WorkspaceSnapshot {
	if w == nil {
		return nil
	}
	b := w.Brief
	return &b
}
