// Processes the runner holds for the server: they belong to the runner,
// not to a connection. A process runs on when its connection ends, its
// output kept in a spool of the latest runnerwire.SpoolBytes per stream;
// a later connection attaches to it (proc.attach) and gets the output from
// where the server's copy stops, then the exit. A finished process is held
// until the server releases it, so its exit is never lost with a
// connection; beyond runnerwire.MaxInventory processes the oldest finished
// one is forgotten.

package runneragent

import (
	"context"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// spoolBytes is the size of one stream's spool (a variable only so that
// tests can make it small).
var spoolBytes int64 = runnerwire.SpoolBytes

// held is one process the runner holds.
type held struct {
	runID string

	mu   sync.Mutex
	cond *sync.Cond
	proc runner.Process // nil while it starts
	// streams are stdout, stderr and the collected report (nil when the
	// start collects none).
	streams [3]*spool
	exited  bool
	exit    runnerwire.Exit
	endedAt time.Time
	// att is the connection the output goes to (nil while detached);
	// token changes at every attach so that an earlier streamer stops.
	att     *session
	token   uint64
	stopReq bool // a stop that arrived while it started
	gone    bool // released or forgotten: its spools are closed
}

// spool is a ring of one stream's latest size bytes in a file: byte n of
// the stream is at n mod size. Guarded by its held's mu.
type spool struct {
	f       *os.File
	size    int64
	written int64 // bytes the process wrote
	sent    int64 // bytes handed to the attached connection
	// lostTo is the end of a range the file could not store (a disk
	// error): those bytes are skipped, never sent as if stored.
	lostTo int64
}

// newSpool makes a spool file in dir. It is unlinked at once where the
// system allows (it lives while open), else when it is closed.
func newSpool(dir string, size int64) (*spool, error) {
	f, err := os.CreateTemp(dir, "spool-*")
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" {
		os.Remove(f.Name())
	}
	return &spool{f: f, size: size}, nil
}

func (s *spool) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// store writes p (at most s.size bytes) at the stream's end.
func (s *spool) store(p []byte) {
	off := s.written % s.size
	k := min(int64(len(p)), s.size-off)
	_, err := s.f.WriteAt(p[:k], off)
	if err == nil && k < int64(len(p)) {
		_, err = s.f.WriteAt(p[k:], 0)
	}
	s.written += int64(len(p))
	if err != nil {
		s.lostTo = s.written
	}
}

// load reads len(b) bytes of the stream from offset from.
func (s *spool) load(b []byte, from int64) error {
	off := from % s.size
	k := min(int64(len(b)), s.size-off)
	if _, err := s.f.ReadAt(b[:k], off); err != nil {
		return err
	}
	if k < int64(len(b)) {
		_, err := s.f.ReadAt(b[k:], 0)
		return err
	}
	return nil
}

// writer is the process's writer of stream i: it stores what the process
// writes in the spool. While a connection is attached it never overwrites
// bytes not yet sent (the process waits, as it would on a pipe); while
// detached the oldest bytes give way.
type writer struct {
	h *held
	i int
}

func (w writer) Write(p []byte) (int, error) {
	h, n := w.h, len(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.streams[w.i]
	for len(p) > 0 && !h.gone && !h.exited {
		room := s.size
		if h.att != nil {
			room -= s.written - s.sent
			if room <= 0 {
				h.cond.Wait()
				continue
			}
		}
		k := min(room, int64(len(p)))
		s.store(p[:k])
		p = p[k:]
		h.cond.Broadcast()
	}
	return n, nil
}

// attach makes s the connection h's output goes to, from the offsets
// on (a connection it went to before stops getting it), and returns its
// state and the token the streamer of s runs with. Nothing is sent until
// that streamer starts.
func (h *held) attach(s *session, offsets [3]int64) (runnerwire.ProcAttached, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone || h.proc == nil {
		return runnerwire.ProcAttached{}, 0, failure.New(failure.NotFound, "this runner no longer holds process %s", h.runID)
	}
	for i, off := range offsets {
		if held := h.written(i); off > held {
			return runnerwire.ProcAttached{}, 0, failure.New(failure.InvalidArguments, "process %s wrote %d bytes of %s, not %d", h.runID, held, streamName(i), off)
		}
	}
	for i, off := range offsets {
		if h.streams[i] != nil {
			h.streams[i].sent = off
		}
	}
	h.att = s
	h.token++
	h.cond.Broadcast()
	st := runnerwire.ProcAttached{State: runnerwire.ProcRunning, PID: h.proc.PID(), Sandbox: string(h.proc.Sandbox())}
	if h.exited {
		st.State = runnerwire.ProcExited
	}
	return st, h.token, nil
}

// detach stops sending to s; the process runs on into its spools.
func (h *held) detach(s *session) {
	h.mu.Lock()
	if h.att == s {
		h.att = nil
		h.cond.Broadcast()
	}
	h.mu.Unlock()
}

// written is how many bytes stream i holds (0 for a report not
// collected).
func (h *held) written(i int) int64 {
	if h.streams[i] == nil {
		return 0
	}
	return h.streams[i].written
}

func streamName(i int) string {
	switch i {
	case 1:
		return runnerwire.Stderr
	case 2:
		return runnerwire.Report
	}
	return runnerwire.Stdout
}

// stream sends the spooled output to s while it stays attached with token
// tok, then the exit once every byte was sent.
func (h *held) stream(s *session, tok uint64) {
	buf := make([]byte, runnerwire.MaxBinaryDataBytes)
	for {
		h.mu.Lock()
		var m runnerwire.Binary
		var exit *runnerwire.Exit
		for {
			if h.att != s || h.token != tok {
				h.mu.Unlock()
				return
			}
			var ok bool
			if m, ok = h.next(buf); ok {
				break
			}
			if h.exited {
				e := h.exit
				exit = &e
				break
			}
			h.cond.Wait()
		}
		if m.Type == runnerwire.BinOutput {
			// The writer never overwrites unsent bytes while attached,
			// so they can be read without the lock.
			h.mu.Unlock()
			err := h.streams[streamIndex(m.Stream)].load(m.Data, m.Offset)
			h.mu.Lock()
			if err != nil {
				h.streams[streamIndex(m.Stream)].lostTo = max(h.streams[streamIndex(m.Stream)].lostTo, m.Offset+int64(len(m.Data)))
				h.mu.Unlock()
				continue
			}
		}
		h.mu.Unlock()
		var err error
		if exit != nil {
			err = s.send(runnerwire.KindExit, h.runID, *exit)
		} else {
			m.Gen, m.ID = s.gen, h.runID
			var b []byte
			if b, err = runnerwire.EncodeBinary(m); err == nil {
				err = s.writeBinary(b)
			}
		}
		if err != nil {
			// The connection is going: the process runs on, detached.
			h.detach(s)
			return
		}
		if exit != nil {
			return
		}
		h.mu.Lock()
		i := streamIndex(m.Stream)
		if h.att == s && h.token == tok {
			if m.Type == runnerwire.BinSkip {
				h.streams[i].sent = max(h.streams[i].sent, m.Offset)
			} else {
				h.streams[i].sent = max(h.streams[i].sent, m.Offset+int64(len(m.Data)))
			}
			h.cond.Broadcast()
		}
		h.mu.Unlock()
	}
}

// next is the next message to send, with h.mu held: a skip over bytes the
// spool no longer holds (or could not store), else a chunk of output.
func (h *held) next(buf []byte) (runnerwire.Binary, bool) {
	for i, s := range h.streams {
		if s == nil || s.sent >= s.written {
			continue
		}
		name := streamName(i)
		if oldest := s.written - s.size; s.sent < oldest {
			return runnerwire.Binary{Type: runnerwire.BinSkip, Stream: name, Offset: oldest}, true
		}
		if s.sent < s.lostTo {
			return runnerwire.Binary{Type: runnerwire.BinSkip, Stream: name, Offset: min(s.lostTo, s.written)}, true
		}
		n := min(int64(len(buf)), s.written-s.sent)
		return runnerwire.Binary{Type: runnerwire.BinOutput, Stream: name, Offset: s.sent, Data: buf[:n]}, true
	}
	return runnerwire.Binary{}, false
}

func streamIndex(name string) int {
	switch name {
	case runnerwire.Stderr:
		return 1
	case runnerwire.Report:
		return 2
	}
	return 0
}

// finish records the process's exit; the attached connection sends it
// after the last output.
func (h *held) finish(res runner.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res.Stdout = runner.Output{TotalBytes: h.streams[0].written, Truncated: res.Stdout.Truncated}
	res.Stderr = runner.Output{TotalBytes: h.streams[1].written, Truncated: res.Stderr.Truncated}
	h.exit = runnerwire.Exit{Result: res, DurationMS: res.Duration.Milliseconds()}
	h.exited, h.endedAt = true, time.Now()
	h.cond.Broadcast()
}

// close forgets the process: its spools are closed and its writers drop
// what still comes.
func (h *held) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return
	}
	h.gone, h.att = true, nil
	for _, s := range h.streams {
		if s != nil {
			s.close()
		}
	}
	h.cond.Broadcast()
}

// holding is the runner's registry of held processes.
type holding struct {
	mu    sync.Mutex
	dir   string // the spool directory, made at the first process
	procs map[string]*held
	// starting holds the processes being started, counted against
	// MaxInventory.
	starting map[string]*held
	wg       sync.WaitGroup
}

func newHolding() *holding {
	return &holding{procs: map[string]*held{}, starting: map[string]*held{}}
}

// reserve makes the held process of runID attached to s, its spools
// ready (a report's, of runner.MaxCollectBytes so that it never wraps,
// when report), before its process starts: a finished process is
// forgotten (the oldest first) when MaxInventory would be exceeded; when
// every one held is running, the start is refused.
func (hs *holding) reserve(runID string, s *session, report bool) (*held, error) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.procs[runID] != nil || hs.starting[runID] != nil {
		return nil, failure.New(failure.InvalidArguments, "this runner already holds a process of run id %s", runID)
	}
	for len(hs.procs)+len(hs.starting) >= runnerwire.MaxInventory {
		if !hs.evictLocked() {
			return nil, failure.New(failure.QueueFull, "this runner runs %d processes already", runnerwire.MaxInventory)
		}
	}
	if hs.dir == "" {
		dir, err := os.MkdirTemp("", "webcodex-runner-spool-")
		if err != nil {
			return nil, failure.Wrap(failure.NotStarted, err, "the output spool directory cannot be made")
		}
		hs.dir = dir
	}
	h := &held{runID: runID, att: s, token: 1}
	h.cond = sync.NewCond(&h.mu)
	sizes := []int64{spoolBytes, spoolBytes}
	if report {
		sizes = append(sizes, runner.MaxCollectBytes)
	}
	for i, size := range sizes {
		sp, err := newSpool(hs.dir, size)
		if err != nil {
			for _, made := range h.streams[:i] {
				made.close()
			}
			return nil, failure.Wrap(failure.NotStarted, err, "the output spool cannot be made")
		}
		h.streams[i] = sp
	}
	hs.starting[runID] = h
	return h, nil
}

// evictLocked forgets the finished process that ended first; false when
// none has.
func (hs *holding) evictLocked() bool {
	var oldest *held
	for _, h := range hs.procs {
		h.mu.Lock()
		if h.exited && (oldest == nil || h.endedAt.Before(oldest.endedAt)) {
			oldest = h
		}
		h.mu.Unlock()
	}
	if oldest == nil {
		return false
	}
	delete(hs.procs, oldest.runID)
	oldest.close()
	return true
}

// started installs h, whose process started (proc) or did not (nil), and
// supervises the process until it exits.
func (hs *holding) started(h *held, proc runner.Process) {
	hs.mu.Lock()
	delete(hs.starting, h.runID)
	if proc == nil {
		hs.mu.Unlock()
		h.close()
		return
	}
	hs.procs[h.runID] = h
	hs.wg.Add(1)
	hs.mu.Unlock()
	h.mu.Lock()
	h.proc = proc
	stop := h.stopReq
	h.mu.Unlock()
	if stop {
		proc.Stop()
	}
	go func() {
		defer hs.wg.Done()
		res, _ := proc.Wait(context.Background())
		h.finish(res)
	}()
}

// get returns the held process of runID, or nil.
func (hs *holding) get(runID string) *held {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.procs[runID]
}

// stop stops the process of runID (a cancel); one still starting is
// stopped once it has. A run id the runner does not hold is ignored.
func (hs *holding) stop(runID string) {
	hs.mu.Lock()
	h := hs.procs[runID]
	if h == nil {
		h = hs.starting[runID]
	}
	hs.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	p := h.proc
	if p == nil {
		h.stopReq = true
	}
	h.mu.Unlock()
	if p != nil {
		p.Stop()
	}
}

// release forgets runID, stopping its process if it runs.
func (hs *holding) release(runID string) error {
	hs.mu.Lock()
	h := hs.procs[runID]
	delete(hs.procs, runID)
	hs.mu.Unlock()
	if h == nil {
		return failure.New(failure.NotFound, "this runner holds no process %s", runID)
	}
	h.mu.Lock()
	p, exited := h.proc, h.exited
	h.mu.Unlock()
	if !exited && p != nil {
		p.Stop()
	}
	h.close()
	return nil
}

// inventory lists the held processes, ordered by run id; with
// detachedOnly, only those no live connection streams.
func (hs *holding) inventory(detachedOnly bool) []runnerwire.Inventory {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make([]runnerwire.Inventory, 0, len(hs.procs))
	for id, h := range hs.procs {
		h.mu.Lock()
		st := runnerwire.ProcRunning
		if h.exited {
			st = runnerwire.ProcExited
		}
		attached := h.att != nil
		h.mu.Unlock()
		if detachedOnly && attached {
			continue
		}
		out = append(out, runnerwire.Inventory{ID: id, State: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// running counts the held processes that run.
func (hs *holding) running() int {
	n := 0
	for _, e := range hs.inventory(false) {
		if e.State == runnerwire.ProcRunning {
			n++
		}
	}
	return n
}

// detach stops sending anything to s.
func (hs *holding) detach(s *session) {
	hs.mu.Lock()
	all := make([]*held, 0, len(hs.procs)+len(hs.starting))
	for _, h := range hs.procs {
		all = append(all, h)
	}
	for _, h := range hs.starting {
		all = append(all, h)
	}
	hs.mu.Unlock()
	for _, h := range all {
		h.detach(s)
	}
}

// closeAll stops every held process, waits for them and removes the
// spools: the runner is stopping, and what it held is lost with it.
func (hs *holding) closeAll() {
	hs.mu.Lock()
	all := make([]*held, 0, len(hs.procs))
	for _, h := range hs.procs {
		all = append(all, h)
	}
	hs.mu.Unlock()
	for _, h := range all {
		h.mu.Lock()
		p := h.proc
		h.mu.Unlock()
		if p != nil {
			p.Stop()
		}
	}
	hs.wg.Wait()
	hs.mu.Lock()
	for id, h := range hs.procs {
		h.close()
		delete(hs.procs, id)
	}
	dir := hs.dir
	hs.dir = ""
	hs.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
