package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/project"
)

func newProjects(s *Stores) *project.Registry { return project.NewRegistry(s.Projects, nil) }

// RegisterProjects registers each spec ("DIR" or "NAME=DIR"); re-registering
// the same name and directory is a no-op.
func (a *App) RegisterProjects(ctx context.Context, specs []string) ([]project.Project, error) {
	var out []project.Project
	for _, spec := range specs {
		name, dir := project.ParseSpec(spec)
		p, err := a.Projects.Register(ctx, name, dir)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}
