package runnerhub

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// startSpec starts spec through runner box, answering its start on r as
// the runner would, and returns the process.
func startSpec(t *testing.T, f *fixture, r *fakeRunner, spec runner.Spec) runner.Process {
	t.Helper()
	type started struct {
		p   runner.Process
		err error
	}
	ch := make(chan started, 1)
	go func() {
		p, err := f.hub.Runner("box").Start(context.Background(), spec)
		ch <- started{p, err}
	}()
	fr, req := r.request()
	if req.Op != runnerwire.OpProcStart {
		t.Fatalf("want a start, got %s", req.Op)
	}
	r.answer(fr.ID, runnerwire.ProcStarted{PID: 42, Sandbox: "workspace-write"})
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.p
}

// The file a start collects comes back as the report stream, in order,
// into the spec's CollectTo and never into the output; a report the start
// did not ask for is refused (it lands nowhere), and so is a skip in one.
func TestTheCollectedFileComesBackAsTheReportStream(t *testing.T) {
	overTransports(t, func(t *testing.T, tr runnerlink.Transport) {
		f := newFixture(t, time.Minute, tr)
		ws, gen := f.connect(t)
		r := &fakeRunner{t: t, ws: ws, gen: gen}
		var report, stdout bytes.Buffer
		p := startSpec(t, f, r, runner.Spec{Argv: []string{"pytest"}, Dir: "/src/demo", Sandbox: runner.Sandbox{Project: "/src/demo"},
			Private: true, Collect: "junit.xml", CollectTo: &report, Stdout: &stdout, RunID: "wc_job_r1"})
		r.output("wc_job_r1", runnerwire.Stdout, 0, "1 passed")
		r.output("wc_job_r1", runnerwire.Report, 0, "<testsuite")
		r.binary(runnerwire.Binary{Type: runnerwire.BinSkip, ID: "wc_job_r1", Stream: runnerwire.Report, Offset: 20})
		r.output("wc_job_r1", runnerwire.Report, 10, "/>")
		r.exit("wc_job_r1", 0, 8)
		res, err := p.Wait(context.Background())
		if err != nil || res.Stdout.Text != "1 passed" || report.String() != "<testsuite/>" || stdout.String() != "1 passed" {
			t.Fatalf("result %v %+v, report %q", err, res, report.String())
		}

		stdout.Reset()
		q := startSpec(t, f, r, runner.Spec{Argv: []string{"true"}, Dir: "/src/demo", Sandbox: runner.Sandbox{Project: "/src/demo"},
			Stdout: &stdout, RunID: "wc_job_r2"})
		r.output("wc_job_r2", runnerwire.Report, 0, "report")
		r.output("wc_job_r2", runnerwire.Stdout, 0, "out")
		r.exit("wc_job_r2", 0, 3)
		if res, err := q.Wait(context.Background()); err != nil || res.Stdout.Text != "out" || stdout.String() != "out" {
			t.Fatalf("a report nobody asked for landed: %v %+v %q", err, res, stdout.String())
		}
	})
}

// A report past runner.MaxCollectBytes is refused.
func TestAReportIsBounded(t *testing.T) {
	p := &proc{repW: io.Discard, offsets: [3]int64{0, 0, runner.MaxCollectBytes - 1}}
	if err := p.output(runnerwire.Output{Stream: runnerwire.Report, Offset: runner.MaxCollectBytes - 1, Data: []byte("xy")}); err == nil {
		t.Fatal("a report over the bound was taken")
	}
	if err := p.output(runnerwire.Output{Stream: runnerwire.Report, Offset: runner.MaxCollectBytes - 1, Data: []byte("x")}); err != nil {
		t.Fatalf("a report at the bound: %v", err)
	}
}
