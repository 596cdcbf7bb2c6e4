package skill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
)

// Content is one skill with its instructions, as Read returns it.
type Content struct {
	Skill
	// Instructions is the Markdown body after the front matter.
	Instructions string `json:"instructions"`
	// Bytes is the size of SKILL.md.
	Bytes int `json:"bytes"`
}

// List reads the skills of p (see [Listing]). A skills root that is
// absent, not a directory or outside the project holds no skill. Errors:
// the kinds of [project.Project.OpenTree], cancelled when ctx ends.
//
// roots are the machine's own skills roots (a runner's skills.roots),
// listed after the project's as SourceRunner; a root that cannot be
// opened holds no skill, and a skill directory that is a symlink out of
// its root is ReasonOutsideProject, as in a project.
func List(ctx context.Context, p project.Project, roots []string) (Listing, error) {
	l, _, err := scan(ctx, p, roots, "")
	return l, err
}

// Read returns the valid skill named name among those List(p, roots)
// lists. Errors: not_found when no listed skill has that name;
// invalid_arguments naming the reason when the skill of that name is
// invalid; the kinds of List.
func Read(ctx context.Context, p project.Project, roots []string, name string) (Content, error) {
	if name == "" {
		return Content{}, failure.New(failure.InvalidArguments, "name is required")
	}
	l, c, err := scan(ctx, p, roots, name)
	if err != nil {
		return Content{}, err
	}
	if c != nil {
		return *c, nil
	}
	for _, s := range l.Skills {
		if s.Name == name {
			return Content{}, failure.New(failure.InvalidArguments, "skill %q (%s) is invalid: %s", name, s.Path, s.Reason).
				WithDetail("reason", s.Reason)
		}
	}
	return Content{}, failure.New(failure.NotFound, "no skill named %q in the project's .agents/skills or .claude/skills or the runner's skills.roots", name)
}

// scan lists p's skills; when want is set it also returns the content of
// the first valid skill named want.
func scan(ctx context.Context, p project.Project, roots []string, want string) (Listing, *Content, error) {
	t, err := p.OpenTree()
	if err != nil {
		return Listing{}, nil, err
	}
	defer t.Close()
	places := make([]place, 0, len(Roots)+len(roots))
	for _, r := range Roots {
		places = append(places, place{tree: t, dir: r.Dir, source: r.Source})
	}
	for i, root := range roots {
		rt, err := openRoot(root)
		if err != nil {
			continue // an absent root holds no skill
		}
		defer rt.Close()
		places = append(places, place{tree: rt, dir: ".", source: SourceRunner, shown: fmt.Sprintf("skills.roots[%d]", i)})
	}
	l := Listing{Skills: []Skill{}}
	var found *Content
	valid := map[string]bool{}
	for _, r := range places {
		names, more := skillDirs(r.tree, r.dir)
		l.Truncated = l.Truncated || more
		for _, n := range names {
			if err := ctx.Err(); err != nil {
				return Listing{}, nil, failure.Wrap(failure.Cancelled, err, "listing skills was cancelled")
			}
			rel := path.Join(r.dir, n, FileName)
			if !present(r.tree, rel) {
				continue
			}
			l.Total++
			if len(l.Skills) == MaxSkills {
				l.Truncated = true
				continue
			}
			s, body, size := readSkill(r.tree, rel)
			s.Source = r.source
			if r.shown != "" {
				s.Path = path.Join(r.shown, rel)
			}
			if s.Status == StatusValid {
				if valid[s.Name] {
					s.Status, s.Reason = StatusInvalid, ReasonDuplicateName
				} else {
					valid[s.Name] = true
					if want != "" && s.Name == want && found == nil {
						found = &Content{Skill: s, Instructions: body, Bytes: size}
					}
				}
			}
			l.Skills = append(l.Skills, s)
		}
	}
	return l, found, nil
}

// place is one directory skills are listed from: dir in tree, with the
// source its skills get; shown, when set, replaces the tree in the paths
// listed (a runner's root is named by its place in skills.roots, never by
// its path on the runner's machine).
type place struct {
	tree        *project.Tree
	dir, source string
	shown       string
}

// openRoot opens a skills root as a tree of its own, so that its skills
// are read under the same path policy as a project's: a symlink out of the
// root is never followed.
func openRoot(dir string) (*project.Tree, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	return project.Project{ID: "skills.roots", Root: real}.OpenTree()
}

// skillDirs returns the sorted names of the entries of the skills root
// dir that may be skill directories (directories and symlinks), at most
// MaxRootEntries of them, and whether more were left unread.
func skillDirs(t *project.Tree, dir string) ([]string, bool) {
	f, err := t.Root().Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	es, err := f.ReadDir(MaxRootEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	more := false
	if len(es) == MaxRootEntries {
		if extra, _ := f.ReadDir(1); len(extra) > 0 {
			more = true
		}
	}
	var names []string
	for _, e := range es {
		if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, more
}

// present reports whether rel names something: a SKILL.md that is there,
// or a path the policy refuses (a skill directory that is a symlink out
// of the project), which readSkill reports as invalid.
func present(t *project.Tree, rel string) bool {
	if _, err := t.Root().Lstat(rel); err == nil {
		return true
	}
	return t.Escaped(rel) != nil
}

// readSkill reads and parses the SKILL.md at rel through t, reading at
// most MaxSkillBytes+1 bytes. It returns the listed skill (its Source
// unset), the body of a valid one and the file's size.
func readSkill(t *project.Tree, rel string) (Skill, string, int) {
	s := Skill{Path: rel, Status: StatusInvalid}
	if t.Escaped(rel) != nil {
		s.Reason = ReasonOutsideProject
		return s, "", 0
	}
	// O_NONBLOCK keeps a named pipe from blocking the open.
	f, _, err := t.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		s.Reason = ReasonUnreadable
		if t.Escaped(rel) != nil {
			s.Reason = ReasonOutsideProject
		}
		return s, "", 0
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		s.Reason = ReasonUnreadable
		return s, "", 0
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillBytes+1))
	if err != nil {
		s.Reason = ReasonUnreadable
		return s, "", 0
	}
	if len(data) > MaxSkillBytes {
		s.Reason = ReasonTooLarge
		return s, "", 0
	}
	s.Revision = Revision(data)
	parsed, reason := Parse(data)
	s.Name, s.Description = parsed.Name, parsed.Description
	if reason == ReasonBadName && len(s.Name) > MaxNameChars {
		s.Name = strings.ToValidUTF8(s.Name[:MaxNameChars], "")
	}
	if reason != "" {
		s.Reason = reason
		return s, "", len(data)
	}
	s.Status = StatusValid
	return s, parsed.Body, len(data)
}
