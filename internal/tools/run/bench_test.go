package run_test

import (
	"context"
	"github.com/webcodex/webcodex/internal/workspace"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/run"
)

// BenchmarkRunProcessTrue calls run_process `true` through the kernel and
// a job manager, as the server does, alternating an unsandboxed host and a
// workspace-write one (a data directory denied) call by call, and reports
// the median of each and their ratio.
func BenchmarkRunProcessTrue(b *testing.B) {
	p := kerneltest.TempProject(b, nil)
	data := b.TempDir()
	call := func(host *runner.Local) func() runner.Mode {
		dir := b.TempDir()
		js, err := jobsdb.Open(context.Background(), filepath.Join(dir, "jobs.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { js.Close() })
		m, err := jobs.NewManager(jobs.Options{Store: js, Host: host, Dir: filepath.Join(dir, "jobs")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(context.Background()) })
		reg := kernel.NewRegistry()
		run.Register(reg, &run.Tools{Runners: workspace.LocalOnly(host), Jobs: m})
		e := &kerneltest.Env{T: b, Kernel: kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}}), Project: p}
		return func() runner.Mode {
			return kerneltest.OK[run.Output](b, e.Call("run_process", map[string]any{"argv": []string{"true"}})).Sandbox
		}
	}
	policy := &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{data}}
	defer policy.Close()
	plain, boxed := call(&runner.Local{}), call(&runner.Local{Policy: policy})
	if plain() != runner.Off || boxed() != runner.WorkspaceWrite {
		b.Fatal("the hosts do not run the modes they should")
	}
	benchpair.Run(b, "unsandboxed", func() { plain() }, "sandboxed", func() { boxed() })
}
