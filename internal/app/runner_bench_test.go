package app_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/pgnotify"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runneragent"
	"github.com/webcodex/webcodex/internal/runnerlink"
)

// benchRunner serves an app on loopback with the local project bench and
// connects a runner serving the project box:demo (both projects hold a.go):
// an in-process agent (the real protocol over a loopback WebSocket, or
// the long-poll link with $WEBCODEX_BENCH_TRANSPORT=longpoll), or,
// when $WEBCODEX_BENCH_RUNNER names a webcodex binary, a `webcodex runner`
// process of it. It returns the app.
func benchRunner(b *testing.B) *app.App {
	b.Helper()
	ctx := context.Background()
	cfg, _ := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	cfg.Listen = "127.0.0.1:0"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(ctx, cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	local, remote := b.TempDir(), b.TempDir()
	src := []byte(strings.Repeat("package main // a line of a Go file\n", 40))
	for _, d := range []string{local, remote} {
		os.WriteFile(filepath.Join(d, "a.go"), src, 0o644)
	}
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + local}); err != nil {
		b.Fatal(err)
	}
	addr, err := a.Listen()
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Serve(sctx) }()
	tok, _, err := a.Auth.CreateRunnerToken(ctx, "box", auth.DefaultOwner)
	if err != nil {
		b.Fatal(err)
	}
	rcfg, err := runneragent.ParseConfig([]byte("client_id = \"box\"\n[projects]\ndemo = \""+remote+"\"\n"), "/")
	if err != nil {
		b.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	agentDone := make(chan error, 1)
	if bin := os.Getenv("WEBCODEX_BENCH_RUNNER"); bin != "" {
		toml := filepath.Join(b.TempDir(), "runner.toml")
		os.WriteFile(toml, []byte("client_id = \"box\"\n[projects]\ndemo = \""+remote+"\"\n"), 0o644)
		cmd := exec.CommandContext(actx, bin, "runner", "--server", "http://"+addr.String(), "--config", toml)
		cmd.Env = append(os.Environ(), "WEBCODEX_RUNNER_TOKEN="+tok)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() { agentDone <- cmd.Wait() }()
	} else {
		tr := runnerlink.WebSocket // $WEBCODEX_BENCH_TRANSPORT=longpoll measures the fallback
		if v := os.Getenv("WEBCODEX_BENCH_TRANSPORT"); v != "" {
			tr = runnerlink.Transport(v)
		}
		go func() {
			agentDone <- app.NewRunnerAgent(rcfg, []string{"http://" + addr.String()}, tok, tr, log).Run(actx)
		}()
	}
	b.Cleanup(func() {
		acancel()
		<-agentDone
		cancel()
		<-done
		a.Close()
	})
	// Set-up only: wait for the runner's projects to be registered and
	// its connection to be live.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if infos, _ := a.Hub.List(ctx, ""); len(infos) == 1 && infos[0].Connected {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the runner did not connect")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return a
}

// BenchmarkReadFilesRunnerVsInProcess alternates a recorded read_files of
// the same 1.4 KB file on a project of the in-process runner and on one
// served by a runner over loopback. The goal is a ratio (runner over
// in-process) of at most 1.5 at the median.
func BenchmarkReadFilesRunnerVsInProcess(b *testing.B) {
	a := benchRunner(b)
	read := func(proj string) func() {
		id := benchCall(b, a, "work_on_project", map[string]any{"project": proj, "instruction": "bench"}, "")["session_id"].(string)
		args := map[string]any{"project": proj, "files": []any{map[string]any{"path": "a.go"}}}
		return func() { benchCall(b, a, "read_files", args, id) }
	}
	benchpair.Run(b, "in-process", read("agent:local:bench"), "runner", read(project.RunnerID("box", "demo")))
}

// BenchmarkRunnerJobOutput streams a process's output through the runner
// protocol (remote start, ordered chunks into the server's writer) and
// reports MB/s; the goal is at least 50 MB/s on loopback. It also samples
// this process's resident memory, which holds both sides (the hub and the
// agent), and reports the peak above the idle level before the first run
// ("rss-above-idle-MiB"; the goal is under 64 MiB for each side).
func BenchmarkRunnerJobOutput(b *testing.B) {
	a := benchRunner(b)
	ctx := context.Background()
	ps, _ := a.Projects.Get(ctx, project.RunnerID("box", "demo"))
	host := a.Runners.For(ps)
	const size = 256 << 20
	idle := rssBytes()
	var peak atomic.Int64
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rssBytes(); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		var n countWriter
		res, err := runner.Run(ctx, host, runner.Spec{Argv: []string{"head", "-c", strconv.Itoa(size), "/dev/zero"},
			Dir: ps.Root, Stdout: &n, Timeout: 10 * time.Minute, Sandbox: runner.Sandbox{Project: ps.Root}})
		if err != nil || res.ExitCode != 0 || n != size {
			b.Fatalf("run: %v %+v, %d bytes", err, res, n)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(peak.Load()-idle)/(1<<20), "rss-above-idle-MiB")
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// rssBytes is this process's VmRSS.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkRunnerCallDirectVsRelayed measures decision 0075. It alternates
// a recorded read_files on a runner's project over the runner's own
// connection (what every replica does when the runner connects to each)
// with the same call wrapped in the least a relay through PostgreSQL would
// add: the request row committed with its NOTIFY by the replica the call
// arrived at, the replica holding the runner woken by its listener, the
// answer row committed with its NOTIFY, the first replica woken. The
// relay's own work (claiming, outcome rows, streams) would come on top.
func BenchmarkRunnerCallDirectVsRelayed(b *testing.B) {
	ctx := context.Background()
	u := pgtest.URL(b)
	dbs := [2]*pgdb.DB{}
	for i := range dbs {
		db, err := pgdb.Open(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(db.Close)
		dbs[i] = db
	}
	if _, err := dbs[0].Pool.Exec(ctx, `CREATE TABLE relay (id bigint PRIMARY KEY, answered boolean NOT NULL DEFAULT false)`); err != nil {
		b.Fatal(err)
	}
	listen := func(db *pgdb.DB, channel string) *pgnotify.Topic {
		l := pgnotify.Start(ctx, db, slog.New(slog.DiscardHandler))
		b.Cleanup(l.Close)
		t := l.Topic(channel)
		if err := l.Ready(ctx); err != nil {
			b.Fatal(err)
		}
		return t
	}
	holder, arrival := listen(dbs[0], "relay_request"), listen(dbs[1], "relay_answer")
	a := benchRunner(b)
	proj := project.RunnerID("box", "demo")
	id := benchCall(b, a, "work_on_project", map[string]any{"project": proj, "instruction": "bench"}, "")["session_id"].(string)
	args := map[string]any{"project": proj, "files": []any{map[string]any{"path": "a.go"}}}
	direct := func() { benchCall(b, a, "read_files", args, id) }
	var n int64
	relayed := func() {
		n++
		key := strconv.FormatInt(n, 10)
		requested, endReq := holder.Subscribe(key)
		answered, endAns := arrival.Subscribe(key)
		defer endReq()
		defer endAns()
		if err := dbs[1].Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO relay (id) VALUES ($1)`, n); err != nil {
				return err
			}
			return pgnotify.Send(ctx, tx, "relay_request", key)
		}); err != nil {
			b.Fatal(err)
		}
		<-requested
		direct()
		if err := dbs[0].Tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE relay SET answered = true WHERE id = $1`, n); err != nil {
				return err
			}
			return pgnotify.Send(ctx, tx, "relay_answer", key)
		}); err != nil {
			b.Fatal(err)
		}
		<-answered
	}
	benchpair.Run(b, "direct", direct, "relayed", relayed)
}
