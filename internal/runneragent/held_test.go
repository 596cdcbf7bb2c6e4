package runneragent

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// smallSpool makes every spool n bytes for one test.
func smallSpool(t *testing.T, n int64) {
	old := spoolBytes
	spoolBytes = n
	t.Cleanup(func() { spoolBytes = old })
}

// fakeProc is a runner.Process that ends when told (end) or stopped.
type fakeProc struct {
	once    sync.Once
	done    chan struct{}
	stopped chan struct{}
}

func (p *fakeProc) end() { p.once.Do(func() { close(p.done) }) }

func newFakeProc() *fakeProc {
	return &fakeProc{done: make(chan struct{}), stopped: make(chan struct{}, 1)}
}

func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Wait(ctx context.Context) (runner.Result, error) {
	select {
	case <-p.done:
		return runner.Result{Ending: runner.Exited}, nil
	case <-ctx.Done():
		return runner.Result{}, ctx.Err()
	}
}
func (p *fakeProc) Snapshot() (runner.Output, runner.Output) { return runner.Output{}, runner.Output{} }
func (p *fakeProc) Stop() {
	select {
	case p.stopped <- struct{}{}:
	default:
	}
	p.end()
}
func (p *fakeProc) Sandbox() runner.Mode      { return runner.Off }
func (p *fakeProc) PID() int                  { return 1 }
func (p *fakeProc) Identity() runner.Identity { return runner.Identity{} }

// drain takes what h would send on s until want bytes of stdout arrived,
// as the streamer does (the data read outside the lock), and returns the
// bytes and whether a skip came first.
func drain(t *testing.T, h *held, s *session, want int) (string, []int64) {
	t.Helper()
	var got bytes.Buffer
	var skips []int64
	buf := make([]byte, runnerwire.MaxBinaryDataBytes)
	for got.Len() < want {
		h.mu.Lock()
		m, ok := h.next(buf)
		for !ok {
			h.cond.Wait()
			m, ok = h.next(buf)
		}
		h.mu.Unlock()
		if m.Type == runnerwire.BinSkip {
			skips = append(skips, m.Offset)
		} else if err := h.streams[0].load(m.Data, m.Offset); err != nil {
			t.Fatal(err)
		} else {
			got.Write(m.Data)
		}
		h.mu.Lock()
		if m.Type == runnerwire.BinSkip {
			h.streams[0].sent = m.Offset
		} else {
			h.streams[0].sent = m.Offset + int64(len(m.Data))
		}
		h.cond.Broadcast()
		h.mu.Unlock()
	}
	return got.String(), skips
}

func newTestHeld(t *testing.T, s *session) (*holding, *held, *fakeProc) {
	t.Helper()
	hs := newHolding()
	t.Cleanup(hs.closeAll)
	h, err := hs.reserve("wc_job_1", s, false)
	if err != nil {
		t.Fatal(err)
	}
	p := newFakeProc()
	hs.started(h, p)
	return hs, h, p
}

// TestADetachedProcessKeepsItsLatestOutput: with no connection, the spool
// keeps the latest SpoolBytes; a later attach from the start is told what
// was lost (a skip) and gets the rest.
func TestADetachedProcessKeepsItsLatestOutput(t *testing.T) {
	smallSpool(t, 16)
	s := &session{}
	_, h, _ := newTestHeld(t, s)
	h.detach(s)
	w := writer{h: h, i: 0}
	in := "0123456789abcdefghijklmnopqrstuvwxyzABCD" // 40 bytes, 2.5 spools
	w.Write([]byte(in[:7]))
	w.Write([]byte(in[7:]))
	s2 := &session{}
	if _, _, err := h.attach(s2, [3]int64{}); err != nil {
		t.Fatal(err)
	}
	got, skips := drain(t, h, s2, 16)
	if got != in[24:] || len(skips) != 1 || skips[0] != 24 {
		t.Fatalf("after a detached overflow: %q, skips %v", got, skips)
	}
}

// TestAnAttachedWriterNeverOverwritesUnsentOutput: while a connection is
// attached, the process waits for the sender instead of losing bytes.
func TestAnAttachedWriterNeverOverwritesUnsentOutput(t *testing.T) {
	smallSpool(t, 16)
	s := &session{}
	_, h, _ := newTestHeld(t, s)
	var in bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&in, "%02d,", i)
	}
	go func() {
		w := writer{h: h, i: 0}
		b := in.Bytes()
		for len(b) > 0 { // writes of assorted sizes, some over the spool
			k := min(len(b), 1+len(b)%23)
			w.Write(b[:k])
			b = b[k:]
		}
	}()
	got, skips := drain(t, h, s, in.Len())
	if got != in.String() || len(skips) != 0 {
		t.Fatalf("attached output: %q, skips %v", got, skips)
	}
}

// TestAttachAndReleaseRefuseWhatTheRunnerDoesNotHold: offsets beyond what
// was written and unknown run ids are refused, nothing changed.
func TestAttachAndReleaseRefuseWhatTheRunnerDoesNotHold(t *testing.T) {
	s := &session{}
	hs, h, p := newTestHeld(t, s)
	writer{h: h, i: 1}.Write([]byte("err"))
	if _, _, err := h.attach(&session{}, [3]int64{0, 4, 0}); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("an attach beyond the output: %v", err)
	}
	if h.att != s {
		t.Fatal("a refused attach changed the attachment")
	}
	if err := hs.release("wc_job_2"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("releasing an unknown run id: %v", err)
	}
	if err := hs.release("wc_job_1"); err != nil {
		t.Fatal(err)
	}
	<-p.stopped // a running process released is stopped
	if hs.get("wc_job_1") != nil || len(hs.inventory(false)) != 0 {
		t.Fatal("a released process is still held")
	}
	if _, _, err := h.attach(s, [3]int64{}); !failure.Is(err, failure.NotFound) {
		t.Fatalf("attaching a released process: %v", err)
	}
}

// TestTheInventoryIsBounded: at MaxInventory held processes the oldest
// finished one is forgotten for a new start; when all run, the start is
// refused.
func TestTheInventoryIsBounded(t *testing.T) {
	hs := newHolding()
	t.Cleanup(hs.closeAll)
	s := &session{}
	var procs []*fakeProc
	for i := range runnerwire.MaxInventory {
		h, err := hs.reserve(fmt.Sprintf("wc_job_%d", i), s, false)
		if err != nil {
			t.Fatal(err)
		}
		p := newFakeProc()
		hs.started(h, p)
		procs = append(procs, p)
	}
	if _, err := hs.reserve("wc_job_x", s, false); !failure.Is(err, failure.QueueFull) {
		t.Fatalf("a start beyond the inventory with every process running: %v", err)
	}
	if _, err := hs.reserve("wc_job_3", s, false); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("a start of a run id held already: %v", err)
	}
	procs[5].end()
	for hs.get("wc_job_5") == nil || inventoryState(hs, "wc_job_5") != runnerwire.ProcExited {
		h := hs.get("wc_job_5")
		h.mu.Lock()
		for !h.exited {
			h.cond.Wait()
		}
		h.mu.Unlock()
	}
	h, err := hs.reserve("wc_job_x", s, false)
	if err != nil {
		t.Fatalf("a start with a finished process to forget: %v", err)
	}
	hs.started(h, newFakeProc())
	if hs.get("wc_job_5") != nil || len(hs.inventory(false)) != runnerwire.MaxInventory {
		t.Fatalf("the finished process was not the one forgotten: %d held", len(hs.inventory(false)))
	}
}

func inventoryState(hs *holding, id string) string {
	for _, e := range hs.inventory(false) {
		if e.ID == id {
			return e.State
		}
	}
	return ""
}

// TestAHelloOffersOnlyDetachedProcesses: a process a live connection (to
// one replica) streams is not in the inventory offered to another
// connection's hello; once that connection ends it is.
func TestAHelloOffersOnlyDetachedProcesses(t *testing.T) {
	hs := newHolding()
	t.Cleanup(hs.closeAll)
	a, b := &session{}, &session{}
	for i, s := range []*session{a, b} {
		h, err := hs.reserve(fmt.Sprintf("wc_job_%d", i), s, false)
		if err != nil {
			t.Fatal(err)
		}
		hs.started(h, newFakeProc())
	}
	ids := func(detachedOnly bool) []string {
		var out []string
		for _, e := range hs.inventory(detachedOnly) {
			out = append(out, e.ID)
		}
		return out
	}
	if got := ids(true); len(got) != 0 {
		t.Fatalf("offered while both stream: %v", got)
	}
	hs.detach(a)
	if got := ids(true); len(got) != 1 || got[0] != "wc_job_0" {
		t.Fatalf("offered after a's connection ended: %v", got)
	}
	if got := ids(false); len(got) != 2 {
		t.Fatalf("held: %v", got)
	}
}
