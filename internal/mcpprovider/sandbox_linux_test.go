package mcpprovider_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
)

// A provider runs confined like any child: under workspace-write it
// writes in the project and nowhere else (the tool's own error comes back
// as a failure, and the outside file never appears); under a read-only
// project it writes nothing at all.
func TestProviderIsConfined(t *testing.T) {
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	bin := testProvider(t)
	outside := t.TempDir()
	m := mcpprovider.NewManager(mcpprovider.Options{Providers: map[string]mcpprovider.Provider{"test": {Command: bin}},
		Sandbox: &runner.Policy{Mode: runner.WorkspaceWrite}})
	t.Cleanup(m.Close)
	ctx := context.Background()
	write := func(p project.Project, path string) error {
		t.Helper()
		d, err := m.Do(ctx, p, mcpprovider.Request{Op: "describe", Provider: "test", Tool: "write"})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"path": path})
		_, err = m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: "write", Arguments: args, SchemaRevision: d.Described.Revision})
		return err
	}
	p := project.Project{ID: "p", Name: "p", Root: t.TempDir()}
	if err := write(p, filepath.Join(p.Root, "inside.txt")); err != nil {
		t.Fatalf("a write in the project: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.Root, "inside.txt")); err != nil {
		t.Fatal(err)
	}
	err := write(p, filepath.Join(outside, "escaped.txt"))
	wantKind(t, err, failure.OperationFailed, mcpprovider.OutcomeToolError)
	if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); !os.IsNotExist(err) {
		t.Fatalf("the provider wrote outside the project: %v", err)
	}
	ro := project.Project{ID: "ro", Name: "ro", Root: t.TempDir(), Sandbox: string(runner.ReadOnly)}
	wantKind(t, write(ro, filepath.Join(ro.Root, "inside.txt")), failure.OperationFailed, mcpprovider.OutcomeToolError)
	if _, err := os.Stat(filepath.Join(ro.Root, "inside.txt")); !os.IsNotExist(err) {
		t.Fatalf("the provider wrote in a read-only project: %v", err)
	}
}
