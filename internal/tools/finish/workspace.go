package finish

import (
	"context"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/runner"
)

// MaxWorkspacePaths bounds the changed paths reported.
const MaxWorkspacePaths = 50

// snapshot is the git status of the project root.
type snapshot struct {
	Branch, Head      string
	Dirty, Conflicted bool
	Ahead, Behind     int
	// Paths are the changed paths in git's order; Conflicts the unmerged.
	Paths, Conflicts []string
}

// gitStatus reads the project's git status through gitrepo on host.
// It returns nil when the state cannot be proven (no git, not a
// repository, a git error or timeout, or output cut short so a conflict
// could be hidden past the cut).
func gitStatus(ctx context.Context, host runner.Host, root string) *snapshot {
	st, complete, err := gitrepo.ReadStatus(ctx, host, root)
	if err != nil || !complete || !st.IsGitRepo {
		return nil
	}
	w := &snapshot{Branch: st.Branch, Head: st.Head, Dirty: !st.Clean, Conflicted: st.Conflicted > 0, Ahead: st.Ahead, Behind: st.Behind}
	for _, e := range st.Entries {
		w.Paths = append(w.Paths, e.Path)
		if e.Kind == gitrepo.KindConflicted {
			w.Conflicts = append(w.Conflicts, e.Path)
		}
	}
	return w
}
