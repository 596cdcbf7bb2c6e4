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
)

// capFile is a job's output file: writes go straight to the file until it
// holds limit bytes; the rest is counted as dropped. It never fails a
// write, so a full disk or the cap never blocks or breaks the child's pipe.
// Memory does not depend on the volume written.
type capFile struct {
	mu     sync.Mutex
	f      *os.File
	limit  int64
	closed bool

	written atomic.Int64
	dropped atomic.Int64
	// onWrite is called after every write (a wake signal for waiters).
	onWrite func()
}

func createCapFile(path string, limit int64, onWrite func()) (*capFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &capFile{f: f, limit: limit, onWrite: onWrite}, nil
}

// Write implements io.Writer.
func (c *capFile) Write(p []byte) (int, error) {
	n := len(p)
	c.mu.Lock()
	stored := 0
	if !c.closed {
		if room := c.limit - c.written.Load(); room > 0 {
			k := int(min(room, int64(n)))
			w, err := c.f.Write(p[:k])
			stored = w
			c.written.Add(int64(w))
			if err != nil {
				// The disk refused: keep counting, stop writing.
				c.limit = c.written.Load()
			}
		}
	}
	c.dropped.Add(int64(n - stored))
	c.mu.Unlock()
	if c.onWrite != nil {
		c.onWrite()
	}
	return n, nil
}

// Close closes the file; later writes are counted as dropped.
func (c *capFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.f.Close()
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
	// answered inline, or a pruned job).
	Retained bool `json:"retained"`
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
		buf = trimPartialRune(buf)
		end = start + int64(len(buf))
	}
	return Chunk{Cursor: start, NextCursor: end, Text: string(buf), More: end < size, FileBytes: size, Retained: true}, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

// fileSize returns the size of the file at path, 0 when absent.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
