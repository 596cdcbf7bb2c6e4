package skills_test

import (
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/tools/skills"
	"github.com/webcodex/webcodex/internal/workspace"
)

func register(reg *kernel.Registry) { skills.Register(reg, workspace.LocalOnly(nil)) }

func TestRegisterDeclaresReadOnlyTools(t *testing.T) {
	reg := kernel.NewRegistry()
	register(reg)
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name)
		if tool.Category != skills.Category || !slices.Equal(tool.Scopes, []auth.Scope{auth.ScopeProjectRead}) ||
			tool.Annotations != (kernel.Annotations{ReadOnly: true, Idempotent: true}) || tool.Mutates || tool.Writes {
			t.Errorf("%s: %+v", tool.Name, tool)
		}
	}
	if !slices.Equal(names, []string{"skill_list", "skill_read"}) {
		t.Fatalf("tools = %v", names)
	}
}

func TestListAndRead(t *testing.T) {
	e := kerneltest.New(t, register)
	e.Write(".agents/skills/fmt/SKILL.md", "---\nname: fmt\ndescription: Formats.\n---\nRun gofmt.\n")
	e.Write(".claude/skills/odd/SKILL.md", "---\nname: Odd\ndescription: x\n---\n")
	l := kerneltest.OK[skill.Listing](t, e.Call("skill_list", map[string]any{}))
	if len(l.Skills) != 2 || l.Skills[0].Status != skill.StatusValid || l.Skills[1].Reason != skill.ReasonBadName {
		t.Fatalf("skill_list: %+v", l)
	}
	c := kerneltest.OK[skill.Content](t, e.Call("skill_read", map[string]any{"name": "fmt"}))
	if c.Instructions != "Run gofmt.\n" || c.Path != ".agents/skills/fmt/SKILL.md" {
		t.Fatalf("skill_read: %+v", c)
	}
	kerneltest.Fails(t, e.Call("skill_read", map[string]any{"name": "Odd"}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("skill_read", map[string]any{"name": "gone"}), failure.NotFound)
	kerneltest.Fails(t, e.Call("skill_read", map[string]any{}), failure.InvalidArguments)
	kerneltest.Fails(t, e.Call("skill_read", map[string]any{"name": "fmt", "extra": 1}), failure.InvalidArguments)
}
