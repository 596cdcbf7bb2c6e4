package runnerhub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// fakeRunner is the runner side of one connection, driven by a test.
type fakeRunner struct {
	t   *testing.T
	ws  runnerlink.Link
	gen uint64
}

func (r *fakeRunner) request() (runnerwire.Frame, runnerwire.Request) {
	r.t.Helper()
	for {
		_, b, err := r.ws.Read(context.Background())
		if err != nil {
			r.t.Fatalf("the connection ended: %v", err)
		}
		f, err := runnerwire.Decode(b)
		if err != nil {
			r.t.Fatal(err)
		}
		if f.Kind != runnerwire.KindRequest {
			continue
		}
		var req runnerwire.Request
		if err := runnerwire.DecodeBody(f, &req); err != nil {
			r.t.Fatal(err)
		}
		return f, req
	}
}

func (r *fakeRunner) binary(m runnerwire.Binary) {
	r.t.Helper()
	m.Gen = r.gen
	b, err := runnerwire.EncodeBinary(m)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.ws.Write(context.Background(), runnerlink.Binary, b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *fakeRunner) answer(id string, body any) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	r.binary(runnerwire.Binary{Type: runnerwire.BinResult, ID: id, Data: b})
}

func (r *fakeRunner) output(runID, stream string, off int64, data string) {
	r.binary(runnerwire.Binary{Type: runnerwire.BinOutput, ID: runID, Stream: stream, Offset: off, Data: []byte(data)})
}

func (r *fakeRunner) exit(runID string, code int, stdoutTotal int64) {
	r.t.Helper()
	b, err := runnerwire.Encode(runnerwire.KindExit, r.gen, runID, runnerwire.Exit{Result: runner.Result{ExitCode: code, Ending: runner.Exited,
		Stdout: runner.Output{TotalBytes: stdoutTotal}}})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.ws.Write(context.Background(), runnerlink.Text, b); err != nil {
		r.t.Fatal(err)
	}
}

// skipWriter is an output writer that counts skipped bytes and signals
// each write.
type skipWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	skipped int64
	wrote   chan struct{}
}

func newSkipWriter() *skipWriter { return &skipWriter{wrote: make(chan struct{}, 64)} }

func (w *skipWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.buf.Write(p)
}

func (w *skipWriter) Skip(n int64) {
	w.mu.Lock()
	w.skipped += n
	w.mu.Unlock()
}

// startProc starts run id on a fake runner of f and returns the process.
func startProc(t *testing.T, f *fixture, r *fakeRunner, runID string, out *skipWriter) runner.Process {
	t.Helper()
	return startSpec(t, f, r, runner.Spec{Argv: []string{"sh"}, RunID: runID, Sandbox: runner.Sandbox{Project: "/src/demo"}, Stdout: out})
}

// TestAProcessContinuesOnTheNextConnection: the connection ends while a
// process runs; the same runner process connects again holding it, and
// the server attaches from the bytes it got: the output arrives whole and
// once, then the exit.
func TestAProcessContinuesOnTheNextConnection(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		r := &fakeRunner{t: t, ws: ws, gen: gen}
		out := newSkipWriter()
		p := startProc(t, f, r, "wc_job_a", out)
		r.output("wc_job_a", runnerwire.Stdout, 0, "one\n")
		<-out.wrote // the server holds the first bytes
		c := f.hub.current("box")
		ws.Close("")
		<-c.done

		ws2, gen2 := f.connectAs(t, "ri_1", []runnerwire.Inventory{{ID: "wc_job_a", State: runnerwire.ProcRunning}})
		r2 := &fakeRunner{t: t, ws: ws2, gen: gen2}
		fr, req := r2.request()
		var at runnerwire.ProcAttach
		if err := runnerwire.Strict(req.Args, &at); err != nil || req.Op != runnerwire.OpProcAttach || at.RunID != "wc_job_a" || at.StdoutOffset != 4 || at.StderrOffset != 0 {
			t.Fatalf("want an attach from offset 4: %s %+v %v", req.Op, at, err)
		}
		r2.answer(fr.ID, runnerwire.ProcAttached{State: runnerwire.ProcRunning, PID: 42, Sandbox: "workspace-write"})
		// A resend of bytes the server has is refused; the next bytes land.
		r2.output("wc_job_a", runnerwire.Stdout, 0, "one\n")
		r2.output("wc_job_a", runnerwire.Stdout, 4, "two\n")
		r2.exit("wc_job_a", 0, 8)
		res, err := p.Wait(context.Background())
		if err != nil || res.ExitCode != 0 || res.Stdout.Text != "one\ntwo\n" || res.Stdout.TotalBytes != 8 || out.buf.String() != "one\ntwo\n" {
			t.Fatalf("the process across two connections: %+v %v %q", res, err, out.buf.String())
		}
	})
}

// TestAProcessOfARestartedRunnerIsLost: another runner process connects:
// what the previous one ran is gone, and the process says so.
func TestAProcessOfARestartedRunnerIsLost(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		p := startProc(t, f, &fakeRunner{t: t, ws: ws, gen: gen}, "wc_job_b", newSkipWriter())
		c := f.hub.current("box")
		ws.Close("")
		<-c.done // a connection still live would make the new instance a conflict
		if n := f.hub.Connected(); n != 0 {
			t.Fatalf("an ended connection still counts: runner_connections %d", n)
		}
		f.connectAs(t, "ri_2", nil)
		if n := f.hub.Connected(); n != 1 {
			t.Fatalf("the restarted runner's connection: runner_connections %d", n)
		}
		_, err := p.Wait(context.Background())
		if !errors.Is(err, runner.ErrHostRestarted) || !failure.Is(err, failure.OutcomeUnknown) {
			t.Fatalf("a process of a restarted runner: %v", err)
		}
	})
}

// TestAProcessTheRunnerNoLongerHoldsIsLost: the same runner process comes
// back without the process in its inventory: its outcome is unknown.
func TestAProcessTheRunnerNoLongerHoldsIsLost(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		p := startProc(t, f, &fakeRunner{t: t, ws: ws, gen: gen}, "wc_job_c", newSkipWriter())
		ws.Close("")
		f.connectAs(t, "ri_1", nil)
		_, err := p.Wait(context.Background())
		if errors.Is(err, runner.ErrHostRestarted) || !failure.Is(err, failure.OutcomeUnknown) {
			t.Fatalf("a process the runner no longer holds: %v", err)
		}
	})
}

// TestAProcessWhoseRunnerStaysAwayIsLost: no connection within the
// reattach window: the process is lost.
func TestAProcessWhoseRunnerStaysAwayIsLost(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, 20*time.Millisecond, tr)
		ws, gen := f.connect(t)
		p := startProc(t, f, &fakeRunner{t: t, ws: ws, gen: gen}, "wc_job_d", newSkipWriter())
		ws.Close("")
		_, err := p.Wait(context.Background())
		if errors.Is(err, runner.ErrHostRestarted) || !failure.Is(err, failure.OutcomeUnknown) {
			t.Fatalf("a process whose runner stayed away: %v", err)
		}
	})
}

// TestASkipIsCountedNotStored: bytes the runner's spool lost reach the
// writer as a skip, and output continues after them.
func TestASkipIsCountedNotStored(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		r := &fakeRunner{t: t, ws: ws, gen: gen}
		out := newSkipWriter()
		p := startProc(t, f, r, "wc_job_e", out)
		r.output("wc_job_e", runnerwire.Stdout, 0, "ab")
		r.binary(runnerwire.Binary{Type: runnerwire.BinSkip, ID: "wc_job_e", Stream: runnerwire.Stdout, Offset: 10})
		r.output("wc_job_e", runnerwire.Stdout, 10, "yz")
		r.exit("wc_job_e", 0, 12)
		res, err := p.Wait(context.Background())
		if err != nil || out.buf.String() != "abyz" || out.skipped != 8 || res.Stdout.TotalBytes != 12 {
			t.Fatalf("a skip: %+v %v %q skipped %d", res, err, out.buf.String(), out.skipped)
		}
	})
}

// TestOutputOfAnotherConnectionIsRefused: a process's output is taken only
// from the connection it is attached to; an unknown run id's output and
// exit change nothing.
func TestOutputOfAnotherConnectionIsRefused(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		r := &fakeRunner{t: t, ws: ws, gen: gen}
		out := newSkipWriter()
		p := startProc(t, f, r, "wc_job_f", out)
		r.output("wc_job_g", runnerwire.Stdout, 0, "not mine\n")
		r.exit("wc_job_g", 0, 9)
		r.output("wc_job_f", runnerwire.Stdout, 0, "mine\n")
		r.exit("wc_job_f", 0, 5)
		if _, err := p.Wait(context.Background()); err != nil || out.buf.String() != "mine\n" {
			t.Fatalf("output of an unknown run id landed: %v %q", err, out.buf.String())
		}
	})
}

// TestAnAdoptedProcessContinuesFromTheGivenOffsets: a process a previous
// server started is adopted from the offsets the files hold.
func TestAnAdoptedProcessContinuesFromTheGivenOffsets(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		r := &fakeRunner{t: t, ws: ws, gen: gen}
		out := newSkipWriter()
		type adopted struct {
			p   runner.Process
			err error
		}
		ch := make(chan adopted, 1)
		go func() {
			p, err := f.hub.Runner("box").(runner.Reattacher).Adopt(context.Background(), "wc_job_h", runner.Attach{StdoutOffset: 3, Stdout: out})
			ch <- adopted{p, err}
		}()
		fr, req := r.request()
		var at runnerwire.ProcAttach
		if err := runnerwire.Strict(req.Args, &at); err != nil || at.StdoutOffset != 3 {
			t.Fatalf("the adoption's attach: %+v %v", at, err)
		}
		r.answer(fr.ID, runnerwire.ProcAttached{State: runnerwire.ProcExited, PID: 7})
		got := <-ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		r.output("wc_job_h", runnerwire.Stdout, 3, "def")
		r.exit("wc_job_h", 1, 6)
		res, err := got.p.Wait(context.Background())
		if err != nil || res.ExitCode != 1 || out.buf.String() != "def" || got.p.PID() != 7 {
			t.Fatalf("an adopted process: %+v %v %q", res, err, out.buf.String())
		}
		// A run id the runner does not hold: outcome unknown, nothing adopted.
		go func() {
			_, err := f.hub.Runner("box").(runner.Reattacher).Adopt(context.Background(), "wc_job_zz", runner.Attach{})
			ch <- adopted{nil, err}
		}()
		fr, _ = r.request()
		b, _ := runnerwire.Encode(runnerwire.KindResponse, gen, fr.ID, runnerwire.Response{Error: &runnerwire.Error{Kind: string(failure.NotFound), Message: "no such process"}})
		ws.Write(context.Background(), runnerlink.Text, b)
		if got := <-ch; !failure.Is(got.err, failure.OutcomeUnknown) {
			t.Fatalf("adopting what the runner does not hold: %v", got.err)
		}
	})
}

// orderLink is a runnerlink.Link that records what is written to it.
type orderLink struct {
	mu      sync.Mutex
	written []string
}

func (l *orderLink) Read(ctx context.Context) (runnerlink.Type, []byte, error) {
	<-ctx.Done()
	return 0, nil, ctx.Err()
}

func (l *orderLink) Write(_ context.Context, _ runnerlink.Type, b []byte) error {
	l.mu.Lock()
	l.written = append(l.written, string(b))
	l.mu.Unlock()
	return nil
}

func (l *orderLink) Close(string) {}

// TestNothingIsSentBeforeTheWelcome: a connection is installed before its
// welcome is written (a runner that read its welcome can be called at
// once), and a request sent meanwhile waits for the welcome.
func TestNothingIsSentBeforeTheWelcome(t *testing.T) {
	f := newFixture(t, time.Minute, runnerlink.WebSocket)
	l := &orderLink{}
	c := newConn(f.hub, l, auth.Token{Owner: "local"}, "good", runnerwire.Hello{ClientID: "box", InstanceID: "ri_1"}, 1)
	sent := make(chan error, 1)
	go func() {
		_, err := c.send(context.Background(), "rq_1", runnerwire.Request{Op: "files.read", Project: "demo", Args: []byte(`{}`)}, nil)
		sent <- err
	}()
	if err := c.welcome([]byte("welcome")); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.written) != 2 || l.written[0] != "welcome" {
		t.Fatalf("written in this order: %q", l.written)
	}
}
