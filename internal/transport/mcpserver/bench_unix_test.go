//go:build unix

package mcpserver_test

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkToolsCall measures sequential tools/call round trips of a small
// read through one client session.
func BenchmarkToolsCall(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			env := c.setup(b, 1)
			cs := env.sessions[0]
			call := env.call(0)
			ctx := context.Background()
			callOnce(b, cs, call) // warm the connection and check the answer
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := cs.CallTool(ctx, call)
				if err != nil {
					b.Fatal(err)
				}
				if res.IsError {
					b.Fatalf("tool error: %s", textOf(res))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			// The process's CPU time (user and system, all threads: the
			// client, the server and whatever the server does behind the
			// response) per call. On a machine with fewer free cores than
			// the work has threads, time per call follows this figure.
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
