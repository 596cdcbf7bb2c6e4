package skill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/skill"
)

const good = "---\nname: deploy-app\ndescription: Deploys the app.\n---\n# Deploy\nRun it.\n"

func TestParse(t *testing.T) {
	cases := []struct {
		name, in, reason, body string
	}{
		{"valid", good, "", "# Deploy\nRun it.\n"},
		{"crlf", "---\r\nname: a-b\r\ndescription: d\r\n---\r\nbody\r\n", "", "body\r\n"},
		{"bom", "\ufeff" + good, "", "# Deploy\nRun it.\n"},
		{"dashes in body", "---\nname: x\ndescription: d\n---\nintro\n---\nname: other\n---\n", "", "intro\n---\nname: other\n---\n"},
		{"no front matter", "# Title\nname: x\n", skill.ReasonNoFrontMatter, ""},
		{"empty", "", skill.ReasonNoFrontMatter, ""},
		{"unclosed", "---\nname: x\ndescription: d\n", skill.ReasonBadFrontMatter, ""},
		{"not yaml", "---\nname: [x\n---\n", skill.ReasonBadFrontMatter, ""},
		{"not a mapping", "---\n- a\n- b\n---\n", skill.ReasonBadFrontMatter, ""},
		{"name not a string", "---\nname: {a: 1}\ndescription: d\n---\n", skill.ReasonBadFrontMatter, ""},
		{"missing name", "---\ndescription: d\n---\n", skill.ReasonMissingName, ""},
		{"empty name", "---\nname: \"\"\ndescription: d\n---\n", skill.ReasonMissingName, ""},
		{"upper name", "---\nname: Deploy\ndescription: d\n---\n", skill.ReasonBadName, ""},
		{"long name", "---\nname: " + strings.Repeat("a", skill.MaxNameChars+1) + "\ndescription: d\n---\n", skill.ReasonBadName, ""},
		{"missing description", "---\nname: x\n---\n", skill.ReasonMissingDescription, ""},
		{"blank description", "---\nname: x\ndescription: \"  \"\n---\n", skill.ReasonMissingDescription, ""},
		{"long description", "---\nname: x\ndescription: " + strings.Repeat("é", skill.MaxDescriptionChars+1) + "\n---\n", skill.ReasonBadDescription, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, reason := skill.Parse([]byte(c.in))
			if reason != c.reason {
				t.Fatalf("reason %q, want %q", reason, c.reason)
			}
			if reason == "" && p.Body != c.body {
				t.Fatalf("body %q, want %q", p.Body, c.body)
			}
		})
	}
	// The longest name and description are accepted.
	max := "---\nname: " + strings.Repeat("a", skill.MaxNameChars) + "\ndescription: " + strings.Repeat("é", skill.MaxDescriptionChars) + "\n---\n"
	if _, reason := skill.Parse([]byte(max)); reason != "" {
		t.Fatalf("bounds: %s", reason)
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "pdf-tools", "x1-2"} {
		if !skill.ValidName(n) {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range []string{"", "-a", "a-", "a--b", "A", "a_b", "a b", "é"} {
		if skill.ValidName(n) {
			t.Errorf("%q accepted", n)
		}
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture writes the skills of the kernel-level test too: a valid one in
// each root, one without front matter, a 1 MB one, a duplicate name and a
// skill directory that is a symlink out of the project.
func fixture(t *testing.T) project.Project {
	root := t.TempDir()
	write(t, root, ".agents/skills/deploy/SKILL.md", good)
	write(t, root, ".claude/skills/review/SKILL.md", "---\nname: review\ndescription: Reviews a change.\n---\nLook closely.\n")
	write(t, root, ".agents/skills/plain/SKILL.md", "just text\n")
	write(t, root, ".agents/skills/huge/SKILL.md", "---\nname: huge\ndescription: big\n---\n"+strings.Repeat("x", 1<<20))
	write(t, root, ".claude/skills/deploy/SKILL.md", "---\nname: deploy-app\ndescription: Another.\n---\nSecond.\n")
	write(t, root, ".agents/skills/notes.md", "not a skill directory\n")
	write(t, root, ".agents/skills/empty/README.md", "no SKILL.md here\n")
	outside := t.TempDir()
	write(t, outside, "SKILL.md", "---\nname: secret\ndescription: outside\n---\nSECRET BODY\n")
	if err := os.Symlink(outside, filepath.Join(root, ".agents/skills/escape")); err != nil {
		t.Fatal(err)
	}
	return project.Project{ID: "p", Root: root}
}

func TestList(t *testing.T) {
	p := fixture(t)
	l, err := skill.List(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ path, name, source, status, reason string }
	want := []row{
		{".agents/skills/deploy/SKILL.md", "deploy-app", "agents", "valid", ""},
		{".agents/skills/escape/SKILL.md", "", "agents", "invalid", skill.ReasonOutsideProject},
		{".agents/skills/huge/SKILL.md", "", "agents", "invalid", skill.ReasonTooLarge},
		{".agents/skills/plain/SKILL.md", "", "agents", "invalid", skill.ReasonNoFrontMatter},
		{".claude/skills/deploy/SKILL.md", "deploy-app", "claude", "invalid", skill.ReasonDuplicateName},
		{".claude/skills/review/SKILL.md", "review", "claude", "valid", ""},
	}
	if len(l.Skills) != len(want) || l.Total != len(want) || l.Truncated {
		t.Fatalf("listing: %+v", l)
	}
	for i, w := range want {
		s := l.Skills[i]
		if (row{s.Path, s.Name, s.Source, s.Status, s.Reason}) != w {
			t.Errorf("skill %d: %+v, want %+v", i, s, w)
		}
		if (s.Revision == "") != (w.reason == skill.ReasonTooLarge || w.reason == skill.ReasonOutsideProject) {
			t.Errorf("skill %d revision %q", i, s.Revision)
		}
	}
	if l.Skills[0].Revision != skill.Revision([]byte(good)) || len(l.Skills[0].Revision) != 64 {
		t.Fatalf("revision %s", l.Skills[0].Revision)
	}
	b, _ := json.Marshal(l)
	if strings.Contains(string(b), "SECRET") {
		t.Fatal("the listing carries text from outside the project")
	}
}

func TestRead(t *testing.T) {
	p := fixture(t)
	ctx := context.Background()
	c, err := skill.Read(ctx, p, nil, "deploy-app")
	if err != nil {
		t.Fatal(err)
	}
	if c.Instructions != "# Deploy\nRun it.\n" || c.Bytes != len(good) || c.Source != "agents" || c.Status != "valid" {
		t.Fatalf("read: %+v", c)
	}
	for name, kind := range map[string]failure.Kind{"nope": failure.NotFound, "secret": failure.NotFound, "": failure.InvalidArguments} {
		if _, err := skill.Read(ctx, p, nil, name); !failure.Is(err, kind) {
			t.Errorf("read %q: %v, want %s", name, err, kind)
		}
	}
	// An invalid skill with a name is refused with its reason.
	write(t, p.Root, ".agents/skills/bad/SKILL.md", "---\nname: bad\n---\n")
	_, err = skill.Read(ctx, p, nil, "bad")
	if !failure.Is(err, failure.InvalidArguments) || !strings.Contains(err.Error(), skill.ReasonMissingDescription) {
		t.Fatalf("invalid skill: %v", err)
	}
}

func TestMaxSkills(t *testing.T) {
	root := t.TempDir()
	for i := range skill.MaxSkills + 3 {
		n := fmt.Sprintf("s%03d", i)
		write(t, root, ".agents/skills/"+n+"/SKILL.md", "---\nname: "+n+"\ndescription: "+strings.Repeat("d", skill.MaxDescriptionChars)+"\n---\n")
	}
	l, err := skill.List(context.Background(), project.Project{ID: "p", Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Skills) != skill.MaxSkills || l.Total != skill.MaxSkills+3 || !l.Truncated {
		t.Fatalf("listed %d of %d, truncated %v", len(l.Skills), l.Total, l.Truncated)
	}
	c := skill.NewCatalog(l)
	b, _ := json.Marshal(c.Skills)
	if len(b) > skill.MaxCatalogBytes || !c.Truncated || len(c.Skills) == 0 || c.Total != l.Total {
		t.Fatalf("catalog: %d entries, %d bytes, truncated %v", len(c.Skills), len(b), c.Truncated)
	}
}

func TestMaxSkillBytes(t *testing.T) {
	root := t.TempDir()
	head := "---\nname: edge\ndescription: d\n---\n"
	write(t, root, ".agents/skills/edge/SKILL.md", head+strings.Repeat("x", skill.MaxSkillBytes-len(head)))
	p := project.Project{ID: "p", Root: root}
	c, err := skill.Read(context.Background(), p, nil, "edge")
	if err != nil || c.Bytes != skill.MaxSkillBytes {
		t.Fatalf("a SKILL.md of exactly the bound: %v %d", err, c.Bytes)
	}
	write(t, root, ".agents/skills/edge/SKILL.md", head+strings.Repeat("x", skill.MaxSkillBytes-len(head)+1))
	if _, err := skill.Read(context.Background(), p, nil, "edge"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("one byte over: %v", err)
	}
	l, _ := skill.List(context.Background(), p, nil)
	if l.Skills[0].Reason != skill.ReasonTooLarge {
		t.Fatalf("one byte over: %+v", l.Skills[0])
	}
}

func TestMaxRootEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("creates MaxRootEntries directories")
	}
	root := t.TempDir()
	dir := filepath.Join(root, ".agents", "skills")
	for i := range skill.MaxRootEntries + 1 {
		if err := os.MkdirAll(filepath.Join(dir, "d"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l, err := skill.List(context.Background(), project.Project{ID: "p", Root: root}, nil)
	if err != nil || !l.Truncated || l.Total != 0 {
		t.Fatalf("past MaxRootEntries: %+v %v", l, err)
	}
}

// A runner's own skills roots are listed after the project's, named by
// their place in skills.roots, under the same rules: a name the project
// already has is duplicate_name, a symlink out of the root is never read,
// and a root that is gone holds no skill.
func TestRunnerRoots(t *testing.T) {
	p := fixture(t)
	shared := t.TempDir()
	write(t, shared, "lint/SKILL.md", "---\nname: lint\ndescription: Lints.\n---\nRun the linter.\n")
	write(t, shared, "again/SKILL.md", "---\nname: review\ndescription: Same name as the project's.\n---\n")
	outside := t.TempDir()
	write(t, outside, "SKILL.md", "---\nname: leak\ndescription: outside\n---\nSECRET BODY\n")
	if err := os.Symlink(outside, filepath.Join(shared, "leak")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	roots := []string{filepath.Join(t.TempDir(), "gone"), shared}
	l, err := skill.List(ctx, p, roots)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ path, name, source, status, reason string }
	want := []row{
		{"skills.roots[1]/again/SKILL.md", "review", "runner", "invalid", skill.ReasonDuplicateName},
		{"skills.roots[1]/leak/SKILL.md", "", "runner", "invalid", skill.ReasonOutsideProject},
		{"skills.roots[1]/lint/SKILL.md", "lint", "runner", "valid", ""},
	}
	got := l.Skills[len(l.Skills)-len(want):]
	for i, w := range want {
		s := got[i]
		if (row{s.Path, s.Name, s.Source, s.Status, s.Reason}) != w || s.InProject() {
			t.Errorf("runner skill %d: %+v, want %+v", i, s, w)
		}
	}
	if l.Total != 6+len(want) {
		t.Fatalf("total %d", l.Total)
	}
	c, err := skill.Read(ctx, p, roots, "lint")
	if err != nil || c.Instructions != "Run the linter.\n" || c.Source != skill.SourceRunner {
		t.Fatalf("read a runner skill: %+v %v", c, err)
	}
	if _, err := skill.Read(ctx, p, roots, "leak"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("a skill behind a symlink out of the root: %v", err)
	}
	if c, err := skill.Read(ctx, p, roots, "review"); err != nil || c.Source != skill.SourceClaude {
		t.Fatalf("the project's skill keeps its name: %+v %v", c, err)
	}
	b, _ := json.Marshal(l)
	if strings.Contains(string(b), "SECRET") || strings.Contains(string(b), shared) {
		t.Fatal("the listing carries text from outside the root or the root's path")
	}
}
