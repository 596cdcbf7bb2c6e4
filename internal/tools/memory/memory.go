// Package memorytools registers the Project Memory tools: memory_set,
// memory_read, memory_search, memory_delete and the admin
// memory_scope_list and memory_scope_purge. They sit outside the core
// tool profile (reachable through the full profile and the gateway).
//
// Every tool but the admin ones names its project, whose resolved id and
// canonical root select the memory scope (memory.ScopeFor). Reads and
// searches need project:read + memory:read, sets and deletes
// project:write + memory:manage. The evidence a call leaves in its
// recording session is metadata only (keys, revisions and counts; never
// bodies, snippets or queries).
package memorytools

import (
	"context"
	"strconv"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/memory"
)

// Category is the tools' telemetry category.
const Category = "memory"

// Tools holds the memory service the tools use.
type Tools struct {
	Memory *memory.Service
}

// Register adds the memory tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	read := []auth.Scope{auth.ScopeProjectRead, auth.ScopeMemoryRead}
	manage := []auth.Scope{auth.ScopeProjectWrite, auth.ScopeMemoryManage}
	admin := []auth.Scope{auth.ScopeAdmin}
	ro := kernel.Annotations{ReadOnly: true, Idempotent: true}
	kernel.Register(reg, kernel.Spec[SetInput, SetOutput]{
		Name: "memory_set",
		Description: "Write a Project Memory entry (durable project knowledge). Without expected_revision it creates the key; " +
			"to replace, pass the current revision (stale: revision_conflict with it); an identical set changes nothing.",
		Category: Category, Scopes: manage, Mutates: true, Annotations: kernel.Annotations{Idempotent: true},
		Handler: t.set,
	})
	kernel.Register(reg, kernel.Spec[ReadInput, ReadOutput]{
		Name:        "memory_read",
		Description: "Read one Project Memory entry by memory_key or memory_id, optionally with its kept revisions.",
		Category:    Category, Scopes: read, Annotations: ro,
		Handler: t.read,
	})
	kernel.Register(reg, kernel.Spec[SearchInput, SearchOutput]{
		Name:        "memory_search",
		Description: "Search Project Memory (FTS5 syntax, BM25 over keys, tags and bodies); hits with snippets, limit default 10, max 50.",
		Category:    Category, Scopes: read, Annotations: ro,
		Handler: t.search,
	})
	kernel.Register(reg, kernel.Spec[DeleteInput, DeleteOutput]{
		Name:        "memory_delete",
		Description: "Delete a Project Memory entry at its current revision; setting the key again starts a new memory_id.",
		Category:    Category, Scopes: manage, Mutates: true, Annotations: kernel.Annotations{Destructive: true},
		Handler: t.del,
	})
	kernel.Register(reg, kernel.Spec[ScopeListInput, ScopeListOutput]{
		Name:        "memory_scope_list",
		Description: "Admin: every memory scope (project id and root) with its entry count.",
		Category:    Category, Scopes: admin, Annotations: ro,
		Handler: t.scopes,
	})
	kernel.Register(reg, kernel.Spec[ScopePurgeInput, ScopePurgeOutput]{
		Name:        "memory_scope_purge",
		Description: "Admin: remove a memory scope and every entry in it (scope_id from memory_scope_list).",
		Category:    Category, Scopes: admin, Mutates: true, Annotations: kernel.Annotations{Destructive: true},
		Handler: t.purge,
	})
}

func (t *Tools) service() (*memory.Service, error) {
	if t.Memory == nil {
		return nil, failure.New(failure.Unavailable, "Project Memory is not available")
	}
	return t.Memory, nil
}

// scope is the memory scope of the call's resolved project.
func scope(inv *kernel.Invocation) memory.Scope {
	return memory.ScopeFor(inv.Project.ID, inv.Project.Root)
}

// Meta is an entry without its body.
type Meta struct {
	MemoryKey string    `json:"memory_key"`
	MemoryID  string    `json:"memory_id"`
	Revision  string    `json:"revision"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	WrittenBy string    `json:"written_by_session,omitempty"`
}

func metaOf(e memory.Entry) Meta {
	tags := e.Tags
	if tags == nil {
		tags = []string{}
	}
	return Meta{MemoryKey: e.MemoryKey, MemoryID: e.MemoryID, Revision: e.Revision, Tags: tags,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, WrittenBy: e.WrittenBy}
}

// SetInput is the input of memory_set.
type SetInput struct {
	kernel.ProjectRef
	MemoryKey        string   `json:"memory_key" jsonschema:"1-128 characters"`
	Body             string   `json:"body" jsonschema:"at most 16 KiB"`
	Tags             []string `json:"tags,omitempty" jsonschema:"at most 16; the tag pinned puts the entry first in memory.bootstrap"`
	ExpectedRevision string   `json:"expected_revision,omitempty"`
}

// SetOutput is the result of memory_set.
type SetOutput struct {
	Entry Meta `json:"entry"`
	// Changed is false for a set identical to the current entry.
	Changed bool `json:"changed"`
	Created bool `json:"created"`
	// Redacted reports that credentials were removed from the body or
	// tags before they were stored.
	Redacted bool `json:"redacted"`
}

func (t *Tools) set(ctx context.Context, inv *kernel.Invocation, in SetInput) (SetOutput, error) {
	svc, err := t.service()
	if err != nil {
		return SetOutput{}, err
	}
	r, err := svc.Set(ctx, memory.SetParams{Scope: scope(inv), Key: in.MemoryKey, Body: in.Body, Tags: in.Tags,
		ExpectedRevision: in.ExpectedRevision, Writer: inv.Recorder()})
	if err != nil {
		return SetOutput{}, err
	}
	inv.Fact("memory_key", r.Entry.MemoryKey)
	inv.Fact("memory_revision", r.Entry.Revision)
	inv.Fact("memory_changed", strconv.FormatBool(r.Changed))
	return SetOutput{Entry: metaOf(r.Entry), Changed: r.Changed, Created: r.Created, Redacted: r.Redacted}, nil
}

// ReadInput is the input of memory_read.
type ReadInput struct {
	kernel.ProjectRef
	MemoryKey      string `json:"memory_key,omitempty" jsonschema:"this or memory_id"`
	MemoryID       string `json:"memory_id,omitempty"`
	IncludeHistory bool   `json:"include_history,omitempty" jsonschema:"the kept revisions (at most 10), newest first"`
}

// ReadOutput is the result of memory_read.
type ReadOutput struct {
	Entry   memory.Entry      `json:"entry"`
	History []memory.Revision `json:"history,omitempty"`
}

func (t *Tools) read(ctx context.Context, inv *kernel.Invocation, in ReadInput) (ReadOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ReadOutput{}, err
	}
	e, h, err := svc.Read(ctx, memory.ReadParams{Scope: scope(inv), Key: in.MemoryKey, MemoryID: in.MemoryID, WithHistory: in.IncludeHistory})
	if err != nil {
		return ReadOutput{}, err
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	inv.Fact("memory_key", e.MemoryKey)
	inv.Fact("memory_revision", e.Revision)
	return ReadOutput{Entry: e, History: h}, nil
}

// SearchInput is the input of memory_search.
type SearchInput struct {
	kernel.ProjectRef
	Query string   `json:"query" jsonschema:"FTS5 query, at most 512 characters"`
	Tags  []string `json:"tags,omitempty" jsonschema:"only entries holding every one"`
	Limit int      `json:"limit,omitempty"`
}

// SearchOutput is the result of memory_search.
type SearchOutput struct {
	Hits     []memory.Hit `json:"hits"`
	Returned int          `json:"returned"`
	HasMore  bool         `json:"has_more"`
}

func (t *Tools) search(ctx context.Context, inv *kernel.Invocation, in SearchInput) (SearchOutput, error) {
	svc, err := t.service()
	if err != nil {
		return SearchOutput{}, err
	}
	hits, more, err := svc.Search(ctx, memory.SearchParams{Scope: scope(inv), Query: in.Query, Tags: in.Tags, Limit: in.Limit})
	if err != nil {
		return SearchOutput{}, err
	}
	inv.Fact("memory_hits", strconv.Itoa(len(hits)))
	return SearchOutput{Hits: hits, Returned: len(hits), HasMore: more}, nil
}

// DeleteInput is the input of memory_delete.
type DeleteInput struct {
	kernel.ProjectRef
	MemoryKey        string `json:"memory_key"`
	ExpectedRevision string `json:"expected_revision"`
}

// DeleteOutput is the result of memory_delete.
type DeleteOutput struct {
	Deleted Meta `json:"deleted"`
}

func (t *Tools) del(ctx context.Context, inv *kernel.Invocation, in DeleteInput) (DeleteOutput, error) {
	svc, err := t.service()
	if err != nil {
		return DeleteOutput{}, err
	}
	e, err := svc.Delete(ctx, scope(inv), in.MemoryKey, in.ExpectedRevision)
	if err != nil {
		return DeleteOutput{}, err
	}
	inv.Fact("memory_key", e.MemoryKey)
	inv.Fact("memory_revision", e.Revision)
	return DeleteOutput{Deleted: metaOf(e)}, nil
}

// ScopeListInput is the input of memory_scope_list.
type ScopeListInput struct{}

// ScopeListOutput is the result of memory_scope_list.
type ScopeListOutput struct {
	Scopes []memory.Scope `json:"scopes"`
}

func (t *Tools) scopes(ctx context.Context, inv *kernel.Invocation, _ ScopeListInput) (ScopeListOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ScopeListOutput{}, err
	}
	sc, err := svc.Scopes(ctx)
	if err != nil {
		return ScopeListOutput{}, err
	}
	inv.Fact("memory_scopes", strconv.Itoa(len(sc)))
	return ScopeListOutput{Scopes: sc}, nil
}

// ScopePurgeInput is the input of memory_scope_purge.
type ScopePurgeInput struct {
	ScopeID string `json:"scope_id"`
}

// ScopePurgeOutput is the result of memory_scope_purge.
type ScopePurgeOutput struct {
	ScopeID        string `json:"scope_id"`
	EntriesRemoved int    `json:"entries_removed"`
}

func (t *Tools) purge(ctx context.Context, inv *kernel.Invocation, in ScopePurgeInput) (ScopePurgeOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ScopePurgeOutput{}, err
	}
	n, err := svc.Purge(ctx, in.ScopeID)
	if err != nil {
		return ScopePurgeOutput{}, err
	}
	inv.Fact("memory_scope", in.ScopeID)
	inv.Fact("memory_entries_removed", strconv.Itoa(n))
	return ScopePurgeOutput{ScopeID: in.ScopeID, EntriesRemoved: n}, nil
}
