// Package navigate provides the read-only lsp tool: typed code
// navigation (definition, references, hover, document and workspace
// symbols, diagnostics) through a real language server running where the
// project's files are (package lsp). A successful call observes the
// project paths it named, never symbol bodies or hover text.
package navigate

import (
	"context"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/lsp/lspop"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Category is the telemetry category of the lsp tool.
const Category = "navigation"

// Input is the input of lsp.
type Input struct {
	kernel.ProjectRef
	Op       string `json:"op" jsonschema:"definition|references|hover|document_symbols|workspace_symbols|diagnostics"`
	Path     string `json:"path,omitempty" jsonschema:"file"`
	Line     int    `json:"line,omitempty" jsonschema:"1-based"`
	Column   int    `json:"column,omitempty" jsonschema:"1-based, in characters"`
	Query    string `json:"query,omitempty" jsonschema:"workspace_symbols"`
	Language string `json:"language,omitempty" jsonschema:"workspace_symbols without path: go|python|typescript"`
}

// Register adds lsp to reg; runners serves each call's project.
func Register(reg *kernel.Registry, runners workspace.Runners) {
	f := lspop.Finder{Runners: runners}
	kernel.Register(reg, kernel.Spec[Input, lsp.Result]{
		Runners:     true,
		Name:        "lsp",
		Description: "Navigate code with the project's language server.",
		Category:    Category, Scopes: []auth.Scope{auth.ScopeProjectRead},
		Annotations: kernel.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(ctx context.Context, inv *kernel.Invocation, in Input) (lsp.Result, error) {
			req := lsp.Request{Op: in.Op, Path: in.Path, Line: in.Line, Column: in.Column, Query: in.Query, Language: in.Language}
			r, err := f.Navigate(ctx, inv.Project, req)
			if err != nil {
				return lsp.Result{}, err
			}
			inv.Observe(r.Paths()...)
			return r, nil
		},
	})
}
