package skill

import (
	"context"
	"encoding/json"

	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// ListArgs are the arguments of the skills.list operation (none).
type ListArgs struct{}

// ReadArgs are the arguments of the skills.read operation.
type ReadArgs struct {
	Name string `json:"name"`
}

// The operations that read skills where the project's files are (see
// package workspace), so that a runner's project is read on its runner.
var (
	listOp = workspace.NewOp("skills.list", func(ctx context.Context, env workspace.Env, p project.Project, _ ListArgs) (Listing, error) {
		return List(ctx, p, env.SkillRoots)
	})
	readOp = workspace.NewOp("skills.read", func(ctx context.Context, env workspace.Env, p project.Project, in ReadArgs) (Content, error) {
		return Read(ctx, p, env.SkillRoots, in.Name)
	})
)

// Ops are the operations a runner serves for skills.
func Ops() []workspace.Served { return []workspace.Served{listOp, readOp} }

// Finder reads skills through the runner serving each project.
type Finder struct {
	Runners workspace.Runners
}

// List is [List] run where p's files are.
func (f Finder) List(ctx context.Context, p project.Project) (Listing, error) {
	return workspace.Do(ctx, f.Runners.For(p), p, listOp, ListArgs{})
}

// Read is [Read] run where p's files are.
func (f Finder) Read(ctx context.Context, p project.Project, name string) (Content, error) {
	return workspace.Do(ctx, f.Runners.For(p), p, readOp, ReadArgs{Name: name})
}

// Catalog is the selection metadata of p's skills (see [NewCatalog]).
func (f Finder) Catalog(ctx context.Context, p project.Project) (Catalog, error) {
	l, err := f.List(ctx, p)
	if err != nil {
		return Catalog{}, err
	}
	return NewCatalog(l), nil
}

// StatusAvailable is the status of a served catalog.
const StatusAvailable = "available"

// Catalog is the skills part of an extension catalog: selection metadata
// only, never a skill's instructions, at most MaxSkills entries and
// MaxCatalogBytes of metadata.
type Catalog struct {
	Status    string  `json:"status"`
	Skills    []Entry `json:"skills"`
	Total     int     `json:"total"`
	Truncated bool    `json:"truncated"`
}

// Entry is one skill's selection metadata.
type Entry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Revision    string `json:"revision"`
	Status      string `json:"status"`
	Reason      string `json:"reason,omitempty"`
}

// NewCatalog projects l to its selection metadata, leaving out the
// entries past MaxCatalogBytes of encoded JSON (Truncated is then set).
func NewCatalog(l Listing) Catalog {
	c := Catalog{Status: StatusAvailable, Skills: make([]Entry, 0, len(l.Skills)), Total: l.Total, Truncated: l.Truncated}
	used := 0
	for _, s := range l.Skills {
		e := Entry{Name: s.Name, Description: s.Description, Source: s.Source, Revision: s.Revision, Status: s.Status, Reason: s.Reason}
		b, _ := json.Marshal(e)
		n := len(b) + 1 // the comma
		if used+n > MaxCatalogBytes {
			c.Truncated = true
			break
		}
		used += n
		c.Skills = append(c.Skills, e)
	}
	return c
}
