package mcpprovider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpprovidertest"
	"github.com/webcodex/webcodex/internal/project"
)

// testProvider is the go-sdk test provider's path.
func testProvider(t testing.TB) string { return mcpprovidertest.Provider(t) }

// script writes an executable shell script into a temporary directory.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "provider.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func newManager(t *testing.T, providers map[string]mcpprovider.Provider, timeout time.Duration) *mcpprovider.Manager {
	t.Helper()
	m := mcpprovider.NewManager(mcpprovider.Options{Providers: providers, RequestTimeout: timeout})
	t.Cleanup(m.Close)
	return m
}

func testProject(t *testing.T) project.Project {
	return project.Project{ID: "p", Name: "p", Root: t.TempDir()}
}

// wantKind checks err's kind (and outcome detail when set).
func wantKind(t *testing.T, err error, kind failure.Kind, outcome string) {
	t.Helper()
	var fe *failure.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want kind %s", err, kind)
	}
	if fe.Kind != kind {
		t.Fatalf("kind %s (%v), want %s", fe.Kind, err, kind)
	}
	if outcome != "" && fe.Detail["outcome"] != outcome {
		t.Fatalf("outcome %v (%v), want %s", fe.Detail["outcome"], err, outcome)
	}
}

func TestListDescribeCall(t *testing.T) {
	m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
	p, ctx := testProject(t), context.Background()
	l, err := m.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 5 || len(l.Tools) != 5 {
		t.Fatalf("list %+v, want 5 tools", l)
	}
	d, err := m.Do(ctx, p, mcpprovider.Request{Op: "describe", Provider: "test", Tool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Described == nil || !strings.HasPrefix(d.Described.Revision, "sha256:") || d.Described.InputSchema == nil {
		t.Fatalf("describe %+v", d)
	}
	c, err := m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: "echo",
		Arguments: json.RawMessage(`{"text":"hello ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}`), SchemaRevision: d.Described.Revision})
	if err != nil {
		t.Fatal(err)
	}
	got := string(c.Call.Content)
	if !strings.Contains(got, "hello [REDACTED]") || strings.Contains(got, "ghp_") {
		t.Fatalf("content %s, want the echo redacted", got)
	}
	if m.Started() != 1 || m.Running() != 1 {
		t.Fatalf("started %d running %d, want one warm instance", m.Started(), m.Running())
	}
	// A tool that reports an error is a failure, never a success.
	_, err = m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: "echo",
		Arguments: json.RawMessage(`{"text":"fail"}`), SchemaRevision: d.Described.Revision})
	wantKind(t, err, failure.OperationFailed, mcpprovider.OutcomeToolError)
}

func TestDescribeBeforeCall(t *testing.T) {
	m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
	p, ctx := testProject(t), context.Background()
	// No revision: refused before anything starts.
	_, err := m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: "exit"})
	wantKind(t, err, failure.DescribeRequired, "")
	if m.Started() != 0 {
		t.Fatalf("%d starts for a call without a revision, want none", m.Started())
	}
	// An old revision: the tool is not called (exit would end the
	// provider, which would then be started again).
	_, err = m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: "exit", SchemaRevision: "sha256:00000000000000000000000000000000"})
	wantKind(t, err, failure.DescribeRequired, "")
	if _, err := m.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "test"}); err != nil {
		t.Fatal(err)
	}
	if m.Started() != 1 {
		t.Fatalf("%d starts, want 1: the exit tool must not have run", m.Started())
	}
}

func TestBadRequests(t *testing.T) {
	m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
	p, ctx := testProject(t), context.Background()
	cases := []struct {
		name string
		req  mcpprovider.Request
		kind failure.Kind
	}{
		{"unknown provider", mcpprovider.Request{Op: "list", Provider: "nope"}, failure.UnknownMCPProvider},
		{"bad op", mcpprovider.Request{Op: "run", Provider: "test"}, failure.InvalidArguments},
		{"describe without tool", mcpprovider.Request{Op: "describe", Provider: "test"}, failure.InvalidArguments},
		{"arguments not an object", mcpprovider.Request{Op: "call", Provider: "test", Tool: "echo", SchemaRevision: "x", Arguments: json.RawMessage(`[1]`)}, failure.InvalidArguments},
		{"arguments on list", mcpprovider.Request{Op: "list", Provider: "test", Arguments: json.RawMessage(`{}`)}, failure.InvalidArguments},
	}
	for _, c := range cases {
		_, err := m.Do(ctx, p, c.req)
		wantKind(t, err, c.kind, "")
	}
	if m.Started() != 0 {
		t.Fatalf("%d starts for bad requests, want none", m.Started())
	}
	// A tool not in the provider's list.
	_, err := m.Do(ctx, p, mcpprovider.Request{Op: "describe", Provider: "test", Tool: "nope"})
	wantKind(t, err, failure.UnknownProviderTool, "")
	// A provider whose cwd lies in another project does not serve this one.
	other := testProject(t)
	m2 := newManager(t, map[string]mcpprovider.Provider{"elsewhere": {Command: testProvider(t), Cwd: other.Root}}, 0)
	_, err = m2.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "elsewhere"})
	wantKind(t, err, failure.UnknownMCPProvider, "")
	if m2.Started() != 0 {
		t.Fatal("a provider for another project started")
	}
}

func TestFaultyProviders(t *testing.T) {
	p, ctx := testProject(t), context.Background()
	t.Run("garbage", func(t *testing.T) {
		m := newManager(t, map[string]mcpprovider.Provider{"g": {Command: script(t, "echo 'this is not JSON-RPC'; exec sleep 600")}}, 0)
		_, err := m.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "g"})
		wantKind(t, err, failure.NotStarted, "")
		if m.Running() != 0 {
			t.Fatal("a failed start left an instance")
		}
	})
	t.Run("exits at start", func(t *testing.T) {
		m := newManager(t, map[string]mcpprovider.Provider{"x": {Command: script(t, "exit 3")}}, 0)
		_, err := m.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "x"})
		wantKind(t, err, failure.NotStarted, "")
		if m.Running() != 0 {
			t.Fatal("a failed start left an instance")
		}
	})
	t.Run("missing command", func(t *testing.T) {
		m := newManager(t, map[string]mcpprovider.Provider{"x": {Command: "webcodex-no-such-provider"}}, 0)
		_, err := m.Do(ctx, p, mcpprovider.Request{Op: "list", Provider: "x"})
		wantKind(t, err, failure.NotStarted, "")
	})
	call := func(m *mcpprovider.Manager, tool string) error {
		d, err := m.Do(ctx, p, mcpprovider.Request{Op: "describe", Provider: "test", Tool: tool})
		if err != nil {
			t.Fatal(err)
		}
		args := json.RawMessage(`{}`)
		if tool == "echo" {
			args = json.RawMessage(`{"text":"again"}`)
		}
		_, err = m.Do(ctx, p, mcpprovider.Request{Op: "call", Provider: "test", Tool: tool, Arguments: args, SchemaRevision: d.Described.Revision})
		return err
	}
	t.Run("answers too large", func(t *testing.T) {
		m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
		wantKind(t, call(m, "big"), failure.OperationFailed, mcpprovider.OutcomeTooLarge)
		// The provider was stopped; the next request starts a new one.
		if err := call(m, "echo"); err != nil {
			t.Fatal(err)
		}
		if m.Started() != 2 {
			t.Fatalf("%d starts, want 2", m.Started())
		}
	})
	t.Run("never answers", func(t *testing.T) {
		// The bound is short so that the test does not wait a minute;
		// nothing here depends on timing but the provider never answering.
		m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 5*time.Second)
		wantKind(t, call(m, "hang"), failure.TimedOut, mcpprovider.OutcomeKilled)
		if err := call(m, "echo"); err != nil {
			t.Fatal(err)
		}
		if m.Started() != 2 {
			t.Fatalf("%d starts, want 2 (killed, then started again)", m.Started())
		}
	})
	t.Run("exits mid-call", func(t *testing.T) {
		m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
		wantKind(t, call(m, "exit"), failure.OperationFailed, mcpprovider.OutcomeExited)
		if err := call(m, "echo"); err != nil {
			t.Fatal(err)
		}
		if m.Started() != 2 {
			t.Fatalf("%d starts, want 2 (restarted after exit)", m.Started())
		}
	})
}

func TestCatalog(t *testing.T) {
	p := testProject(t)
	sub := filepath.Join(p.Root, "sub")
	os.Mkdir(sub, 0o755)
	m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}, "nested": {Command: testProvider(t), Cwd: sub}}, 0)
	c := m.Catalog(p)
	if len(c.Plugins) != 2 || c.Plugins[0].Name != "nested" || c.Plugins[0].Reason != mcpprovider.ReasonCwdNotRoot ||
		c.Plugins[1].Status != mcpprovider.StatusUnavailable || c.Plugins[1].Reason != mcpprovider.ReasonNotListed {
		t.Fatalf("catalog before list %+v", c)
	}
	if m.Started() != 0 {
		t.Fatal("the catalog started a provider")
	}
	if _, err := m.Do(context.Background(), p, mcpprovider.Request{Op: "list", Provider: "test"}); err != nil {
		t.Fatal(err)
	}
	c = m.Catalog(p)
	if c.Plugins[1].Status != mcpprovider.StatusReady || c.Plugins[1].Tools != 5 || c.Plugins[1].Revision == "" {
		t.Fatalf("catalog after list %+v", c)
	}
}

// TestBounds pins the bounds and checks the ones a request meets before
// anything starts.
func TestBounds(t *testing.T) {
	if mcpprovider.MaxMessageBytes != 1<<20 || mcpprovider.MaxArgumentsBytes != 256<<10 || mcpprovider.MaxTools != 256 ||
		mcpprovider.MaxListPages != 16 || mcpprovider.MaxDescriptionRunes != 1024 || mcpprovider.MaxInstances != 8 ||
		mcpprovider.DefaultIdleTimeout != 10*time.Minute || mcpprovider.DefaultRequestTimeout != time.Minute ||
		mcpprovider.MaxProviders != 32 || mcpprovider.MaxArgs != 64 || mcpprovider.MaxEnv != 64 {
		t.Fatal("a bound changed: update the docs (tools.md, runners.md, decision 0083) with it")
	}
	m := newManager(t, map[string]mcpprovider.Provider{"test": {Command: testProvider(t)}}, 0)
	big := `{"text":"` + strings.Repeat("x", mcpprovider.MaxArgumentsBytes) + `"}`
	_, err := m.Do(context.Background(), testProject(t), mcpprovider.Request{Op: "call", Provider: "test", Tool: "echo", SchemaRevision: "x", Arguments: json.RawMessage(big)})
	wantKind(t, err, failure.RequestTooLarge, "")
	if m.Started() != 0 {
		t.Fatal("an over-size request started a provider")
	}
	many := map[string]mcpprovider.Provider{}
	for i := range mcpprovider.MaxProviders + 1 {
		many[fmt.Sprintf("p%d", i)] = mcpprovider.Provider{Command: "x"}
	}
	if err := mcpprovider.Validate(many, "/", nil); err == nil {
		t.Fatal("more than MaxProviders were accepted")
	}
	if err := mcpprovider.Validate(map[string]mcpprovider.Provider{"p": {Command: "x", Args: make([]string, mcpprovider.MaxArgs+1)}}, "/", nil); err == nil {
		t.Fatal("more than MaxArgs were accepted")
	}
}
