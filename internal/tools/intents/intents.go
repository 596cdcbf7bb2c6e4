// Package intents registers the declared edit intent tools (decision
// 0079): declare_intent and list_intents.
//
// An intent is advisory: it records the globs a Workflow Session plans to
// change, grants nothing and never blocks a write. A session is declared
// in by the caller's authorized session (session_id, required; the
// project is the session's), and only intents of the caller's authority
// group are listed or compared. declare_intent needs project:write,
// list_intents project:read. Overlap notices reach the sessions' next
// results through the composition root's ambient projection (overlap).
package intents

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/kernel"
)

// Tools holds the intent service the tools use and their clock.
type Tools struct {
	Intents *intent.Service
	// Now is the clock every call takes its time from (time.Now when nil).
	Now func() time.Time
}

// Register adds the intent tools to reg.
func Register(reg *kernel.Registry, t *Tools) {
	kernel.Register(reg, kernel.Spec[DeclareInput, DeclareOutput]{
		Name: "declare_intent",
		Description: "Advisory: declare the files your session plans to change (project globs, ** any depth); replaces its earlier " +
			"intent. Returns overlaps with other sessions' live intents, which are notified too. Blocks nothing.",
		Category: "sessions", Scopes: []auth.Scope{auth.ScopeProjectWrite}, Mutates: true, Session: kernel.SessionRequired,
		Annotations: kernel.Annotations{Idempotent: true},
		Handler:     t.declare,
	})
	kernel.Register(reg, kernel.Spec[ListInput, ListOutput]{
		Name:        "list_intents",
		Description: "Live declared intents on a project (your authority group), oldest first, each with the sessions it overlaps.",
		Category:    "sessions", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler:     t.list,
	})
}

func (t *Tools) service() (*intent.Service, error) {
	if t.Intents == nil {
		return nil, failure.New(failure.Unavailable, "intents are not available")
	}
	return t.Intents, nil
}

func (t *Tools) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

// DeclareInput is the input of declare_intent.
type DeclareInput struct {
	kernel.RequiredSessionRef
	Paths      []string `json:"paths" jsonschema:"1-64 globs relative to the project, each at most 256 characters"`
	Note       string   `json:"note,omitempty" jsonschema:"at most 500 characters; list_intents shows it, overlap notices never"`
	TTLSeconds int      `json:"ttl_seconds,omitempty" jsonschema:"default 3600, 60-86400"`
}

// DeclareOutput is the result of declare_intent.
type DeclareOutput struct {
	Intent intent.Intent `json:"intent"`
	// Overlaps are the other live intents this one overlaps.
	Overlaps []intent.Overlap `json:"overlaps"`
}

func (t *Tools) declare(ctx context.Context, inv *kernel.Invocation, in DeclareInput) (DeclareOutput, error) {
	svc, err := t.service()
	if err != nil {
		return DeclareOutput{}, err
	}
	if inv.Session == nil {
		return DeclareOutput{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	got, overlaps, err := svc.Declare(ctx, intent.DeclareParams{Owner: inv.Principal.AuthorityFingerprint(), Project: inv.Session.Project,
		SessionID: inv.Session.ID, Globs: in.Paths, Note: in.Note, TTL: time.Duration(in.TTLSeconds) * time.Second}, t.now())
	if err != nil {
		return DeclareOutput{}, err
	}
	return DeclareOutput{Intent: got, Overlaps: overlaps}, nil
}

// ListInput is the input of list_intents.
type ListInput struct {
	kernel.ProjectRef
}

// ListOutput is the result of list_intents.
type ListOutput struct {
	// Intents are at most 100 (a project holds no more live intents).
	Intents []intent.Listed `json:"intents"`
}

func (t *Tools) list(ctx context.Context, inv *kernel.Invocation, in ListInput) (ListOutput, error) {
	svc, err := t.service()
	if err != nil {
		return ListOutput{}, err
	}
	ls, err := svc.List(ctx, inv.Principal.AuthorityFingerprint(), inv.Project.ID, t.now())
	if err != nil {
		return ListOutput{}, err
	}
	return ListOutput{Intents: ls}, nil
}
