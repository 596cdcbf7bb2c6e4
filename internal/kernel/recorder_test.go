package kernel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
)

// TestInvocationRecorder: a handler sees the verified recorder's id and
// nothing else — "" without a recording_session_id, the recorder (not the
// business session) with both, and never runs for a refused claim.
func TestInvocationRecorder(t *testing.T) {
	e := newEnv(t)
	w, c := e.start(t, ""), e.start(t, "")
	ran := 0
	reg := kernel.NewRegistry()
	kernel.Register(reg, kernel.Spec[echoIn, echoOut]{
		Name: "whoami", Description: "reports the recorder", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session: kernel.SessionOptional,
		Handler: func(_ context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
			ran++
			return echoOut{Text: inv.Recorder()}, nil
		},
	})
	k := kernel.New(kernel.Options{Registry: reg, Projects: projects{projA: {ID: projA, Name: "a", Root: e.root}}, Sessions: e.svc})
	call := func(business, recorder string) kernel.Result {
		in := map[string]string{"project": projA, "text": "x"}
		if business != "" {
			in["session_id"] = business
		}
		args, _ := json.Marshal(in)
		return k.Dispatch(context.Background(), kernel.Call{Tool: "whoami", Arguments: args, RecordingSessionID: recorder,
			Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	}
	for _, tc := range []struct{ business, recorder, want string }{
		{"", "", ""}, {c, "", ""}, {"", w, w}, {c, w, w}, {c, c, c},
	} {
		res := call(tc.business, tc.recorder)
		if !res.Success || res.Output.(echoOut).Text != tc.want {
			t.Errorf("business %q recorder %q: %s, want recorder %q", tc.business, tc.recorder, res.Body, tc.want)
		}
	}
	before := ran
	if res := call(c, "wc_sess_00000000000000000000000000000000"); res.Success || res.Error.Kind != failure.UnknownSessionID || ran != before {
		t.Fatalf("an unknown recorder: %s (handler ran %d times)", res.Body, ran-before)
	}
}
