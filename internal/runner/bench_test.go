package runner_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/runner"
)

// BenchmarkRunTrue runs `true` under each containment mechanism: the cost
// of a unit (cgroup leaf or tracking scan) on the shortest run.
func BenchmarkRunTrue(b *testing.B) {
	for name, c := range map[string]*runner.Containment{"setup": runner.Setup(), "tracking": runner.Tracking()} {
		b.Run(name, func(b *testing.B) {
			l := &runner.Local{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }, Contain: c}
			dir := b.TempDir()
			for b.Loop() {
				res, err := runner.Run(context.Background(), l, runner.Spec{Argv: []string{"true"}, Dir: dir})
				if err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkContainedVsExec runs `true` contained (Setup's mechanism, the
// reaper running) against os/exec running the same command, alternated
// call by call: the runner's own share of a recorded run_process.
func BenchmarkContainedVsExec(b *testing.B) {
	l := &runner.Local{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }, Contain: runner.Setup()}
	dir := b.TempDir()
	benchpair.Run(b, "os_exec", func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}, "contained", func() {
		res, err := runner.Run(context.Background(), l, runner.Spec{Argv: []string{"true"}, Dir: dir})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	})
}
