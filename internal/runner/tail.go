package runner

import "sync"

// Tail keeps the last bytes written to it and counts them all. Memory is
// bounded by its capacity whatever the volume written. It is safe for
// concurrent use.
type Tail struct {
	mu    sync.Mutex
	buf   []byte // ring storage, len == cap once full
	start int    // index of the oldest byte when full
	full  bool
	total int64
	limit int
}

// NewTail returns a Tail keeping at most limit bytes.
func NewTail(limit int) *Tail {
	if limit < 1 {
		limit = 1
	}
	return &Tail{buf: make([]byte, 0, limit), limit: limit}
}

// Write implements io.Writer; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if n >= t.limit {
		t.buf = append(t.buf[:0], p[n-t.limit:]...)
		t.start, t.full = 0, true
		return n, nil
	}
	if !t.full {
		room := t.limit - len(t.buf)
		if n <= room {
			t.buf = append(t.buf, p...)
			if len(t.buf) == t.limit {
				t.full = true
			}
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		t.full = true
		p = p[room:]
	}
	for len(p) > 0 {
		c := copy(t.buf[t.start:], p)
		p = p[c:]
		t.start = (t.start + c) % t.limit
	}
	return n, nil
}

// Output is a bounded view of one output stream.
type Output struct {
	// Text is the retained tail, cut to a UTF-8 boundary at its start.
	Text string `json:"text"`
	// Truncated is true when earlier bytes were dropped.
	Truncated bool `json:"truncated"`
	// TotalBytes counts every byte the stream produced.
	TotalBytes int64 `json:"total_bytes"`
}

// Snapshot returns the current tail.
func (t *Tail) Snapshot() Output {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b []byte
	if t.full {
		b = make([]byte, 0, t.limit)
		b = append(b, t.buf[t.start:]...)
		b = append(b, t.buf[:t.start]...)
	} else {
		b = append([]byte(nil), t.buf...)
	}
	truncated := t.total > int64(len(b))
	if truncated {
		// Drop a partial UTF-8 sequence at the cut.
		i := 0
		for i < len(b) && i < 4 && b[i]&0xC0 == 0x80 {
			i++
		}
		b = b[i:]
	}
	return Output{Text: string(b), Truncated: truncated, TotalBytes: t.total}
}
