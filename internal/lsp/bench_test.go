package lsp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/navigate"
	"github.com/webcodex/webcodex/internal/workspace"
)

// BenchmarkWarmDefinition compares a warm definition lookup through the
// kernel (the lsp tool: validation, document sync, result shaping,
// observation) with the same request sent straight to the warm gopls,
// alternated (benchpair); the first, cold lookup is reported apart as
// cold-first-ns.
func BenchmarkWarmDefinition(b *testing.B) {
	lsp.NeedGopls(b)
	m := lsp.NewManager(lsp.Options{Sandbox: &runner.Policy{}})
	defer m.Close()
	runners := workspace.Resolver{Local: workspace.Local{Navigator: m}}
	e := kerneltest.New(b, func(reg *kernel.Registry) { navigate.Register(reg, runners) })
	for name, text := range lsp.GoFixture {
		e.Write(name, text)
	}
	line := strings.Split(lsp.GoFixture["a/a.go"], "\n")[6]
	at := strings.Index(line, "Greet")
	col := utf8.RuneCountInString(line[:at]) + 1
	utf16 := len([]rune(line[:at])) + 1 // "𝔸" takes two UTF-16 units
	args := map[string]any{"op": "definition", "path": "a/a.go", "line": 7, "column": col}
	kernelSide := func() {
		if r := e.Call("lsp", args); !r.Success {
			b.Fatalf("lsp: %+v", r.Error)
		}
	}
	start := time.Now()
	kernelSide()
	cold := time.Since(start)
	abs := filepath.Join(e.Project.Root, "a", "a.go")
	direct := func() {
		if err := m.RawDefinition(context.Background(), e.Project, abs, 6, utf16); err != nil {
			b.Fatal(err)
		}
	}
	benchpair.Run(b, "direct", direct, "kernel", kernelSide)
	b.ReportMetric(float64(cold.Nanoseconds()), "cold-first-ns")
}
