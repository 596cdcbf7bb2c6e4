package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// replicaApps opens n servers (replicas, in this process) on one fresh
// PostgreSQL database, each with its own data directory, serving one
// local project at the same path.
func replicaApps(b *testing.B, n int) []*app.App {
	url, proj := pgtest.URL(b), b.TempDir()
	key := filepath.Join(b.TempDir(), "evidence.key")
	apps := make([]*app.App, n)
	for i := range apps {
		apps[i] = openReplica(b, url, key, "bench="+proj)
	}
	return apps
}

// BenchmarkReplicaThroughput is issue 27's curve: the same round of
// recorded posts (32 clients, each to its own session) served by 1, 2
// and 3 replicas on one PostgreSQL database, client i calling replica
// i mod n, the three sides alternated. Throughput is 32 posts over a
// side's median round.
func BenchmarkReplicaThroughput(b *testing.B) {
	const clients = 32
	var sides []benchpair.Side
	for n := 1; n <= 3; n++ {
		apps := replicaApps(b, n)
		sides = append(sides, benchpair.Side{Name: fmt.Sprintf("replicas-%d", n), F: spreadRound(b, apps, clients)})
	}
	m := benchpair.RunSides(b, sides...)
	for i, d := range m {
		b.ReportMetric(clients/d.Seconds(), fmt.Sprintf("posts/s-%d", i+1))
	}
	b.ReportMetric(float64(m[0])/float64(m[1]), "speedup-2")
	b.ReportMetric(float64(m[0])/float64(m[2]), "speedup-3")
}

// spreadRound returns one round: each of n clients posts a note to its
// own session, recorded in it, on replica i mod len(apps), all at once.
func spreadRound(b *testing.B, apps []*app.App, n int) func() {
	sessions := make([]string, n)
	for i := range sessions {
		sessions[i] = benchCall(b, apps[0], "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	}
	return func() {
		var wg sync.WaitGroup
		for i, id := range sessions {
			a := apps[i%len(apps)]
			wg.Go(func() {
				args, _ := json.Marshal(map[string]any{"session_id": id, "kind": "note", "message": "progress"})
				res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "post_session_message", Arguments: args,
					RecordingSessionID: id, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
				if !res.Success {
					b.Errorf("post_session_message: %+v", res.Error)
				}
			})
		}
		wg.Wait()
	}
}

// BenchmarkBoardWakeAcrossReplicas is the board wake at the tool
// level: replica A's observe_session_messages waits (up to 30 s) after
// the board's latest token while replica B posts a note to the session;
// the latency runs from the start of B's post until A's call returns
// with it (B's recorded post, its commit and NOTIFY, A's listener, A's
// re-read). Reported as p50 and p99 (goal: p99 ≤ 20 ms on loopback).
func BenchmarkBoardWakeAcrossReplicas(b *testing.B) {
	apps := replicaApps(b, 2)
	a, bb := apps[0], apps[1]
	sess := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	tok := benchCall(b, a, "observe_session_messages", map[string]any{"session_id": sess}, "")["observation_token"].(string)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		woken := make(chan map[string]any, 1)
		started := make(chan struct{})
		go func() {
			close(started)
			woken <- benchCall(b, a, "observe_session_messages", map[string]any{"session_id": sess, "after_observation_token": tok, "wait_seconds": 30}, "")
		}()
		<-started
		benchCall(b, bb, "session_summary", map[string]any{"session_id": sess}, "") // lets A's wait park
		t0 := time.Now()
		benchCall(b, bb, "post_session_message", map[string]any{"session_id": sess, "kind": "note", "message": "wake"}, "")
		out := <-woken
		lat = append(lat, time.Since(t0))
		if msgs, _ := out["messages"].([]any); len(msgs) != 1 {
			b.Fatalf("the wait on A returned %v", out["messages"])
		}
		tok = out["observation_token"].(string)
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
