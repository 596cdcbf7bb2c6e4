package sessionshell

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/workspace"
)

// A machine that keeps no shell Manager refuses every shell operation
// unavailable, before anything runs.
func TestOpsWithoutAManagerAreUnavailable(t *testing.T) {
	p := project.Project{ID: "local:p", Name: "p", Root: t.TempDir()}
	r := workspace.LocalOnly(&runner.Local{}).For(p)
	ctx := context.Background()
	id := shell.IDPrefix + "00000000000000000000000000000000"
	_, openErr := workspace.Do(ctx, r, p, openOp, openArgs{SessionID: "s", Project: p.ID, Cwd: ".", Shell: shell.Sh})
	_, execErr := workspace.Do(ctx, r, p, execOp, execArgs{ShellID: id, SessionID: "s", Command: "true", TimeoutSeconds: 1})
	_, statusErr := workspace.Do(ctx, r, p, statusOp, refArgs{ShellID: id, SessionID: "s"})
	_, closeErr := workspace.Do(ctx, r, p, closeOp, refArgs{ShellID: id, SessionID: "s"})
	_, sessErr := CloseSession(ctx, r, p, "s")
	for i, err := range []error{openErr, execErr, statusErr, closeErr, sessErr} {
		if !failure.Is(err, failure.Unavailable) {
			t.Errorf("op %d without a Manager: %v", i, err)
		}
	}
}

// A runner's exec result that names no known failure kind is internal,
// never a success; a known kind keeps its kind and message.
func TestExecResultOutcome(t *testing.T) {
	res := shell.Result{ExitCode: 0, State: shell.Lost}
	if _, err := (execResult{Result: res, Kind: "made_up", Message: "x"}).outcome(); !failure.Is(err, failure.Internal) {
		t.Fatalf("an unknown kind: %v", err)
	}
	got, err := (execResult{Result: res, Kind: failure.ShellResetRequired, Message: "lost"}).outcome()
	if !failure.Is(err, failure.ShellResetRequired) || failure.MessageOf(err) != "lost" || got.State != shell.Lost {
		t.Fatalf("a known kind: %v %+v", err, got)
	}
	if _, err := (execResult{Result: res}).outcome(); err != nil {
		t.Fatalf("no kind: %v", err)
	}
}

// Over a runner, a session's shell is closed by its id's session only:
// shell.close_session needs a session.
func TestCloseSessionNeedsASession(t *testing.T) {
	m := shell.NewManager(shell.Options{})
	defer m.Close()
	p := project.Project{ID: "local:p", Name: "p", Root: t.TempDir()}
	r := workspace.Resolver{Local: workspace.Local{Host: &runner.Local{}, Shells: m}}.For(p)
	if _, err := CloseSession(context.Background(), r, p, ""); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("close_session without a session: %v", err)
	}
}

// BenchmarkExecThroughTheBoundary alternates a command of a persistent
// shell run as before the runner boundary (Manager.Exec) and through it
// (workspace.Do of shell.exec on the in-process runner, as the tool calls
// it now). The goal is a ratio of at most 1.05.
func BenchmarkExecThroughTheBoundary(b *testing.B) {
	m := shell.NewManager(shell.Options{})
	defer m.Close()
	root, _ := project.CanonicalRoot(b.TempDir())
	p := project.Project{ID: "local:bench", Name: "bench", Root: root}
	local := workspace.Resolver{Local: workspace.Local{Host: &runner.Local{}, Shells: m}}.For(p)
	ctx := context.Background()
	info, err := workspace.Do(ctx, local, p, openOp, openArgs{SessionID: "s", Project: p.ID, Cwd: ".", Shell: shell.Sh})
	if err != nil {
		b.Fatal(err)
	}
	benchpair.Run(b, "direct", func() {
		if _, err := m.Exec(ctx, info.ShellID, "s", ":", time.Minute); err != nil {
			b.Fatal(err)
		}
	}, "boundary", func() {
		if _, err := workspace.Do(ctx, local, p, execOp, execArgs{ShellID: info.ShellID, SessionID: "s", Command: ":", TimeoutSeconds: 60}); err != nil {
			b.Fatal(err)
		}
	})
}
