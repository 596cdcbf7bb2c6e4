package workflowdb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/workflow"
)

func benchBoard(b *testing.B, n workflow.Notifier) (*workflow.Service, *workflow.Board, string) {
	b.Helper()
	st := open(b, filepath.Join(b.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	board := workflow.NewBoard(st, nil)
	if n != nil {
		board.WithNotifier(n)
	}
	return svc, board, start(b, svc).ID
}

// BenchmarkBoardPostVsAppend times a post (a todo-sized note, retention
// included once the board is full) against a plain ledger append of one
// event, alternately (benchpair). Goal: post ≥ 0.8× the append's
// throughput, i.e. ratio ≤ 1.25.
var seedMessages = workflow.MaxRetainedMessages

func BenchmarkBoardPostVsAppend(b *testing.B) {
	ctx := context.Background()
	svc, board, id := benchBoard(b, nil)
	// Start from a full board, so that every post pays for retention.
	for i := range seedMessages {
		if _, _, err := board.Post(ctx, workflow.PostParams{SessionID: id, Kind: workflow.MessageNote, Body: fmt.Sprint("seed ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	ev := workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "read_files", CallID: "call_x"}
	benchpair.Run(b, "append", func() {
		if _, _, err := svc.Append(ctx, id, ev); err != nil {
			b.Fatal(err)
		}
	}, "post", func() {
		if _, _, err := board.Post(ctx, workflow.PostParams{SessionID: id, Kind: workflow.MessageProgress, Body: "step done: tests pass"}); err != nil {
			b.Fatal(err)
		}
	})
}

// stampNotifier records when Notify was called, then wakes.
type stampNotifier struct {
	*workflow.LocalNotifier
	mu sync.Mutex
	at time.Time
}

func (s *stampNotifier) Notify(id string) {
	s.mu.Lock()
	s.at = time.Now()
	s.mu.Unlock()
	s.LocalNotifier.Notify(id)
}

// BenchmarkBoardWake measures the latency from a post's wake signal to the
// return of each waiting observe_session_messages wait (which re-reads the
// board), with 1 and 100 waiters, against a bare channel close to the same
// number of goroutines, alternately round by round. It reports the p50 and
// p99 of both and the p99 difference (goal ≤ 5 ms).
func BenchmarkBoardWake(b *testing.B) {
	for _, waiters := range []int{1, 100} {
		b.Run(fmt.Sprint("waiters=", waiters), func(b *testing.B) {
			ctx := context.Background()
			n := &stampNotifier{LocalNotifier: workflow.NewLocalNotifier()}
			_, board, id := benchBoard(b, n)
			var lBoard, lBare []time.Duration
			for i := 0; b.Loop(); i++ {
				if i%2 == 1 {
					lBare = append(lBare, bareRound(waiters)...)
					continue
				}
				o, err := board.Observe(ctx, workflow.ObserveParams{SessionID: id})
				if err != nil {
					b.Fatal(err)
				}
				var ready, done sync.WaitGroup
				woke := make([]time.Time, waiters)
				for w := range waiters {
					ready.Add(1)
					done.Add(1)
					go func() {
						defer done.Done()
						r, err := board.Observe(ctx, workflow.ObserveParams{SessionID: id, Token: o.Token, Wait: workflow.MaxObserveWait,
							BeforeWait: func() error { ready.Done(); return nil }})
						woke[w] = time.Now()
						if err != nil || r.WaitOutcome != workflow.WaitUpdated {
							b.Errorf("observe: %v %s", err, r.WaitOutcome)
						}
					}()
				}
				ready.Wait()
				if _, _, err := board.Post(ctx, workflow.PostParams{SessionID: id, Kind: workflow.MessageNote, Body: "wake"}); err != nil {
					b.Fatal(err)
				}
				done.Wait()
				n.mu.Lock()
				at := n.at
				n.mu.Unlock()
				for _, t := range woke {
					lBoard = append(lBoard, t.Sub(at))
				}
			}
			if len(lBare) == 0 {
				lBare = bareRound(waiters)
			}
			pb50, pb99 := percentiles(lBoard)
			pc50, pc99 := percentiles(lBare)
			b.ReportMetric(float64(pb50.Microseconds()), "board-p50-µs")
			b.ReportMetric(float64(pb99.Microseconds()), "board-p99-µs")
			b.ReportMetric(float64(pc50.Microseconds()), "chan-p50-µs")
			b.ReportMetric(float64(pc99.Microseconds()), "chan-p99-µs")
			b.ReportMetric(float64((pb99 - pc99).Microseconds()), "p99-over-chan-µs")
		})
	}
}

// bareRound closes a channel that waiters goroutines wait on and returns
// each one's wake latency.
func bareRound(waiters int) []time.Duration {
	ch := make(chan struct{})
	var ready, done sync.WaitGroup
	woke := make([]time.Time, waiters)
	for w := range waiters {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-ch
			woke[w] = time.Now()
		}()
	}
	ready.Wait()
	at := time.Now()
	close(ch)
	done.Wait()
	out := make([]time.Duration, waiters)
	for i, t := range woke {
		out[i] = t.Sub(at)
	}
	return out
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}
