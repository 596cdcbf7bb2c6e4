package runnerhub

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runneragent"
	"github.com/webcodex/webcodex/internal/workspace"
)

const benchLines = 40

// BenchmarkInvokeRoundTrip is the runner protocol's own cost: one request
// of a no-op operation with a small argument and result, from the hub to a
// real agent over a loopback WebSocket and back.
func BenchmarkInvokeRoundTrip(b *testing.B) {
	type in struct {
		Path string `json:"path"`
	}
	type out struct {
		Text string `json:"text"`
	}
	text := strings.Repeat("package main // a line of a Go file\n", benchLines)
	echo := workspace.NewOp("bench.echo", func(_ context.Context, _ workspace.Env, _ project.Project, a in) (out, error) {
		return out{Text: text}, nil
	})
	f := &fixture{auth: &tokens{}}
	reg := &registry{ps: map[string]project.Project{}}
	f.hub = New(Options{Auth: f.auth, Projects: reg, Store: &records{all: map[string]Record{}}})
	srv := httptest.NewServer(f.hub)
	defer srv.Close()
	defer f.hub.Close()
	dir := b.TempDir()
	cfg, err := runneragent.ParseConfig([]byte(fmt.Sprintf("client_id = \"box\"\n[projects]\ndemo = %q\n", dir)), "/")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runneragent.New(runneragent.Options{Config: cfg, Servers: []string{srv.URL}, Token: "good", Ops: []workspace.Served{echo}}).Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	for f.hub.current("box") == nil {
		time.Sleep(time.Millisecond) // set-up only: wait for the hello
	}
	p := project.Project{ID: project.RunnerID("box", "demo"), Name: "demo", Root: dir, Runner: "box"}
	r := f.hub.Runner("box")
	b.ResetTimer()
	for b.Loop() {
		got, err := workspace.Do(context.Background(), r, p, echo, in{Path: "a.go"})
		if err != nil || len(got.Text) != len(text) {
			b.Fatal(err)
		}
	}
}
