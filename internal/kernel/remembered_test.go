package kernel_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// otherProcess is a second store on the env's ledger, as another process
// sharing the data directory has.
func otherProcess(t *testing.T, e *env) *workflow.Service {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), filepath.Join(e.root, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return workflow.NewService(st, nil)
}

// TestRememberedClaimOfAChangedSessionIsReadAgain: a recorded mutating
// call is admitted on the header this process last wrote; when another
// process closed the session meanwhile, the started commit finds another
// header, and the claim is judged again on a read: the call is refused as
// a claim on a closed session is (the handler does not run, nothing is
// recorded in the session), never run on the stale header.
func TestRememberedClaimOfAChangedSessionIsReadAgain(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	args := `{"project":"` + projA + `","text":"x"}`
	if res := e.call(t, auth.LocalUser(), "write_echo", args, id); !res.Success {
		t.Fatalf("first call: %+v", res.Error)
	}
	if _, _, err := otherProcess(t, e).Close(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	before := len(e.events(t, id))
	invalid := e.k.Stats().InvalidClaims
	res := e.call(t, auth.LocalUser(), "write_echo", args, id)
	if res.Success || !res.Refused || res.Error.Kind != failure.SessionClosed || len(res.ChangedPaths) != 0 {
		t.Fatalf("call on a session another process closed: %+v", res)
	}
	if got := len(e.events(t, id)); got != before {
		t.Fatalf("%d events recorded in the closed session", got-before)
	}
	r := e.records[len(e.records)-1]
	if r.Outcome != evidence.OutcomeRefused || r.Binding.State != evidence.BindingInvalidClaim || e.k.Stats().InvalidClaims != invalid+1 {
		t.Fatalf("record %+v, invalid claims %d (was %d)", r, e.k.Stats().InvalidClaims, invalid)
	}
}

// TestRememberedRefusalIsReadAgain: a claim the remembered header would
// refuse is judged again on a read before any refusal: a session another
// process switched from read_only to normal admits a write, and the stale
// read_only header records no guard denial.
func TestRememberedRefusalIsReadAgain(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "read_only")
	args := `{"project":"` + projA + `","session_id":"` + id + `","text":"x"}`
	if res := e.call(t, auth.LocalUser(), "echo", args, ""); !res.Success {
		t.Fatalf("read in a read_only session: %+v", res.Error)
	}
	if _, err := otherProcess(t, e).Continue(context.Background(), id, "now change it", workflow.ModeNormal); err != nil {
		t.Fatal(err)
	}
	res := e.k.Dispatch(context.Background(), kernel.Call{Tool: "write_echo", Arguments: json.RawMessage(args),
		Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	if !res.Success {
		t.Fatalf("write in a session switched to normal: %+v", res.Error)
	}
	for _, ev := range e.events(t, id) {
		if ev.Kind == workflow.EventGuardDenied {
			t.Fatalf("a guard denial was recorded from the stale header: %+v", ev)
		}
	}
	if got := kindsOf(e.events(t, id)[len(e.events(t, id))-2:]); got != "tool_call_started:business,tool_call_finished:business" {
		t.Fatalf("last events %s", got)
	}
}
