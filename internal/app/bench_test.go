package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
)

// BenchmarkReadEditRoundTrip measures one read_files + apply_text_edits
// round trip through the kernel with a verified recorder (both calls
// recorded in a Workflow Session) against the same round trip with no
// recording, in the same run. "agents=1" is one agent calling in sequence;
// "agents=8" runs eight agents at once, each on its own file and session,
// where group commit lets their ledger appends share fsyncs.
func BenchmarkReadEditRoundTrip(b *testing.B) {
	for _, agents := range []int{1, 8} {
		for _, mode := range []string{"unrecorded", "recorded"} {
			b.Run(fmt.Sprintf("agents=%d/%s", agents, mode), func(b *testing.B) {
				benchRoundTrip(b, agents, mode == "recorded")
			})
		}
	}
}

func benchRoundTrip(b *testing.B, agents int, recorded bool) {
	ctx := context.Background()
	proj := b.TempDir()
	cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
		b.Fatal(err)
	}
	call := func(tool string, args any, recorder string) kernel.Result {
		raw, _ := json.Marshal(args)
		res := a.Kernel.Dispatch(ctx, kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
		if !res.Success {
			b.Errorf("%s: %+v", tool, res.Error)
		}
		return res
	}
	type agent struct{ file, recorder string }
	ags := make([]agent, agents)
	for i := range ags {
		ags[i].file = fmt.Sprintf("f%d.go", i)
		os.WriteFile(filepath.Join(proj, ags[i].file), []byte("package main\n\nconst v = 0\n\nfunc main() {}\n"), 0o644)
		if recorded {
			out, _ := json.Marshal(call("work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "").Output)
			var w struct {
				SessionID string `json:"session_id"`
			}
			json.Unmarshal(out, &w)
			ags[i].recorder = w.SessionID
		}
	}
	vals := []string{"const v = 0", "const v = 1"}
	roundTrip := func(ag agent, i int) {
		out, _ := json.Marshal(call("read_files", map[string]any{"project": "agent:local:bench", "files": []any{map[string]any{"path": ag.file}}}, ag.recorder).Output)
		var rd struct {
			Files []struct {
				ReadRevision string `json:"read_revision"`
			} `json:"files"`
		}
		json.Unmarshal(out, &rd)
		call("apply_text_edits", map[string]any{"project": "agent:local:bench", "changes": []any{map[string]any{
			"path": ag.file, "op": "replace", "expected_read_revision": rd.Files[0].ReadRevision,
			"edits": []any{map[string]any{"old_text": vals[i%2], "new_text": vals[(i+1)%2]}},
		}}}, ag.recorder)
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + agents - 1) / agents
	for _, ag := range ags {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				roundTrip(ag, i)
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*agents)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkRunProcessTrue measures run_process of `true` through the kernel
// with a verified recorder against os/exec running the same command,
// alternated call by call.
func BenchmarkRunProcessTrue(b *testing.B) {
	a := benchApp(b)
	w := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")
	id := w["session_id"].(string)
	args := map[string]any{"project": "agent:local:bench", "argv": []string{"true"}}

	benchpair.Run(b, "os_exec", func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}, "kernel_recorded", func() { benchCall(b, a, "run_process", args, id) })
}

// BenchmarkShellCommand measures one `:` command through the kernel, both
// recorded in the same business session: session_shell_exec on an open
// persistent shell against run_shell, which starts a fresh shell process,
// alternated call by call (the ratio is session_shell_exec over run_shell).
func BenchmarkShellCommand(b *testing.B) {
	a := benchApp(b)
	id := benchCall(b, a, "work_on_project", map[string]any{"project": "agent:local:bench", "instruction": "bench"}, "")["session_id"].(string)
	shell := benchCall(b, a, "open_session_shell", map[string]any{"session_id": id}, "")["shell"].(map[string]any)["shell_id"].(string)
	benchpair.Run(b, "run_shell", func() {
		benchCall(b, a, "run_shell", map[string]any{"project": "agent:local:bench", "session_id": id, "command": ":"}, "")
	}, "session_shell_exec", func() {
		benchCall(b, a, "session_shell_exec", map[string]any{"session_id": id, "shell_id": shell, "command": ":"}, "")
	})
}

// benchApp opens an app on a fresh data directory with one project,
// agent:local:bench.
func benchApp(b *testing.B) *app.App { return benchAppWith(b, nil) }

// benchAppWith is benchApp with tune, when set, changing the
// configuration.
func benchAppWith(b *testing.B, tune func(*app.Config)) *app.App {
	ctx := context.Background()
	cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	if tune != nil {
		tune(&cfg)
	}
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + b.TempDir()}); err != nil {
		b.Fatal(err)
	}
	return a
}

// benchCall dispatches one call as the local user and returns its output
// as a generic map; a failure ends the benchmark.
func benchCall(b *testing.B, a *app.App, tool string, args map[string]any, recorder string) map[string]any {
	raw, _ := json.Marshal(args)
	res := a.Kernel.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: raw, RecordingSessionID: recorder, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	if !res.Success {
		b.Fatalf("%s: %+v", tool, res.Error)
	}
	out, _ := json.Marshal(res.Output)
	var m map[string]any
	json.Unmarshal(out, &m)
	return m
}

// BenchmarkAuditThroughput measures REST tool calls per second through the
// whole HTTP stack (auth, limits, audit middleware, kernel) from 32
// concurrent clients, with the Action Audit trail recording every call
// against the same server with the audit middleware left out, in one run.
func BenchmarkAuditThroughput(b *testing.B) {
	for _, mode := range []string{"audit=off", "audit=on"} {
		b.Run(mode, func(b *testing.B) { benchAuditThroughput(b, mode == "audit=on") })
	}
}

// benchServer opens an app with the project bench (a.txt, "hello\n") on
// a free loopback port, without the audit middleware unless audited, and
// serves it. It returns the app, its configuration, the URL of REST tool
// calls, and stop, which ends serving and closes the app.
func benchServer(b *testing.B, audited bool) (a *app.App, cfg app.Config, url string, stop func()) {
	ctx := context.Background()
	proj := b.TempDir()
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("hello\n"), 0o644)
	cfg, _ = app.LoadConfig(b.TempDir(), func(k string) string {
		if k == "WEBCODEX_LISTEN" {
			return "127.0.0.1:0"
		}
		return ""
	})
	a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
		b.Fatal(err)
	}
	if !audited {
		a.AuditHTTP = nil // the same stack without the audit middleware
	}
	addr, err := a.Listen()
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- a.Serve(sctx) }()
	return a, cfg, "http://" + addr.String() + "/api/tools/call", func() { cancel(); <-served; a.Close() }
}

func benchAuditThroughput(b *testing.B, audited bool) {
	ctx := context.Background()
	a, cfg, url, stop := benchServer(b, audited)
	const clients = 32
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	body := []byte(`{"tool":"read_files","arguments":{"project":"agent:local:bench","files":[{"path":"a.txt"}]}}`)
	// The clients belong to four authority groups, each within its fair
	// share of request slots (httpserver.MaxPerPrincipal).
	const owners = 4
	var tokens [owners]string
	for i := range tokens {
		var err error
		if tokens[i], _, err = a.Auth.CreateToken(ctx, fmt.Sprintf("bench-%d", i), fmt.Sprintf("bench-owner-%d", i), []auth.Scope{auth.ScopeProjectRead}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		token := tokens[next.Add(1)%owners]
		for pb.Next() {
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(data, []byte(`"success":true`)) {
				b.Errorf("HTTP %d %s", resp.StatusCode, data)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.StopTimer()
	stop()
	if !audited {
		return
	}
	// A graceful stop leaves no call unrecorded.
	st, closeStore, err := app.OpenAudit(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer closeStore()
	ss, _ := audit.NewService(st, nil).ListSessions(ctx, "", audit.MaxSessionsLimit)
	var total int64
	for _, s := range ss {
		total += s.TotalActions
	}
	if total != int64(b.N) {
		b.Fatalf("%d calls, %d audit events", b.N, total)
	}
}
