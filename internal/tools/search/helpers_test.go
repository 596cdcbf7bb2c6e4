package search_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/tools/search"
)

// resolver is a fixed project registry.
type resolver map[string]project.Project

func (r resolver) Get(_ context.Context, id string) (project.Project, error) {
	p, ok := r[id]
	if !ok {
		return project.Project{}, failure.New(failure.UnknownProject, "no project %q", id)
	}
	return p, nil
}

type env struct {
	t *testing.T
	k *kernel.Kernel
	p project.Project
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := project.Project{ID: project.LocalID("demo"), Name: "demo", Root: root}
	reg := kernel.NewRegistry()
	search.Register(reg)
	k := kernel.New(kernel.Options{Registry: reg, Projects: resolver{p.ID: p}})
	return &env{t: t, k: k, p: p}
}

// write creates the project file rel with content, making parents.
func (e *env) write(rel, content string) {
	e.t.Helper()
	abs := filepath.Join(e.p.Root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// callWith dispatches tool with args as principal; "project" defaults to
// the test project.
func (e *env) callWith(pr auth.Principal, tool string, args map[string]any) kernel.Result {
	e.t.Helper()
	if _, ok := args["project"]; !ok {
		args["project"] = e.p.ID
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.raw(pr, tool, raw)
}

func (e *env) raw(pr auth.Principal, tool string, raw []byte) kernel.Result {
	return e.k.Dispatch(context.Background(), kernel.Call{
		Tool: tool, Arguments: raw, Principal: pr, Source: kernel.SourceInternal,
	})
}

func (e *env) call(tool string, args map[string]any) kernel.Result {
	e.t.Helper()
	return e.callWith(auth.LocalUser(), tool, args)
}

// ok asserts success and decodes the output into T.
func ok[T any](t *testing.T, res kernel.Result) T {
	t.Helper()
	if !res.Success {
		t.Fatalf("call failed: %+v", res.Error)
	}
	raw, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode output %s: %v", raw, err)
	}
	return out
}

// fails asserts a failure of kind k and returns its message.
func fails(t *testing.T, res kernel.Result, k failure.Kind) string {
	t.Helper()
	if res.Success || res.Error == nil {
		t.Fatalf("call succeeded, want %s: %+v", k, res.Output)
	}
	if res.Error.Kind != k {
		t.Fatalf("error kind %s (%s), want %s", res.Error.Kind, res.Error.Message, k)
	}
	return res.Error.Message
}

// outputBytes returns the JSON encoding of a result's output.
func outputBytes(t *testing.T, res kernel.Result) []byte {
	t.Helper()
	raw, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
