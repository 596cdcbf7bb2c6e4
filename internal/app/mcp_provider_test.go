package app_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/mcpprovider"
)

var (
	providerOnce sync.Once
	providerBin  string
	providerErr  error
)

// testMCPProvider builds the mcpprovider tests' small go-sdk server once
// per test binary and returns its path.
func testMCPProvider(t testing.TB) string {
	t.Helper()
	providerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "app-mcp-provider-")
		if err != nil {
			providerErr = err
			return
		}
		providerBin = filepath.Join(dir, "provider")
		if out, err := exec.Command("go", "build", "-o", providerBin, "../mcpprovider/testdata/provider").CombinedOutput(); err != nil {
			providerErr = errors.New(string(out))
		}
	})
	if providerErr != nil {
		t.Fatalf("build the test MCP provider: %v", providerErr)
	}
	return providerBin
}

// withTestProvider configures the test provider as [mcp.providers.test].
func withTestProvider(t testing.TB, c *app.Config) {
	c.MCP.Providers = map[string]mcpprovider.Provider{"test": {Command: testMCPProvider(t)}}
}
