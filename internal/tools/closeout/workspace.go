package closeout

import (
	"context"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
	"github.com/webcodex/webcodex/internal/workspace"
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

// gitState is what statusOp returns: the status and whether git's output
// was read whole.
type gitState struct {
	Status   gitrepo.Status `json:"status"`
	Complete bool           `json:"complete"`
}

// statusOp reads the project's git status where the repository is.
var statusOp = workspace.NewOp("closeout.git_status", func(ctx context.Context, env workspace.Env, p project.Project, _ struct{}) (gitState, error) {
	st, complete, err := gitrepo.ReadStatus(ctx, env.Host, p.Root)
	return gitState{Status: st, Complete: complete}, err
})

// Ops returns the closeout tools' operation, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{statusOp} }

// readWorkspace reads project p's git status on r, once. It returns nil
// when the state cannot be proven (no git, not a repository, a git error
// or timeout, a runner that cannot answer, or output cut short so a
// conflict could be hidden past the cut).
func readWorkspace(ctx context.Context, r workspace.Runner, p project.Project) *snapshot {
	res, err := workspace.Do(ctx, r, p, statusOp, struct{}{})
	st, complete := res.Status, res.Complete
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
