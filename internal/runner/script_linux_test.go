package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// A confined script reads its own file even when a denied directory lies
// beside it in the temporary directory (the grants are made path by path
// around it), under every confined mode, twice (the second from a cached
// ruleset).
func TestConfinedScriptReadsItsFile(t *testing.T) {
	e := newSandboxEnv(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	deny := filepath.Join(tmp, "data")
	if err := os.Mkdir(deny, 0o700); err != nil {
		t.Fatal(err)
	}
	l := closing(t, &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{deny, e.data}}})
	for _, mode := range []runner.Mode{runner.WorkspaceWrite, runner.ReadOnly, runner.WorkspaceWrite} {
		res, err := runner.Run(context.Background(), l, runner.Spec{Argv: []string{"sh"}, Dir: e.project, Script: []byte("echo ran"),
			Sandbox: runner.Sandbox{Mode: mode, Project: e.project}})
		if err != nil || res.ExitCode != 0 || res.Stdout.Text != "ran\n" || res.Sandbox != mode {
			t.Fatalf("a confined script (%s): %v %+v", mode, err, res)
		}
	}
	if d := scriptDirs(t, tmp); len(d) != 0 {
		t.Fatalf("left behind: %v", d)
	}
	// A confined process writes its private directory (and nothing
	// else outside the project under read-only).
	for _, mode := range []runner.Mode{runner.WorkspaceWrite, runner.ReadOnly} {
		var got bytes.Buffer
		res, err := runner.Run(context.Background(), l, runner.Spec{Argv: []string{"sh", "-c", `echo ok > "$1/r"`, "sh", runner.PrivateDirToken},
			Dir: e.project, Private: true, Collect: "r", CollectTo: &got, Sandbox: runner.Sandbox{Mode: mode, Project: e.project}})
		if err != nil || res.ExitCode != 0 || got.String() != "ok\n" {
			t.Fatalf("a confined private directory (%s): %v %+v %q", mode, err, res, got.String())
		}
	}
}
