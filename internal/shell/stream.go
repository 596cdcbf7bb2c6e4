package shell

import (
	"bytes"
	"os"
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
type stream struct {
	f     *os.File
	limit int

	mu       sync.Mutex
	tail     *runner.Tail // current command's tail; nil between commands
	sentinel []byte
	hold     []byte
	seen     chan struct{} // closed when the armed sentinel was found
	dropped  int64         // bytes that belonged to no command

	done chan struct{} // closed when the reader stopped (EOF or closed)
}

func newStream(f *os.File, limit int) *stream {
	return &stream{f: f, limit: limit, done: make(chan struct{})}
}

// arm starts a command: output from now on goes to a fresh tail until
// sentinel is read. It returns the tail and a channel closed when the
// sentinel has been read.
func (st *stream) arm(sentinel string) (*runner.Tail, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.tail = runner.NewTail(st.limit)
	st.sentinel = []byte(sentinel)
	st.hold = nil
	st.seen = make(chan struct{})
	return st.tail, st.seen
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
		st.dropped += int64(len(data) - i - len(st.sentinel))
		close(st.seen)
		st.tail, st.sentinel, st.hold = nil, nil, nil
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
