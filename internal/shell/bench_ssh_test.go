//go:build linux

package shell

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// BenchmarkRemoteShellExec compares one command (`:`) on a real sshd on
// this machine through a persistent shell on the resource ("persistent")
// with the same command as run_shell sends it, a one-shot `ssh` through
// the same ControlMaster ("oneshot"), alternated call by call
// (benchpair); it reports each side's median and persistent/oneshot.
func BenchmarkRemoteShellExec(b *testing.B) {
	s := sshtest.Start(b, sshtest.Options{})
	r := s.Resource("bench")
	p := sshtest.Pool(b)
	ctx := context.Background()
	master, err := p.Master(ctx, sshresource.Key{Session: testSession, Resource: r.Name, Generation: 1}, r)
	if err != nil {
		b.Fatal(err)
	}
	in := func(text string) ([]string, error) {
		remote, err := sshresource.RemoteCommand("", text)
		if err != nil {
			return nil, err
		}
		return master.Argv(remote)
	}
	m := newManager(b, Options{})
	info, err := openRemote(b, m, Sh, &Remote{Resource: r.Name, Argv: in, Command: in})
	if err != nil {
		b.Fatal(err)
	}
	oneshot, err := in("sh -c :")
	if err != nil {
		b.Fatal(err)
	}
	env := sshresource.ClientEnv(os.Environ())
	benchpair.Run(b, "oneshot", func() {
		cmd := exec.Command(oneshot[0], oneshot[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}, "persistent", func() {
		if res, err := m.Exec(ctx, info.ShellID, testSession, ":", 10*time.Second); err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	})
}
