//go:build linux

// The shell tests run real shells and count their processes through /proc
// (runner.CountGroup, runner.Survivors): they are Linux tests.

package shell

import (
	"context"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/runner"
)

// BenchmarkShellExec compares one command through a persistent shell with
// the same command as a one-shot runner execution (sh -c :). The issue's
// goal is a persistent shell at least 5x faster per command.
func BenchmarkShellExec(b *testing.B) {
	for _, d := range []Dialect{Sh, Bash} {
		b.Run("persistent_"+string(d), func(b *testing.B) {
			m := newManager(b, Options{})
			info, _ := openShell(b, m, testSession, d)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				res, err := m.Exec(ctx, info.ShellID, testSession, ":", 10*time.Second)
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
	b.Run("oneshot_sh", func(b *testing.B) {
		l := &runner.Local{Getenv: testGetenv}
		dir := tempRoot(b)
		ctx := context.Background()
		for b.Loop() {
			res, err := runner.Run(ctx, l, runner.Spec{Argv: []string{"sh", "-c", ":"}, Dir: dir, Timeout: 10 * time.Second})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
}
