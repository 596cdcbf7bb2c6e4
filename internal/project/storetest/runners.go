package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/runnerhub"
)

// RunRunners runs the runnerhub.Store contract against stores returned by
// open (a new, empty store each call, cleaned up by open).
func RunRunners(t *testing.T, open func(t *testing.T) runnerhub.Store) {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 6, 7, 8, 9, 10, 111222333, time.UTC)
	rec := func(id, instance string) runnerhub.Record {
		return runnerhub.Record{ClientID: id, Owner: "team", InstanceID: instance, ConnectedAt: at, LastSeen: at,
			Hello: runnerhub.Hello{Version: "v1", OS: "linux", Arch: "amd64", Sandbox: "landlock", Capabilities: []string{"shell"},
				Resources: []string{"db"}, Projects: []string{"api"}, MaxConcurrentJobs: 4}}
	}

	t.Run("GenerationsAndRecords", func(t *testing.T) {
		s := open(t)
		for i, want := range []uint64{1, 2, 3} {
			r := rec("laptop", "inst-"+string(rune('a'+i)))
			if g, err := s.NextGeneration(ctx, r); err != nil || g != want {
				t.Fatalf("NextGeneration #%d = %d, %v; want %d", i+1, g, err, want)
			}
		}
		if g, err := s.NextGeneration(ctx, rec("desk", "x")); err != nil || g != 1 {
			t.Fatalf("another runner's first generation = %d, %v", g, err)
		}
		got, err := s.Runners(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []runnerhub.Record{rec("desk", "x"), rec("laptop", "inst-c")}
		want[0].Generation, want[1].Generation = 1, 3
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Runners (-want +got):\n%s", diff)
		}
	})

	t.Run("SeenNeverMovesBack", func(t *testing.T) {
		s := open(t)
		if _, err := s.NextGeneration(ctx, rec("laptop", "a")); err != nil {
			t.Fatal(err)
		}
		later := at.Add(time.Minute)
		for _, when := range []time.Time{later, at.Add(time.Second)} {
			if err := s.Seen(ctx, "laptop", when); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Seen(ctx, "nobody", later); err != nil {
			t.Fatalf("Seen of an unknown runner: %v", err)
		}
		got, err := s.Runners(ctx)
		if err != nil || len(got) != 1 || !got[0].LastSeen.Equal(later) {
			t.Fatalf("Runners after Seen = %+v, %v; want last seen %v", got, err, later)
		}
	})

	t.Run("ConcurrentConnectionsGetDistinctGenerations", func(t *testing.T) {
		s := open(t)
		const n = 8
		gens := make([]uint64, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				g, err := s.NextGeneration(ctx, rec("laptop", "i"))
				if err != nil {
					t.Error(err)
				}
				gens[i] = g
			})
		}
		wg.Wait()
		seen := map[uint64]bool{}
		for _, g := range gens {
			if g < 1 || g > n || seen[g] {
				t.Fatalf("generations %v: not 1..%d each once", gens, n)
			}
			seen[g] = true
		}
	})
}
