// Package mcpprovidertest builds the small go-sdk MCP server the tests
// use as a provider (internal/mcpprovider/testdata/provider): an echo
// tool, one that answers over the size bound, one that never answers and
// one that exits mid-call.
package mcpprovidertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	bin  string
	fail string
)

// Provider builds the test provider once per test binary and returns its
// path.
func Provider(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "testdata", "provider")
		dir, err := os.MkdirTemp("", "mcp-test-provider-")
		if err != nil {
			fail = err.Error()
			return
		}
		bin = filepath.Join(dir, "provider")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			fail = err.Error() + ": " + string(out)
		}
	})
	if fail != "" {
		t.Fatalf("build the test MCP provider: %s", fail)
	}
	return bin
}
