package app_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/failure"
)

// TestDocsNameEveryTool keeps docs/tools.md and README.md true to the
// registry: every registered tool is documented, and nothing documented
// as a tool is missing from the registry.
func TestDocsNameEveryTool(t *testing.T) {
	reg := app.NewRegistry(&app.App{})
	for _, doc := range []string{"../../docs/tools.md", "../../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range reg.Tools() {
			if !strings.Contains(string(b), "`"+tl.Name+"`") {
				t.Errorf("%s does not mention tool %s", doc, tl.Name)
			}
		}
	}
	b, _ := os.ReadFile("../../docs/tools.md")
	for _, k := range failure.Kinds {
		c := failure.ClassOf(k)
		row := fmt.Sprintf("| `%s` | `%s` | `%s` | %d |", k, c.FailureKind, c.RecoveryKind, c.HTTPStatus)
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/tools.md has no row %s", row)
		}
	}
}
