package runneragent

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/worktree"
)

// worktreeProject resolves a request's project name that names no project
// of runner.toml: a managed worktree this runner made (worktree.add) of
// one of its projects, in worktree.RunnerDir. It is served only while its
// directory is git's own linked worktree of that project's repository
// (gitrepo.WorktreeGrants finds its administrative directory inside the
// source's root), so a name can reach nothing else on this machine.
func (a *Agent) worktreeProject(name string) (project.Project, bool) {
	if project.ValidateName(name) != nil {
		return project.Project{}, false
	}
	dir, err := worktree.RunnerDir()
	if err != nil {
		return project.Project{}, false
	}
	root := filepath.Join(dir, name)
	if st, err := os.Lstat(root); err != nil || !st.IsDir() {
		return project.Project{}, false
	}
	grants := gitrepo.WorktreeGrants(root)
	if len(grants) == 0 {
		return project.Project{}, false
	}
	for src, sp := range a.projects {
		if worktree.OfSource(name, src) && strings.HasPrefix(grants[0], sp.Root+string(filepath.Separator)) {
			return project.Project{ID: project.LocalID(name), Name: name, Root: root, Source: project.LocalID(src)}, true
		}
	}
	return project.Project{}, false
}

// grantWorktree lets a process of a managed worktree commit there: the
// grants are computed here, from this machine's files, never taken from
// the request (the server does not read a runner's paths).
func grantWorktree(p project.Project, spec *runner.Spec) {
	if p.Worktree() {
		spec.Sandbox.ProjectWrite = append(spec.Sandbox.ProjectWrite, gitrepo.WorktreeGrants(p.Root)...)
	}
}
