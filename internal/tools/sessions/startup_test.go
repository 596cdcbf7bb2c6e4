package sessions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
	"github.com/webcodex/webcodex/internal/workspace"
)

// The specification's exploration profiles: 3 paths minimal, 12 standard
// (work_on_project's startup), 100 full (finish and handoff).
func TestExplorationBoundsAreTheSpecifications(t *testing.T) {
	if handoff.ExplorationMinimal != 3 || handoff.ExplorationStandard != 12 || handoff.ExplorationFull != 100 {
		t.Fatalf("bounds %d/%d/%d, the specification says 3/12/100", handoff.ExplorationMinimal, handoff.ExplorationStandard, handoff.ExplorationFull)
	}
	if sessions.StartupProfile != handoff.ProfileStandard {
		t.Fatalf("startup profile %q, want standard", sessions.StartupProfile)
	}
}

type exploration struct {
	Items     []string `json:"items"`
	Total     int      `json:"total"`
	Returned  int      `json:"returned"`
	Truncated bool     `json:"truncated"`
}

func explorationOf(t *testing.T, out sessions.WorkOutput) exploration {
	t.Helper()
	b, _ := json.Marshal(out.ContinuationFeedback)
	var fb struct {
		Attempt struct {
			Exploration exploration `json:"exploration"`
		} `json:"attempt"`
	}
	if err := json.Unmarshal(b, &fb); err != nil {
		t.Fatal(err)
	}
	return fb.Attempt.Exploration
}

// explore records n distinct successful read paths in session id, ten
// per read_files event.
func explore(t *testing.T, svc *workflow.Service, id string, n int) {
	t.Helper()
	for i := 0; i < n; i += 10 {
		var paths []string
		for j := i; j < min(i+10, n); j++ {
			paths = append(paths, fmt.Sprintf("p%03d.go", j))
		}
		if _, _, err := svc.Append(context.Background(), id, workflow.Event{
			Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK, ObservedPaths: paths,
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStartupWorksetProfiles(t *testing.T) {
	const explored = 110
	for _, tc := range []struct {
		name    string
		profile handoff.Profile
		want    int
	}{
		{"default standard", "", handoff.ExplorationStandard},
		{"minimal", handoff.ProfileMinimal, handoff.ExplorationMinimal},
		{"full", handoff.ProfileFull, handoff.ExplorationFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.tools.StartupProfile = tc.profile
			id := e.start("look").SessionID
			explore(t, e.svc, id, explored)
			c := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": id, "instruction": "again"}))
			x := explorationOf(t, c)
			if len(x.Items) != tc.want || x.Returned != tc.want || x.Total != explored || !x.Truncated {
				t.Fatalf("workset: %d items, returned %d, total %d, truncated %v; want %d of %d", len(x.Items), x.Returned, x.Total, x.Truncated, tc.want, explored)
			}
		})
	}
	// Under the bound nothing is cut.
	e := newEnv(t, nil)
	id := e.start("look").SessionID
	explore(t, e.svc, id, 5)
	x := explorationOf(t, kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": id, "instruction": "again"})))
	if len(x.Items) != 5 || x.Total != 5 || x.Truncated {
		t.Fatalf("small workset: %+v", x)
	}
}

func TestIncludeFlags(t *testing.T) {
	e := newEnv(t, map[string]string{"AGENTS.md": "Run the tests.\n"})
	all := e.start("go")
	if all.Workflow != "the guide" || all.Extensions == nil || !all.Instructions.ContentIncluded ||
		all.Instructions.Status != "loaded" || all.Instructions.Sources[0].Content != "Run the tests.\n" {
		t.Fatalf("defaults: %+v", all)
	}
	b, _ := json.Marshal(all.Extensions)
	// Without a skill catalog wired, skills are unavailable too.
	var cat struct{ Skills, Plugins sessions.Unavailable }
	json.Unmarshal(b, &cat)
	if cat.Skills != (sessions.Unavailable{Status: "unavailable", Reason: "no_runtime"}) ||
		cat.Plugins != (sessions.Unavailable{Status: "unavailable", Reason: "no_runtime"}) {
		t.Fatalf("extension catalog: %s", b)
	}
	off := map[string]any{"session_id": all.SessionID, "instruction": "again",
		"include_workflow_guidance": false, "include_project_instructions": false, "include_extension_catalog": false}
	c := kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", off))
	ins := c.Instructions
	if c.Workflow != "" || c.Extensions != nil || ins.ContentIncluded || len(ins.Sources) != 1 ||
		ins.Sources[0].Content != "" || ins.Sources[0].SHA256 != all.Instructions.Sources[0].SHA256 {
		t.Fatalf("all projections off: %+v", c)
	}
	// The files are still observed: unchanged is reused, an edit is changed
	// even while bodies are left out.
	if ins.Status != sessions.InstructionsReused {
		t.Fatalf("unchanged files: status %q", ins.Status)
	}
	os.WriteFile(filepath.Join(e.Project.Root, "AGENTS.md"), []byte("Run the tests twice.\n"), 0o644)
	c = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", off))
	if c.Instructions.Status != sessions.InstructionsChanged || c.Instructions.Sources[0].SHA256 == ins.Sources[0].SHA256 || c.Instructions.Sources[0].Content != "" {
		t.Fatalf("edited file with bodies off: %+v", c.Instructions)
	}
	c = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"session_id": all.SessionID, "instruction": "third"}))
	if c.Instructions.Status != sessions.InstructionsReused || c.Instructions.Sources[0].Content != "Run the tests twice.\n" {
		t.Fatalf("bodies back on: %+v", c.Instructions)
	}
	// A fresh session has nothing to compare with.
	if s := e.start("new").Instructions.Status; s != "loaded" {
		t.Fatalf("fresh session status %q", s)
	}
}

func TestWorktreeModeInputErrors(t *testing.T) {
	e := newEnv(t, nil)
	// Without a manager the mode is unavailable; base_ref alone is
	// invalid. Neither creates a session.
	kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "x", "mode": "worktree"}), failure.Unavailable)
	kerneltest.Fails(t, e.Call("work_on_project", map[string]any{"instruction": "x", "base_ref": "main"}), failure.InvalidArguments)
	ss, total, err := e.svc.List(context.Background(), workflow.ListFilter{Project: e.Project.ID})
	if err != nil || total != 0 || len(ss) != 0 {
		t.Fatalf("sessions created: %d, %v", total, err)
	}
}

// failingSkills is a skill catalog whose project cannot be listed.
type failingSkills struct{}

func (failingSkills) Catalog(context.Context, project.Project) (skill.Catalog, error) {
	return skill.Catalog{}, failure.New(failure.RunnerUnavailable, "the runner is away")
}

// TestExtensionCatalogSkills: a wired catalog gives the skills' metadata
// and no body; one that cannot list the project leaves the skills
// unavailable (skills_unreadable) and the call successful.
func TestExtensionCatalogSkills(t *testing.T) {
	e := newEnv(t, map[string]string{".agents/skills/a/SKILL.md": "---\nname: a\ndescription: Does a.\n---\nBODY\n"})
	e.tools.Skills = skill.Finder{Runners: workspace.LocalOnly(nil)}
	b, _ := json.Marshal(e.start("go").Extensions)
	var cat struct {
		Skills  skill.Catalog
		Plugins sessions.Unavailable
	}
	json.Unmarshal(b, &cat)
	if cat.Skills.Status != skill.StatusAvailable || len(cat.Skills.Skills) != 1 || cat.Skills.Skills[0].Name != "a" ||
		cat.Plugins.Reason != "no_runtime" || strings.Contains(string(b), "BODY") {
		t.Fatalf("extension catalog: %s", b)
	}
	e.tools.Skills = failingSkills{}
	b, _ = json.Marshal(e.start("again").Extensions)
	var down struct{ Skills sessions.Unavailable }
	json.Unmarshal(b, &down)
	if down.Skills != (sessions.Unavailable{Status: "unavailable", Reason: sessions.ReasonSkillsUnreadable}) {
		t.Fatalf("unlistable skills: %s", b)
	}
}
