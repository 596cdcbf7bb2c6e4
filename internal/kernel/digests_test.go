package kernel_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
)

// TestAmbientSeesDigests: the digests a handler reports with
// Invocation.Saw reach the projections in AmbientCall.Digests, in order;
// a dry run's reach none.
func TestAmbientSeesDigests(t *testing.T) {
	e := newEnv(t)
	reg := kernel.NewRegistry()
	kernel.Register(reg, kernel.Spec[echoIn, echoOut]{
		Name: "saw", Description: "reports digests", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session: kernel.SessionOptional,
		Handler: func(_ context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
			inv.Saw(kernel.Digest{Path: "a.go", SHA256: "aa"})
			inv.Saw(kernel.Digest{Path: "b.go", SHA256: "bb", Wrote: true}, kernel.Digest{Path: "c.go", Wrote: true})
			if in.Text == "dry" {
				inv.MarkDryRun()
			}
			return echoOut{Text: in.Text}, nil
		},
	})
	spy := &spyAmbient{}
	k := kernel.New(kernel.Options{Registry: reg, Sessions: e.svc,
		Projects: projects{projA: {ID: projA, Name: "a", Root: e.root}}, Ambient: []kernel.Ambient{spy}})
	call := func(text string) {
		t.Helper()
		res := k.Dispatch(context.Background(), kernel.Call{Tool: "saw", Arguments: json.RawMessage(`{"project":"` + projA + `","text":"` + text + `"}`),
			Principal: auth.LocalUser(), Source: kernel.SourceMCP})
		if !res.Success {
			t.Fatalf("saw: %+v", res.Error)
		}
	}
	call("real")
	call("dry")
	want := []kernel.Digest{{Path: "a.go", SHA256: "aa"}, {Path: "b.go", SHA256: "bb", Wrote: true}, {Path: "c.go", Wrote: true}}
	if len(spy.calls) != 2 || !slices.Equal(spy.calls[0].Digests, want) || spy.calls[1].Digests != nil {
		t.Fatalf("digests seen: %+v", spy.calls)
	}
}
