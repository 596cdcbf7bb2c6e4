package kernel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
)

type shapeIn struct {
	kernel.ProjectRef
}

type shapeInner struct {
	Inner []int `json:"inner"`
}

type shapePoint struct {
	N int `json:"n"`
}

// shapeOut has a member of every kind whose nullability Register decides.
type shapeOut struct {
	List  []string       `json:"list"`
	Map   map[string]int `json:"map"`
	Opt   []string       `json:"opt,omitempty"`
	Zero  []string       `json:"zero,omitzero"`
	Ptr   *shapePoint    `json:"ptr"`
	Obj   kernel.Object  `json:"obj"`
	Arr   kernel.Array   `json:"arr,omitempty"`
	Maybe *shapePoint    `json:"maybe,omitempty"`
	shapeInner
}

type untypedOut struct {
	Loose any `json:"loose"`
}

// TestOutputNullability: a tool's output schema says null exactly where
// the wire can carry null (decision 0046), and a nil required slice or map
// is sent empty.
func TestOutputNullability(t *testing.T) {
	e := kerneltest.New(t, func(reg *kernel.Registry) {
		kernel.Register(reg, kernel.Spec[shapeIn, shapeOut]{
			Name: "shape", Description: "returns the zero output", Scopes: []auth.Scope{auth.ScopeProjectRead},
			Handler: func(context.Context, *kernel.Invocation, shapeIn) (shapeOut, error) { return shapeOut{}, nil },
		})
	})
	tool, _ := e.Kernel.Registry().Lookup("shape")
	props := kernel.SchemaMap(tool.OutputSchema)["properties"].(map[string]any)
	got := map[string]any{}
	for k, v := range props {
		got[k] = v.(map[string]any)["type"]
	}
	want := map[string]any{
		"list": "array", "map": "object", "opt": "array", "zero": "array", "inner": "array",
		"ptr": []any{"null", "object"}, "obj": []any{"null", "object"},
		"arr": "array", "maybe": "object",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("member types (-want +got):\n%s", diff)
	}
	res := e.Call("shape", map[string]any{})
	if !res.Success {
		t.Fatalf("shape: %+v", res.Error)
	}
	if out := string(kerneltest.OutputBytes(t, res)); out != `{"list":[],"map":{},"ptr":null,"obj":null,"inner":[]}` {
		t.Fatalf("zero output on the wire: %s", out)
	}
	var body struct{ Output json.RawMessage }
	json.Unmarshal(res.Body, &body)
	if !strings.Contains(string(body.Output), `"list":[]`) {
		t.Fatalf("body: %s", res.Body)
	}
}

// TestOutputMemberWithoutType: a top-level output member with no JSON
// type (a plain any) is a declaration error found at registration.
func TestOutputMemberWithoutType(t *testing.T) {
	defer func() {
		r := recover()
		if msg, _ := r.(string); !strings.Contains(msg, "output member loose has no JSON type") {
			t.Fatalf("Register did not refuse an untyped member: %v", r)
		}
	}()
	kernel.Register(kernel.NewRegistry(), kernel.Spec[shapeIn, untypedOut]{
		Name: "untyped", Description: "an untyped output member", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Handler: func(context.Context, *kernel.Invocation, shapeIn) (untypedOut, error) { return untypedOut{}, nil },
	})
}
