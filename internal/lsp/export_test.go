package lsp

import (
	"context"

	"github.com/webcodex/webcodex/internal/project"
)

// RawDefinition sends textDocument/definition for the 0-based UTF-16
// position straight to p's warm Go server, bypassing validation and
// result shaping: the benchmark's base side.
func (m *Manager) RawDefinition(ctx context.Context, p project.Project, abs string, line, character int) error {
	l, _ := LanguageNamed(m.opt.Languages, "go")
	s, release, err := m.acquire(ctx, p.Root, l)
	if err != nil {
		return err
	}
	defer release()
	_, err = s.rawRequest(ctx, "textDocument/definition", map[string]any{
		"textDocument": map[string]string{"uri": fileURI(abs)},
		"position":     lspPosition{Line: line, Character: character},
	})
	return err
}

// GoFixture is the two-package module of the gopls tests.
var GoFixture = goFixture

// NeedGopls and WriteFixture are the gopls tests' helpers.
var (
	NeedGopls    = needGopls
	WriteFixture = writeFixture
)
