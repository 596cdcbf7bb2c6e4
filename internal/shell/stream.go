package shell

import (
	"bytes"
	"os"
	"strconv"
	"sync"

	"github.com/webcodex/webcodex/internal/runner"
)

// A stream reads one of the shell's output pipes (stdout or stderr) for
// the shell's whole life and cuts it into per-command tails.
//
// While a command is armed, bytes go to that command's bounded tail until
// the command's end sentinel appears in the stream; the sentinel itself is
// never stored, and whatever follows it is not the command's output. A
// sentinel may straddle two reads, so the last len(sentinel)-1 bytes of
// each read are held back until the next read shows whether they start the
// sentinel. Between commands (no sentinel armed) output belongs to no
// command and is dropped: it can only come from background processes an
// earlier command left running.
//
// A stream armed with a status (a remote shell's stdout, see remote.go)
// expects the sentinel to be followed by " <exit status>\n": those bytes
// are not output either, and the sentinel counts as seen once the whole
// status line has been read (status reports it).
type stream struct {
	f     *os.File
	limit int

	mu       sync.Mutex
	tail     *runner.Tail // current command's tail; nil between commands
	sentinel []byte
	hold     []byte
	seen     chan struct{} // closed when the armed sentinel was found
	dropped  int64         // bytes that belonged to no command
	// withStatus: the armed sentinel is followed by a status line;
	// inStatus: the sentinel was read and the status line is being read
	// into statusBuf; code and codeOK: the status read.
	withStatus bool
	inStatus   bool
	statusBuf  []byte
	code       int
	codeOK     bool

	done chan struct{} // closed when the reader stopped (EOF or closed)
}

func newStream(f *os.File, limit int) *stream {
	return &stream{f: f, limit: limit, done: make(chan struct{})}
}

// maxStatusBytes bounds the status line after a status sentinel: " "
// and an exit status (0-255) with room to spare; a longer one is
// damaged framing.
const maxStatusBytes = 16

// arm starts a command: output from now on goes to a fresh tail until
// sentinel is read (and, withStatus, the status line after it). It
// returns the tail and a channel closed when the sentinel has been read.
func (st *stream) arm(sentinel string, withStatus bool) (*runner.Tail, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.tail = runner.NewTail(st.limit)
	st.sentinel = []byte(sentinel)
	st.hold = nil
	st.seen = make(chan struct{})
	st.withStatus, st.inStatus, st.statusBuf, st.code, st.codeOK = withStatus, false, nil, 0, false
	return st.tail, st.seen
}

// status returns the exit status read after the sentinel of a stream
// armed withStatus; ok is false when the line was not " <integer>".
func (st *stream) status() (code int, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.code, st.codeOK
}

// readStatus consumes p as part of the status line; the caller holds
// st.mu.
func (st *stream) readStatus(p []byte) {
	j := bytes.IndexByte(p, '\n')
	if j < 0 && len(st.statusBuf)+len(p) <= maxStatusBytes {
		st.statusBuf = append(st.statusBuf, p...)
		return
	}
	if j >= 0 {
		st.statusBuf = append(st.statusBuf, p[:j]...)
		st.dropped += int64(len(p) - j - 1)
	}
	b := st.statusBuf
	if len(b) > 1 && b[0] == ' ' && len(b) <= maxStatusBytes {
		n, err := strconv.Atoi(string(b[1:]))
		st.code, st.codeOK = n, err == nil
	}
	st.inStatus, st.statusBuf = false, nil
	close(st.seen)
}

// loop reads until EOF or until the file is closed.
func (st *stream) loop() {
	defer close(st.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := st.f.Read(buf)
		if n > 0 {
			st.feed(buf[:n])
		}
		if err != nil {
			st.flush()
			return
		}
	}
}

func (st *stream) feed(p []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.inStatus {
		st.readStatus(p)
		return
	}
	if st.tail == nil {
		st.dropped += int64(len(p))
		return
	}
	data := p
	if len(st.hold) > 0 {
		data = append(st.hold, p...)
	}
	if i := bytes.Index(data, st.sentinel); i >= 0 {
		st.tail.Write(data[:i])
		rest := data[i+len(st.sentinel):]
		st.tail, st.sentinel, st.hold = nil, nil, nil
		if st.withStatus {
			st.inStatus = true
			st.readStatus(rest)
			return
		}
		st.dropped += int64(len(rest))
		close(st.seen)
		return
	}
	keep := len(st.sentinel) - 1
	if len(data) <= keep {
		st.hold = append([]byte(nil), data...)
		return
	}
	st.tail.Write(data[:len(data)-keep])
	st.hold = append(st.hold[:0:0], data[len(data)-keep:]...)
}

// flush gives held-back bytes to the current command at end of stream.
func (st *stream) flush() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tail != nil && len(st.hold) > 0 {
		st.tail.Write(st.hold)
	}
	st.hold = nil
}
