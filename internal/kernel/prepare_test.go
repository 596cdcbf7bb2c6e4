package kernel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// prepTool registers a mutating tool that prepares before its effect:
// its handler reports on prepared, waits in BeforeEffect, and then reports
// whether the session held the call's durable tool_call_started at its
// effect.
func prepTool(t *testing.T, e *env, name string, prepared chan<- struct{}, startedAtEffect chan<- bool) {
	kernel.Register(e.k.Registry(), kernel.Spec[echoIn, echoOut]{
		Name: name, Description: "a tool that plans while its started event commits", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Mutates: true, Writes: true, Session: kernel.SessionOptional, PreparesBeforeEffect: true,
		Handler: func(ctx context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
			prepared <- struct{}{}
			if err := inv.BeforeEffect(ctx); err != nil {
				return echoOut{}, err
			}
			found := false
			for _, ev := range e.events(t, inv.RecordedIn()[0]) {
				found = found || (ev.Kind == workflow.EventToolCallStarted && ev.InvocationID == inv.ID)
			}
			startedAtEffect <- found
			inv.Change("out.txt")
			return echoOut{Text: in.Text}, nil
		},
	})
}

// TestPreparingToolRunsWhileStartedCommits holds the ledger's writer and
// checks that a tool with PreparesBeforeEffect runs (prepares) before its
// tool_call_started is committed, that its effect comes only after that
// commit, and that the call is recorded started then finished.
func TestPreparingToolRunsWhileStartedCommits(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	prepared, startedAtEffect := make(chan struct{}, 1), make(chan bool, 1)
	prepTool(t, e, "prep_write", prepared, startedAtEffect)

	held, release := make(chan struct{}), make(chan struct{})
	go e.store.DB().Writer.Do(context.Background(), func(context.Context, *sql.Tx) error { close(held); <-release; return nil })
	<-held
	done := make(chan kernel.Result, 1)
	go func() {
		done <- e.call(t, auth.LocalUser(), "prep_write", `{"project":"`+projA+`","text":"x"}`, id)
	}()
	<-prepared // the handler runs while the writer is held: nothing committed
	for _, ev := range e.events(t, id) {
		if ev.Kind == workflow.EventToolCallStarted && ev.Tool == "prep_write" {
			t.Fatalf("tool_call_started committed while the writer was held: %+v", ev)
		}
	}
	close(release)
	if !<-startedAtEffect {
		t.Fatal("the effect came before the durable tool_call_started")
	}
	res := <-done
	if !res.Success {
		t.Fatalf("prep_write: %+v", res.Error)
	}
	evs := e.events(t, id)
	tail := evs[len(evs)-2:]
	if tail[0].Kind != workflow.EventToolCallStarted || tail[1].Kind != workflow.EventToolCallFinished ||
		tail[0].CallID != tail[1].CallID || tail[1].Outcome != workflow.OutcomeOK || tail[0].Tool != "prep_write" {
		t.Fatalf("ledger tail %s, want started then finished of prep_write", kindsOf(tail))
	}
}

// TestPreparingToolStopsWhenStartedFails makes the started commit fail (a
// trigger refuses it) and checks that BeforeEffect tells the handler, that
// nothing is recorded as finished, and that the call is refused as a tool
// that did not run.
func TestPreparingToolStopsWhenStartedFails(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	prepared, startedAtEffect := make(chan struct{}, 1), make(chan bool, 1)
	prepTool(t, e, "prep_fail", prepared, startedAtEffect)
	if err := e.store.DB().Writer.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TRIGGER refuse_prep BEFORE INSERT ON events WHEN NEW.tool = 'prep_fail'
			BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := len(e.events(t, id))
	res := e.call(t, auth.LocalUser(), "prep_fail", `{"project":"`+projA+`","text":"x"}`, id)
	<-prepared
	if len(startedAtEffect) != 0 {
		t.Fatal("the handler reached its effect although tool_call_started failed")
	}
	if res.Success || !res.Refused || res.Error.Kind != failure.Unavailable || res.StateChanged {
		b, _ := json.Marshal(res.Error)
		t.Fatalf("result %s refused=%v state_changed=%v, want a refused unavailable call that did not run", b, res.Refused, res.StateChanged)
	}
	if after := e.events(t, id); len(after) != before {
		t.Fatalf("ledger grew from %d to %d events (%s)", before, len(after), kindsOf(after[before:]))
	}
	e.mu.Lock()
	last := e.records[len(e.records)-1]
	e.mu.Unlock()
	if last.Tool != "prep_fail" || last.Outcome != evidence.OutcomeRefused {
		t.Fatalf("evidence record %s %s, want prep_fail refused", last.Tool, last.Outcome)
	}
	if st := e.k.Stats(); st.RecordFailures != 1 {
		t.Fatalf("record failures %d, want 1", st.RecordFailures)
	}
}
