package kernel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// keyedOut is the output of the keyed test tool: a replay of Of when Of
// is set (what a domain decides under an idempotency key).
type keyedOut struct {
	Of string `json:"of"`
}

func (o keyedOut) Replay() workflow.Replay { return workflow.Replay{Of: o.Of} }

const original = "wc_msg_0123456789abcdef0123456789abcdef"

// registerKeyed adds keyed_echo: text "again" replays original, "fail"
// returns that replay with an error, "long" a replay whose original id
// the ledger cannot store, anything else is a new effect.
func registerKeyed(e *env) {
	kernel.Register(e.k.Registry(), kernel.Spec[echoIn, keyedOut]{
		Name: "keyed_echo", Description: "a keyed mutating tool", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Mutates: true, Session: kernel.SessionOptional,
		Handler: func(_ context.Context, inv *kernel.Invocation, in echoIn) (keyedOut, error) {
			switch in.Text {
			case "again":
				return keyedOut{Of: original}, nil
			case "fail":
				return keyedOut{Of: original}, failure.New(failure.IdempotencyConflict, "key used with another payload")
			case "long":
				return keyedOut{Of: strings.Repeat("x", workflow.MaxReplayOfChars+1)}, nil
			}
			return keyedOut{}, nil
		},
	})
}

// lastFinished returns the newest tool_call_finished of session id.
func lastFinished(t *testing.T, e *env, id string) workflow.Event {
	t.Helper()
	evs := e.events(t, id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == workflow.EventToolCallFinished {
			return evs[i]
		}
	}
	t.Fatalf("no tool_call_finished in %s", id)
	return workflow.Event{}
}

// The kernel records what a tool output's Replay says, and only for a
// successful call: on the finished event of every session the call is
// recorded in, on its evidence record and as a typed fact of the Result.
func TestKernelRecordsReplays(t *testing.T) {
	e := newEnv(t)
	registerKeyed(e)
	c, w := e.start(t, ""), e.start(t, "")
	args := func(text string) string {
		return `{"project":"` + projA + `","session_id":"` + c + `","text":"` + text + `"}`
	}
	for _, tc := range []struct {
		text     string
		success  bool
		replayOf string
	}{
		{"new", true, ""},
		{"again", true, original},
		{"fail", false, ""},
	} {
		res := e.call(t, auth.LocalUser(), "keyed_echo", args(tc.text), w)
		if res.Success != tc.success || res.ReplayOf != tc.replayOf {
			t.Fatalf("%s: success %v, replay_of %q", tc.text, res.Success, res.ReplayOf)
		}
		rec := e.records[len(e.records)-1]
		if rec.ReplayOf != tc.replayOf || rec.InvocationID == "" {
			t.Fatalf("%s: record replay_of %q, want %q", tc.text, rec.ReplayOf, tc.replayOf)
		}
		for _, id := range []string{c, w} {
			f := lastFinished(t, e, id)
			if f.InvocationID != rec.InvocationID || f.Replayed != (tc.replayOf != "") || f.ReplayOf != tc.replayOf {
				t.Fatalf("%s: finished event in %s is %+v, want replay_of %q", tc.text, id, f, tc.replayOf)
			}
			if err := workflow.ValidateEvent(f); err != nil {
				t.Fatalf("%s: %v", tc.text, err)
			}
		}
	}
	s, err := e.svc.Get(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counters.Replays != 1 || s.Counters.ToolFailures != 1 {
		t.Fatalf("counters %+v, want 1 replay and 1 failure", s.Counters)
	}
}

// A replay whose original id the ledger cannot store fails the call as an
// internal defect, with nothing changed: it is never recorded as a new
// effect, nor with a cut pointer.
func TestKernelRefusesAnUnstorableReplay(t *testing.T) {
	e := newEnv(t)
	registerKeyed(e)
	c := e.start(t, "")
	res := e.call(t, auth.LocalUser(), "keyed_echo", `{"project":"`+projA+`","session_id":"`+c+`","text":"long"}`, "")
	if res.Success || res.ReplayOf != "" || res.Error == nil || res.Error.Kind != failure.Internal {
		t.Fatalf("result %+v, want an internal failure with no replay", res)
	}
	rec := e.records[len(e.records)-1]
	if rec.ReplayOf != "" || rec.Outcome != "failed" {
		t.Fatalf("record outcome %q replay_of %q, want failed with none", rec.Outcome, rec.ReplayOf)
	}
	f := lastFinished(t, e, c)
	if f.Replayed || f.ReplayOf != "" || f.Outcome == workflow.OutcomeOK {
		t.Fatalf("finished event %+v, want a failure with no replay", f)
	}
	if err := workflow.ValidateEvent(f); err != nil {
		t.Fatal(err)
	}
}
