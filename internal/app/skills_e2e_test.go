package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/skill"
)

// skillBody is the instructions of the fixture's valid skills: no catalog
// may carry them.
const skillBody = "BODY-TEXT-never-in-a-catalog"

// skillsProject writes a project with a valid skill in each root, one
// without front matter, a 1 MB one, two with the same name and a skill
// directory that is a symlink out of the project.
func skillsProject(t *testing.T) string {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	files := map[string]string{
		"a.txt":                              "hello\n",
		".agents/skills/deploy/SKILL.md":     "---\nname: deploy\ndescription: Deploy the app.\n---\n" + skillBody + " deploy\n",
		".claude/skills/review/SKILL.md":     "---\nname: review\ndescription: Review a change.\n---\n" + skillBody + " review\n",
		".agents/skills/plain/SKILL.md":      "no front matter here\n",
		".agents/skills/huge/SKILL.md":       "---\nname: huge\ndescription: big\n---\n" + strings.Repeat("x", 1<<20),
		".claude/skills/deploy-two/SKILL.md": "---\nname: deploy\ndescription: Deploy again.\n---\n" + skillBody + " second\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "SKILL.md"), []byte("---\nname: secret\ndescription: x\n---\nSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, ".agents/skills/escape")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// treeDigest maps every file of dir to its SHA-256, to show nothing was
// written.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		s := sha256.Sum256(b)
		out[p] = hex.EncodeToString(s[:])
		return nil
	})
	return out
}

// TestSkillsOverRESTAndMCP: skill_list shows each fixture skill with its
// status and reason, skill_read returns a valid skill's body and refuses
// an invalid and an unknown one with their kinds, and work_on_project's
// extension catalog and the skills.catalog material list the metadata
// and no body, through REST and MCP; nothing in the project changes.
func TestSkillsOverRESTAndMCP(t *testing.T) {
	dir := skillsProject(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolProfile = gateway.Full }, "p="+dir)
	defer s.stop(t)
	before := treeDigest(t, dir)

	r := must(t, s.call(t, "skill_list", map[string]any{"project": rawProjectID}, ""), "skill_list")
	var l skill.Listing
	b, _ := json.Marshal(r.Output)
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // path: status/reason
		".agents/skills/deploy/SKILL.md":     "valid/",
		".agents/skills/escape/SKILL.md":     "invalid/" + skill.ReasonOutsideProject,
		".agents/skills/huge/SKILL.md":       "invalid/" + skill.ReasonTooLarge,
		".agents/skills/plain/SKILL.md":      "invalid/" + skill.ReasonNoFrontMatter,
		".claude/skills/deploy-two/SKILL.md": "invalid/" + skill.ReasonDuplicateName,
		".claude/skills/review/SKILL.md":     "valid/",
	}
	got := map[string]string{}
	for _, sk := range l.Skills {
		got[sk.Path] = sk.Status + "/" + sk.Reason
	}
	if !maps.Equal(got, want) || l.Total != len(want) || l.Truncated {
		t.Fatalf("skill_list: %+v", l)
	}
	if strings.Contains(string(b), skillBody) || strings.Contains(string(b), "SECRET") {
		t.Fatalf("skill_list carries a body: %s", b)
	}

	r = must(t, s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "review"}, ""), "skill_read")
	var c skill.Content
	b, _ = json.Marshal(r.Output)
	json.Unmarshal(b, &c)
	if c.Instructions != skillBody+" review\n" || c.Source != skill.SourceClaude || c.Path != ".claude/skills/review/SKILL.md" || c.Revision == "" {
		t.Fatalf("skill_read: %+v", c)
	}
	// The first "deploy" wins; the duplicate is never read.
	r = must(t, s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "deploy"}, ""), "skill_read deploy")
	if !strings.Contains(string(r.Output["instructions"]), "deploy\\n") {
		t.Fatalf("skill_read deploy: %s", r.Output["instructions"])
	}
	wantFail(t, s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "nope"}, ""), "not_found")
	wantFail(t, s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "secret"}, ""), "not_found")
	wantFail(t, s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "huge"}, ""), "not_found")
	// An invalid skill that has a name is refused with its reason.
	bad := filepath.Join(dir, ".agents/skills/bad/SKILL.md")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("---\nname: bad\n---\nbody\n"), 0o644)
	before = treeDigest(t, dir)
	f := s.call(t, "skill_read", map[string]any{"project": rawProjectID, "name": "bad"}, "")
	wantFail(t, f, "invalid_arguments")
	if !strings.Contains(f.Error.Message, skill.ReasonMissingDescription) {
		t.Fatalf("invalid skill: %s", f.Error.Message)
	}

	// MCP: skill_list, work_on_project's catalog and skills.catalog.
	mr := rawCall(t, s, s.token, "skill_read", map[string]any{"project": rawProjectID, "name": "deploy"})
	if !mr.StructuredContent.Success || !strings.Contains(string(mr.StructuredContent.Output["instructions"]), skillBody) {
		t.Fatalf("skill_read over MCP: %+v", mr.StructuredContent)
	}
	mr = rawCall(t, s, s.token, "skill_read", map[string]any{"project": rawProjectID, "name": "plain"})
	if mr.StructuredContent.Success || mr.StructuredContent.Error.Kind != "not_found" {
		t.Fatalf("skill_read plain over MCP: %+v", mr.StructuredContent)
	}
	mr = rawCall(t, s, s.token, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "ship it"})
	if !mr.StructuredContent.Success {
		t.Fatalf("work_on_project: %+v", mr.StructuredContent.Error)
	}
	var ext struct {
		Skills  skill.Catalog
		Plugins struct{ Status, Reason string }
	}
	json.Unmarshal(mr.StructuredContent.Output["extensions"], &ext)
	checkCatalog(t, "extension catalog", ext.Skills, mr.StructuredContent.Output["extensions"])
	if ext.Plugins.Status != "available" || !strings.Contains(string(mr.StructuredContent.Output["extensions"]), `"plugins":{"status":"available","plugins":[]}`) {
		t.Fatalf("plugins: %+v", ext.Plugins)
	}
	mr = rawCall(t, s, s.token, "read_files", rawWith(rawReadArgs(), "context_request", []any{"skills.catalog"}))
	m := mr.StructuredContent.Context["skills.catalog"]
	var cat skill.Catalog
	json.Unmarshal(m.Content, &cat)
	if m.Status != "available" {
		t.Fatalf("skills.catalog: %+v", m)
	}
	checkCatalog(t, "skills.catalog", cat, m.Content)
	// Without an explicit project the material is unavailable; the call
	// still succeeds.
	mr = rawCall(t, s, s.token, "list_sessions", map[string]any{"context_request": []any{"skills.catalog"}})
	if m := mr.StructuredContent.Context["skills.catalog"]; m.Status != "unavailable" || m.Reason != "project_required" || m.Content != nil {
		t.Fatalf("skills.catalog without a project: %+v", m)
	}

	if after := treeDigest(t, dir); !maps.Equal(before, after) {
		t.Fatal("the skill calls changed the project")
	}
}

// checkCatalog: the catalog lists every fixture skill's metadata (and
// the later "bad") and no body text.
func checkCatalog(t *testing.T, what string, c skill.Catalog, raw json.RawMessage) {
	t.Helper()
	if c.Status != "available" || len(c.Skills) != 7 || c.Total != 7 || c.Truncated {
		t.Fatalf("%s: %s", what, raw)
	}
	valid := 0
	for _, e := range c.Skills {
		if e.Status == skill.StatusValid {
			valid++
			if e.Revision == "" || e.Description == "" {
				t.Fatalf("%s: %+v", what, e)
			}
		}
	}
	if valid != 2 || strings.Contains(string(raw), skillBody) || strings.Contains(string(raw), "SECRET") || strings.Contains(string(raw), "xxxx") {
		t.Fatalf("%s: %d valid, or a body in it: %s", what, valid, raw)
	}
}
