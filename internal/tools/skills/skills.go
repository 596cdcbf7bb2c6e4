// Package skills provides the read-only Agent Skills tools: skill_list and
// skill_read over a project's .agents/skills and .claude/skills (see
// package skill). Both read through the runner serving the project; a
// call observes the SKILL.md paths it read.
package skills

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Category is the telemetry category of the skill tools.
const Category = "skills"

// ListInput is the input of skill_list.
type ListInput struct {
	kernel.ProjectRef
}

// ReadInput is the input of skill_read.
type ReadInput struct {
	kernel.ProjectRef
	Name string `json:"name" jsonschema:"the skill's name, from skill_list"`
}

// Register adds skill_list and skill_read to reg; runners serves each
// call's project.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	f := skill.Finder{Runners: runners}
	scopes := []auth.Scope{auth.ScopeProjectRead}
	ann := kernel.Annotations{ReadOnly: true, Idempotent: true}
	kernel.Register(reg, kernel.Spec[ListInput, skill.Listing]{
		Runners:     true,
		Name:        "skill_list",
		Description: "List the project's Agent Skills (.agents/skills, .claude/skills): name, description, revision; invalid ones with a reason.",
		Category:    Category, Scopes: scopes, Annotations: ann,
		Handler: func(ctx context.Context, inv *kernel.Invocation, _ ListInput) (skill.Listing, error) {
			l, err := f.List(ctx, inv.Project)
			if err != nil {
				return skill.Listing{}, err
			}
			for _, s := range l.Skills {
				if s.Revision != "" && s.InProject() {
					inv.Observe(s.Path)
				}
			}
			return l, nil
		},
	})
	kernel.Register(reg, kernel.Spec[ReadInput, skill.Content]{
		Runners:     true,
		Name:        "skill_read",
		Description: "Read one valid Agent Skill's instructions by name.",
		Category:    Category, Scopes: scopes, Annotations: ann,
		Handler: func(ctx context.Context, inv *kernel.Invocation, in ReadInput) (skill.Content, error) {
			c, err := f.Read(ctx, inv.Project, in.Name)
			if err != nil {
				return skill.Content{}, err
			}
			if c.InProject() {
				inv.Observe(c.Path)
			}
			return c, nil
		},
	})
}
