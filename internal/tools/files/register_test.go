package files_test

import (
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/tools/files"
)

func TestRegisterDeclaresReadOnlyTools(t *testing.T) {
	if files.Category != "files" {
		t.Fatalf("Category = %q", files.Category)
	}
	reg := kernel.NewRegistry()
	registerLocal(reg)
	var names []string
	for _, tool := range reg.Tools() {
		names = append(names, tool.Name)
		if tool.Category != files.Category {
			t.Errorf("%s category %q", tool.Name, tool.Category)
		}
		if !slices.Equal(tool.Scopes, []auth.Scope{auth.ScopeProjectRead}) {
			t.Errorf("%s scopes %v", tool.Name, tool.Scopes)
		}
		if tool.Annotations != (kernel.Annotations{ReadOnly: true, Idempotent: true}) {
			t.Errorf("%s annotations %+v", tool.Name, tool.Annotations)
		}
		if tool.Mutates || tool.Writes || tool.Session != kernel.SessionOptional {
			t.Errorf("%s mutates=%v writes=%v session=%v", tool.Name, tool.Mutates, tool.Writes, tool.Session)
		}
		if !slices.Contains(tool.InputSchema.Required, "project") || slices.Contains(tool.InputSchema.Required, "session_id") {
			t.Errorf("%s required = %v", tool.Name, tool.InputSchema.Required)
		}
	}
	if !slices.Equal(names, []string{"list_project_files", "project_overview", "read_files"}) {
		t.Fatalf("tools = %v", names)
	}
}
