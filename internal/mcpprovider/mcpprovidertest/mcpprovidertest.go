// Package mcpprovidertest builds the small go-sdk MCP server the tests
// use as a provider (internal/mcpprovider/testdata/provider): an echo
// tool, one that answers over the size bound, one that never answers and
// one that exits mid-call.
package mcpprovidertest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Provider builds the test provider into t's temporary directory (removed
// when t ends; the go build cache makes builds after the first cheap) and
// returns its path.
func Provider(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(t.TempDir(), "provider")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "testdata", "provider")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP provider: %v: %s", err, out)
	}
	return bin
}
