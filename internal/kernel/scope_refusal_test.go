package kernel_test

import (
	"slices"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// TestScopeRefusal: the judgement a transport makes before dispatch is
// the kernel's own: the same error as a dispatched call's refusal, every
// scope of the tool as need; no judgement for a holder, admin or an
// unknown tool; and nothing is recorded by judging.
func TestScopeRefusal(t *testing.T) {
	e := newEnv(t)
	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "t", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	records := len(e.records)
	need, err := e.k.ScopeRefusal(reader, "write_echo")
	if !failure.Is(err, failure.InsufficientScope) || !slices.Equal(need, []auth.Scope{auth.ScopeProjectWrite}) ||
		failure.MessageOf(err) != "tool write_echo requires scope project:write" {
		t.Fatalf("reader: %v %v", need, err)
	}
	if len(e.records) != records {
		t.Fatal("judging recorded something")
	}
	res := e.call(t, reader, "write_echo", `{"project":"`+projA+`","text":"x"}`, "")
	if res.Success || res.Error.Kind != failure.InsufficientScope || res.Error.Message != failure.MessageOf(err) {
		t.Fatalf("dispatched: %+v", res.Error)
	}
	for _, tc := range []struct {
		p    auth.Principal
		tool string
	}{
		{auth.LocalUser(), "write_echo"},
		{reader, "echo"},
		{reader, "no_such_tool"},
	} {
		if need, err := e.k.ScopeRefusal(tc.p, tc.tool); need != nil || err != nil {
			t.Errorf("%s by %v: %v %v", tc.tool, tc.p.Scopes, need, err)
		}
	}
}
