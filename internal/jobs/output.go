// Output files: the capped, spill-to-disk writers of a job's streams and
// reading them back by byte cursor.

package jobs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/redact"
)

// capFile is a job's output file: writes are stored until it holds limit
// bytes; the rest is counted as dropped. It never fails a write, so a full
// disk or the cap never blocks or breaks the child's pipe.
//
// Output is held in memory (at most memLimit bytes) until the file is
// needed: spill creates the file (and the job's directory) and moves the
// output there, and so does a write that would exceed memLimit. A run
// answered inline with little output therefore never touches the disk;
// a job anyone else may read (background, queued, handed off) is spilled
// before its record is made durable. Memory does not depend on the volume
// written.
type capFile struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	mkdir    func() error // creates the directory of path
	mem      []byte
	memLimit int64
	spilled  bool
	limit    int64
	closed   bool

	written atomic.Int64
	dropped atomic.Int64
	// onWrite is called after every write (a wake signal for waiters).
	onWrite func()
}

// DefaultMemOutputBytes is how much output a stream holds in memory
// before it is spilled to its file.
const DefaultMemOutputBytes = 256 << 10

// newCapFile returns a capFile for path that holds output in memory until
// it is spilled.
func newCapFile(path string, limit, memLimit int64, mkdir func() error, onWrite func()) *capFile {
	return &capFile{path: path, limit: limit, memLimit: memLimit, mkdir: mkdir, onWrite: onWrite}
}

// createCapFile returns a capFile whose file exists at once.
func createCapFile(path string, limit int64, onWrite func()) (*capFile, error) {
	c := newCapFile(path, limit, 0, func() error { return nil }, onWrite)
	if err := c.spill(); err != nil {
		return nil, err
	}
	return c, nil
}

// spill creates the file and moves the output held in memory to it.
func (c *capFile) spill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spillLocked()
}

func (c *capFile) spillLocked() error {
	if c.spilled {
		return nil
	}
	if err := c.mkdir(); err != nil {
		return err
	}
	f, err := os.OpenFile(c.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if len(c.mem) > 0 {
		if _, err := f.Write(c.mem); err != nil {
			f.Close()
			os.Remove(c.path)
			return err
		}
	}
	c.mem, c.f, c.spilled = nil, f, true
	if c.closed {
		return f.Close()
	}
	return nil
}

// isSpilled reports whether the file exists.
func (c *capFile) isSpilled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spilled
}

// Write implements io.Writer.
func (c *capFile) Write(p []byte) (int, error) {
	n := len(p)
	c.mu.Lock()
	stored := 0
	if !c.closed {
		if room := c.limit - c.written.Load(); room > 0 {
			k := int(min(room, int64(n)))
			if !c.spilled && int64(len(c.mem)+k) > c.memLimit {
				if err := c.spillLocked(); err != nil {
					// The disk refused: keep counting, stop storing.
					c.limit, k = c.written.Load(), 0
				}
			}
			switch {
			case k == 0:
			case c.spilled:
				w, err := c.f.Write(p[:k])
				stored = w
				if err != nil {
					// The disk refused: keep counting, stop writing.
					c.limit = c.written.Load() + int64(w)
				}
			default:
				c.mem = append(c.mem, p[:k]...)
				stored = k
			}
			c.written.Add(int64(stored))
		}
	}
	c.dropped.Add(int64(n - stored))
	c.mu.Unlock()
	if c.onWrite != nil {
		c.onWrite()
	}
	return n, nil
}

// Skip implements runner.Skipper: n bytes of the stream will never come (a
// remote runner no longer holds them). They count as dropped, and nothing
// after them is stored, so that the file stays a prefix of the stream.
func (c *capFile) Skip(n int64) {
	c.mu.Lock()
	c.limit = min(c.limit, c.written.Load())
	c.mu.Unlock()
	c.dropped.Add(n)
	if c.onWrite != nil {
		c.onWrite()
	}
}

// Close closes the file; later writes are counted as dropped. Output
// still in memory stays there until spill or until it is dropped with the
// capFile.
func (c *capFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}

// jobDir returns the output directory of a job.
func jobDir(root, id string) string { return filepath.Join(root, id) }

func outputPath(root, id string, s Stream) string { return filepath.Join(root, id, string(s)) }

// A Chunk is a slice of one output stream read by byte cursor.
type Chunk struct {
	// Cursor is the file offset of Text's first byte; NextCursor is where
	// the next read continues.
	Cursor     int64  `json:"cursor"`
	NextCursor int64  `json:"next_cursor"`
	Text       string `json:"text"`
	// More is true when bytes beyond NextCursor were already stored.
	More bool `json:"more"`
	// FileBytes is the stored size of the stream; DroppedBytes counts
	// bytes beyond the file cap that were never stored.
	FileBytes    int64 `json:"file_bytes"`
	DroppedBytes int64 `json:"dropped_bytes,omitempty"`
	// Retained is false when the stream's file no longer exists (a run
	// answered inline, or a pruned job) or is not on this server.
	Retained bool `json:"retained"`
	// Replica, with several replicas on one database, names the replica
	// whose data directory holds the stream when this one has none of
	// it (the job ran under that replica): read the output through it.
	Replica string `json:"replica,omitempty"`
}

// readChunk reads up to limit bytes of the file at path. With cursor nil it
// returns the last limit bytes (a tail); otherwise bytes from *cursor on. The
// result is cut to UTF-8 boundaries where a rune would be split.
func readChunk(path string, cursor *int64, limit int, final bool) (Chunk, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		c := Chunk{}
		if cursor != nil {
			c.Cursor, c.NextCursor = *cursor, *cursor
		}
		return c, nil
	}
	if err != nil {
		return Chunk{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Chunk{}, err
	}
	size := st.Size()
	var start int64
	tail := cursor == nil
	if tail {
		start = max(size-int64(limit), 0)
	} else {
		start = min(*cursor, size)
	}
	n := int(min(int64(limit), size-start))
	buf := make([]byte, n)
	if n > 0 {
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return Chunk{}, err
		}
	}
	// Skip a partial rune at the start.
	if start > 0 {
		i := 0
		for i < len(buf) && i < utf8.UTFMax-1 && !utf8.RuneStart(buf[i]) {
			i++
		}
		buf, start = buf[i:], start+int64(i)
	}
	end := start + int64(len(buf))
	// Keep an incomplete rune at the end for the next read, unless the
	// stream is complete and nothing will finish it.
	if !(final && end == size) {
		buf = redact.TrimIncompleteRune(buf)
		end = start + int64(len(buf))
	}
	return Chunk{Cursor: start, NextCursor: end, Text: string(buf), More: end < size, FileBytes: size, Retained: true}, nil
}

// fileSize returns the size of the file at path, 0 when absent.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
