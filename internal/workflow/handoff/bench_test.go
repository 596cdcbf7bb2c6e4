package handoff_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

// benchLedger is a session with 2,000 retained events: instructions,
// reads and writes with realistic project paths, failures and go_test
// evidence.
func benchLedger() (workflow.Session, []workflow.Event) {
	r := rand.New(rand.NewPCG(1, 2))
	l := newLedger("Refactor the storage layer and keep the tests green.")
	for l.s.EventsObserved < workflow.TailLimit {
		paths := make([]string, 1+r.IntN(8))
		for i := range paths {
			paths[i] = fmt.Sprintf("internal/pkg%02d/file%03d.go", r.IntN(40), r.IntN(200))
		}
		switch k := r.IntN(40); {
		case k == 0:
			l.add(instr("Continue: also cover the error paths of the storage layer."))
		case k == 1:
			l.add(goTest("example.com/store.TestPut", "example.com/store.TestGet"))
		case k < 20:
			l.add(read(paths...))
		case k < 32:
			l.add(write(paths...))
		default:
			l.add(finished("run_shell", workflow.OutcomeFailed, "exit_status"))
		}
	}
	return l.s, l.evs
}

// BenchmarkBrief compares building continuation feedback plus the brief
// for 2,000 retained events with one json.Marshal of those events (the
// goal: the brief costs at most a tenth of that encode).
func BenchmarkBrief(b *testing.B) {
	s, evs := benchLedger()
	b.Run("feedback+brief", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fb := handoff.Feedback(s, evs, handoff.FeedbackOptions{Profile: handoff.ProfileFull})
			handoff.Brief(handoff.BriefInput{Session: s, Events: evs, Feedback: &fb})
		}
	})
	b.Run("marshal_events", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(evs); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBriefMaximal is the worst case: 2,000 events with 64 maximal
// paths each.
func BenchmarkBriefMaximal(b *testing.B) {
	s, evs := randomLedger(rand.New(rand.NewPCG(3, 4)))
	b.Run("feedback+brief", func(b *testing.B) {
		for b.Loop() {
			fb := handoff.Feedback(s, evs, handoff.FeedbackOptions{Profile: handoff.ProfileFull})
			handoff.Brief(handoff.BriefInput{Session: s, Events: evs, Feedback: &fb})
		}
	})
	b.Run("marshal_events", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(evs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
