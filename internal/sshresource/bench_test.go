//go:build unix

package sshresource_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/sshresource"
	"github.com/webcodex/webcodex/internal/sshresource/sshtest"
)

// BenchmarkRunShell runs one one-shot command (`true`) on a real sshd on
// this machine over its own connection ("direct") and through a
// ControlMaster ("master"), alternated call by call (benchpair), and
// reports each side's median and the ratio master/direct. Issue goal:
// master at least 3× faster (ratio ≤ 0.33).
func BenchmarkRunShell(b *testing.B) {
	s := sshtest.Start(b, sshtest.Options{})
	r := s.Resource("bench")
	p := sshtest.Pool(b)
	m, err := p.Master(context.Background(), sshresource.Key{Session: "wc_sess_bench", Resource: r.Name, Generation: 1}, r)
	if err != nil {
		b.Fatal(err)
	}
	remote, err := sshresource.RemoteCommand("", "true")
	if err != nil {
		b.Fatal(err)
	}
	viaMaster, err := m.Argv(remote)
	if err != nil {
		b.Fatal(err)
	}
	viaDirect, err := r.Argv(remote)
	if err != nil {
		b.Fatal(err)
	}
	env := sshresource.ClientEnv(os.Environ())
	runArgv := func(argv []string) func() {
		return func() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
	benchpair.Run(b, "direct", runArgv(viaDirect), "master", runArgv(viaMaster))
}
