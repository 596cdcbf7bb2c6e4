package jobs_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/runner"
)

// BenchmarkJobOutputMemory runs a job that prints 1 GiB and samples the
// heap while it runs. It reports the peak HeapInuse above the idle heap
// measured before the job started: the output goes to a capped file, so
// this stays far below the output's size (goal: under 64 MiB).
func BenchmarkJobOutputMemory(b *testing.B) {
	e := newEnv(b, jobs.Options{})
	var peakAbove int64
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		idle := int64(ms.HeapInuse)
		var peak atomic.Int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					runtime.ReadMemStats(&m)
					if v := int64(m.HeapInuse); v > peak.Load() {
						peak.Store(v)
					}
				}
			}
		}()
		j, err := e.m.Start(context.Background(), e.spec("head -c 1073741824 /dev/zero"))
		if err != nil {
			b.Fatal(err)
		}
		got, err := e.m.Wait(context.Background(), j.ID, long)
		close(stop)
		<-sampled
		if err != nil || got.StdoutBytes+got.StdoutDropped != 1<<30 {
			b.Fatalf("job %+v %v", got, err)
		}
		peakAbove = max(peakAbove, peak.Load()-idle)
	}
	b.SetBytes(1 << 30)
	b.ReportMetric(float64(peakAbove), "peak-heap-above-idle-B")
	if peakAbove > jobs.MaxOutputFileBytes {
		b.Errorf("peak heap %d bytes above idle, over %d", peakAbove, jobs.MaxOutputFileBytes)
	}
}

// BenchmarkRunSyncOverhead measures a trivial run through the Manager
// against the runner alone, alternated call by call. A run that gets a
// slot at once and ends within the sync grace writes no job record and no
// output files: its output stays in memory and only its result is
// returned.
func BenchmarkRunSyncOverhead(b *testing.B) {
	e := newEnv(b, jobs.Options{})
	spec := e.spec("")
	spec.Run.Argv = []string{"true"}
	spec.Background = false
	benchpair.Run(b, "runner", func() {
		if _, err := runner.Run(context.Background(), &runner.Local{}, spec.Run); err != nil {
			b.Fatal(err)
		}
	}, "manager", func() {
		if _, res, err := e.m.RunSync(context.Background(), spec, 0); err != nil || res == nil {
			b.Fatal(err)
		}
	})
}
