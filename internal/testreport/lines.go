package testreport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader yields lines of at most MaxLineBytes with bounded memory.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its "\n" or "\r\n". cut is true when the
// line was longer than MaxLineBytes; the returned bytes are then its prefix.
// err is io.EOF after the last line, or the reader's error. The returned
// slice is valid until the next call.
func (l *lineReader) next() (line []byte, cut bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, rerr := l.br.ReadSlice('\n')
		if room := MaxLineBytes - len(l.buf); len(chunk) > room {
			// Keep the newline out of the length check below.
			trimmed := bytes.TrimSuffix(chunk, []byte("\n"))
			if len(trimmed) > room {
				cut = true
				chunk = trimmed[:max(room, 0)]
			}
		}
		if need := len(l.buf) + len(chunk); need > cap(l.buf) {
			// Double (append grows large slices by only 1.25x), so a
			// long line costs at most about 2*MaxLineBytes of allocation.
			grown := make([]byte, len(l.buf), max(need, min(2*cap(l.buf), MaxLineBytes+1)))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, chunk...)
		switch {
		case rerr == nil:
			return trimEOL(l.buf), cut, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case rerr == io.EOF:
			if len(l.buf) == 0 && !cut {
				return nil, false, io.EOF
			}
			return trimEOL(l.buf), cut, nil
		default:
			return trimEOL(l.buf), cut, rerr
		}
	}
}

// feedTextLines reads r line by line and hands each clean line to line,
// recording over-long lines (ProblemTruncatedOutput) and lines with
// control characters (ProblemCorruptLine) on b instead. It stops at EOF,
// when stop (if not nil) reports true, or at a read error, which it records
// as ProblemTruncatedOutput and returns.
func feedTextLines(r io.Reader, b *builder, stop func() bool, line func(string)) error {
	lr := newLineReader(r)
	for stop == nil || !stop() {
		l, cut, err := lr.next()
		if err == io.EOF {
			return nil
		}
		switch {
		case cut:
			b.problem(ProblemTruncatedOutput)
		case !cleanLine(l):
			b.problem(ProblemCorruptLine)
		default:
			line(string(l))
		}
		if err != nil {
			b.problem(ProblemTruncatedOutput)
			return err
		}
	}
	return nil
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
