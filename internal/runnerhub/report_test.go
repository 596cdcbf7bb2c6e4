package runnerhub

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/coder/websocket"

	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// startOn starts a process with spec through runner box, answering its
// start on ws as the runner would, and returns it with its request id.
func startOn(t *testing.T, f *fixture, ws *websocket.Conn, gen uint64, spec runner.Spec) (runner.Process, string) {
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
	id := readRequest(t, ws)
	b, _ := json.Marshal(runnerwire.ProcStarted{PID: 7, Sandbox: "off"})
	res, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinResult, Gen: gen, ID: id, Data: b})
	if err := ws.Write(context.Background(), websocket.MessageBinary, res); err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.p, id
}

func send(t *testing.T, ws *websocket.Conn, m runnerwire.Binary) {
	t.Helper()
	b, err := runnerwire.EncodeBinary(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
}

// The file a start collects comes back as the report stream, in order,
// into the spec's CollectTo and never into the output; a report the start
// did not ask for is refused (it lands nowhere).
func TestTheCollectedFileComesBackAsTheReportStream(t *testing.T) {
	f := newFixture(t, 0)
	ws, gen := f.connect(t)
	var report, stdout bytes.Buffer
	p, id := startOn(t, f, ws, gen, runner.Spec{Argv: []string{"pytest"}, Dir: "/src/demo", Sandbox: runner.Sandbox{Project: "/src/demo"},
		Private: true, Collect: "junit.xml", CollectTo: &report, Stdout: &stdout})
	send(t, ws, runnerwire.Binary{Type: runnerwire.BinOutput, Gen: gen, ID: id, Stream: runnerwire.Stdout, Data: []byte("1 passed")})
	send(t, ws, runnerwire.Binary{Type: runnerwire.BinOutput, Gen: gen, ID: id, Stream: runnerwire.Report, Data: []byte("<testsuite")})
	send(t, ws, runnerwire.Binary{Type: runnerwire.BinOutput, Gen: gen, ID: id, Stream: runnerwire.Report, Offset: 10, Data: []byte("/>")})
	exit, _ := runnerwire.Encode(runnerwire.KindExit, gen, id, runnerwire.Exit{Result: runner.Result{Ending: runner.Exited}})
	ws.Write(context.Background(), websocket.MessageText, exit)
	res, err := p.Wait(context.Background())
	if err != nil || res.Stdout.Text != "1 passed" || report.String() != "<testsuite/>" || stdout.String() != "1 passed" {
		t.Fatalf("result %v %+v, report %q", err, res, report.String())
	}

	stdout.Reset()
	q, id := startOn(t, f, ws, gen, runner.Spec{Argv: []string{"true"}, Dir: "/src/demo", Sandbox: runner.Sandbox{Project: "/src/demo"}, Stdout: &stdout})
	send(t, ws, runnerwire.Binary{Type: runnerwire.BinOutput, Gen: gen, ID: id, Stream: runnerwire.Report, Data: []byte("report")})
	send(t, ws, runnerwire.Binary{Type: runnerwire.BinOutput, Gen: gen, ID: id, Stream: runnerwire.Stdout, Data: []byte("out")})
	exit, _ = runnerwire.Encode(runnerwire.KindExit, gen, id, runnerwire.Exit{Result: runner.Result{Ending: runner.Exited}})
	ws.Write(context.Background(), websocket.MessageText, exit)
	if res, err := q.Wait(context.Background()); err != nil || res.Stdout.Text != "out" || stdout.String() != "out" {
		t.Fatalf("a report nobody asked for landed: %v %+v %q", err, res, stdout.String())
	}
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
