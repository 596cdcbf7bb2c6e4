// Package kerneltest runs tools through a real kernel in tests: one
// temporary project, the tools under test registered, calls dispatched
// exactly as a transport would, and helpers to assert on ToolResults.
package kerneltest

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
)

// Projects is a fixed project registry.
type Projects map[string]project.Project

// Get implements kernel.ProjectResolver.
func (r Projects) Get(_ context.Context, id string) (project.Project, error) {
	p, ok := r[id]
	if !ok {
		return project.Project{}, failure.New(failure.UnknownProject, "no project %q", id)
	}
	return p, nil
}

// TempProject returns a project agent:local:t rooted in a fresh temporary
// directory holding files (project-relative path -> content).
func TempProject(t testing.TB, files map[string]string) project.Project {
	t.Helper()
	root, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := project.Project{ID: project.LocalID("t"), Name: "t", Root: root}
	for rel, content := range files {
		writeFile(t, p, rel, content)
	}
	return p
}

func writeFile(t testing.TB, p project.Project, rel, content string) {
	t.Helper()
	abs := filepath.Join(p.Root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Env is a kernel over one temporary project, agent:local:demo.
type Env struct {
	T       testing.TB
	Kernel  *kernel.Kernel
	Project project.Project
}

// New returns an Env whose registry holds the tools that register adds.
// It uses no session store: calls must not name sessions.
func New(t testing.TB, register ...func(*kernel.Registry)) *Env {
	t.Helper()
	root, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := project.Project{ID: project.LocalID("demo"), Name: "demo", Root: root}
	reg := kernel.NewRegistry()
	for _, r := range register {
		r(reg)
	}
	return &Env{T: t, Kernel: kernel.New(kernel.Options{Registry: reg, Projects: Projects{p.ID: p}}), Project: p}
}

// Write creates the project file rel with content, making parent
// directories.
func (e *Env) Write(rel, content string) {
	e.T.Helper()
	writeFile(e.T, e.Project, rel, content)
}

// Call dispatches tool as the local user; "project" defaults to the Env's
// project.
func (e *Env) Call(tool string, args map[string]any) kernel.Result {
	e.T.Helper()
	return e.CallAs(auth.LocalUser(), tool, args)
}

// CallAs dispatches tool as principal p; "project" defaults to the Env's
// project.
func (e *Env) CallAs(p auth.Principal, tool string, args map[string]any) kernel.Result {
	e.T.Helper()
	if _, ok := args["project"]; !ok {
		args["project"] = e.Project.ID
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.T.Fatal(err)
	}
	return e.Raw(p, tool, raw)
}

// Raw dispatches tool with raw argument bytes.
func (e *Env) Raw(p auth.Principal, tool string, raw []byte) kernel.Result {
	return e.Kernel.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: raw, Principal: p, Source: kernel.SourceInternal})
}

// OK asserts success and decodes the output into T, rejecting unknown
// members so that tests notice output they do not check.
func OK[T any](t testing.TB, res kernel.Result) T {
	t.Helper()
	if !res.Success {
		t.Fatalf("call failed: %+v", res.Error)
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(OutputBytes(t, res)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decode output: %v", err)
	}
	return out
}

// Fails asserts a failure of kind k and returns its message.
func Fails(t testing.TB, res kernel.Result, k failure.Kind) string {
	t.Helper()
	if res.Success || res.Error == nil {
		t.Fatalf("call succeeded, want %s: %+v", k, res.Output)
	}
	if res.Error.Kind != k {
		t.Fatalf("error kind %s (%s), want %s", res.Error.Kind, res.Error.Message, k)
	}
	return res.Error.Message
}

// OutputBytes returns the JSON encoding of a result's output.
func OutputBytes(t testing.TB, res kernel.Result) []byte {
	t.Helper()
	raw, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
