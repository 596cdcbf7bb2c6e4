package auditpg_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
)

// TestTwoReplicasOneSession: two replicas (two stores over two pools on
// one database) write at once: group-committed Submits past
// MaxEventsPerSession into one session, and direct appends whose batches
// span two sessions in opposite orders under a small bound. Every counter
// is exact, every session holds between its bound less the trim slack
// and its bound, its retained count is what it holds, and concurrent
// first requests of one principal on both replicas make one session.
func TestTwoReplicasOneSession(t *testing.T) {
	a, b, dbA, _ := replicas(t)
	var svcs []*audit.Service
	for _, st := range []*auditpg.Store{a, b} {
		svc := audit.NewService(st, nil)
		svc.Start(nil)
		t.Cleanup(func() { svc.Stop(ctx) })
		svcs = append(svcs, svc)
	}

	const principalsRequests = 16
	resolved := make([][]string, len(svcs))
	var wg sync.WaitGroup
	for i, svc := range svcs {
		resolved[i] = make([]string, principalsRequests)
		for j := range principalsRequests {
			wg.Go(func() {
				id, _, err := svc.Affinity(ctx, "fp", "")
				if err != nil {
					t.Error(err)
				}
				resolved[i][j] = id
			})
		}
	}
	wg.Wait()
	for _, ids := range resolved {
		for _, id := range ids {
			if id != resolved[0][0] {
				t.Fatalf("two replicas' first requests resolved to %v", resolved)
			}
		}
	}

	const (
		submitters = 8
		submits    = 70 // 2*8*70 = 1120 events: past MaxEventsPerSession twice
		appenders  = 4
		batches    = 20
		maxEvents  = 16
	)
	for r, svc := range svcs {
		for g := range submitters {
			wg.Go(func() {
				for i := range submits {
					ev := audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("s-%d-%d-%d", r, g, i), Status: audit.EventSuccess, DurationMS: 2}}
					if err := svc.Submit(ctx, time.Minute, "s", ev, audit.Attribution{}); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	// Replica a's batches name x first, b's y first.
	orders := [][]string{{"x", "y", "x"}, {"y", "x", "y"}}
	for r, st := range []*auditpg.Store{a, b} {
		for g := range appenders {
			wg.Go(func() {
				for i := range batches {
					var evs []audit.Event
					for k, session := range orders[r] {
						evs = append(evs, audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("d-%d-%d-%d-%d", r, g, i, k), SessionID: session,
							Status: audit.EventFailed, DurationMS: 3, EndedAt: 1_800_000_000}})
					}
					if err := st.AppendEvents(ctx, evs, maxEvents, time.Unix(1_800_000_000, 0)); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	for _, svc := range svcs {
		if n := svc.WriteFailures(); n != 0 {
			t.Fatalf("%d write failures", n)
		}
	}
	perReplica := appenders * batches
	for _, c := range []struct {
		session     string
		total, max  int
		ok, failed  int64
		durationPer int64
	}{
		{"s", 2 * submitters * submits, audit.MaxEventsPerSession, 2 * submitters * submits, 0, 2},
		{"x", 3 * perReplica, maxEvents, 0, 3 * int64(perReplica), 3},
		{"y", 3 * perReplica, maxEvents, 0, 3 * int64(perReplica), 3},
	} {
		sess, _, err := a.Session(ctx, c.session, 1)
		if err != nil {
			t.Fatal(err)
		}
		if sess.TotalActions != int64(c.total) || sess.SuccessCount != c.ok || sess.FailedCount != c.failed || sess.TotalDurationMS != int64(c.total)*c.durationPer {
			t.Errorf("session %s: counters %+v, want %d events", c.session, sess, c.total)
		}
		var held, retained int64
		if err := dbA.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM audit.action_events WHERE session_id = $1),
			retained_events FROM audit.action_sessions WHERE session_id = $1`, c.session).Scan(&held, &retained); err != nil {
			t.Fatal(err)
		}
		if low := int64(c.max - auditrow.TrimSlack(c.max)); held != retained || held < low || held > int64(c.max) {
			t.Errorf("session %s holds %d events (retained_events %d), want %d to %d", c.session, held, retained, low, c.max)
		}
	}
}
