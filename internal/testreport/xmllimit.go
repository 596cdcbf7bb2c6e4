package testreport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Bounds of the XML limiter.
const (
	// MaxXMLValueBytes is the most bytes kept of one run of character
	// data, one CDATA section, one comment or one attribute value. The rest
	// is elided before the XML decoder sees it (at a UTF-8 and entity
	// boundary, so the document stays well formed).
	MaxXMLValueBytes = 64 << 10
	// MaxXMLTagBytes bounds one tag (with its attribute values), processing
	// instruction or declaration. A longer one stops parsing with
	// ProblemTruncatedOutput.
	MaxXMLTagBytes = 1 << 20
	// MaxXMLDepth bounds element nesting; deeper documents stop parsing
	// with ProblemLimitExceeded.
	MaxXMLDepth = 64
	// maxXMLEntityBytes bounds how far past MaxXMLValueBytes an entity
	// reference in progress is still completed.
	maxXMLEntityBytes = 32
)

// errXMLTagTooLong reports a tag longer than MaxXMLTagBytes.
var errXMLTagTooLong = errors.New("testreport: XML tag exceeds MaxXMLTagBytes")

type xmlState int

const (
	xsText    xmlState = iota // character data
	xsLT                      // just after '<'
	xsBang                    // after "<!", deciding comment/CDATA/declaration
	xsTag                     // inside a start or end tag
	xsAttr                    // inside a quoted attribute value
	xsComment                 // inside <!-- -->
	xsCDATA                   // inside <![CDATA[ ]]>
	xsPI                      // inside <? ?>
	xsDecl                    // inside <!DOCTYPE …>
)

// xmlLimiter is an io.ByteReader and io.Reader over XML input that elides
// over-long content so that encoding/xml, which buffers each token whole,
// uses bounded memory. It follows the lexical structure just enough to know
// which bytes are content; the decoder still validates everything it sees.
type xmlLimiter struct {
	src   *bufio.Reader
	out   [8]byte
	outN  int
	outI  int
	err   error // sticky error to return once out is drained
	eof   bool  // the source reached io.EOF
	state xmlState

	runLen   int    // content bytes emitted in the current run
	dropping bool   // eliding the rest of the current run
	entity   int    // >0: bytes of an entity reference in progress
	lastOut  byte   // last byte emitted
	quote    byte   // terminator of the current attribute value
	term     string // terminator of the current comment or CDATA
	held     int    // bytes of term matched and not yet emitted
	bang     []byte // bytes after "<!" while deciding
	tagLen   int    // bytes of the current tag, PI or declaration
	declQ    byte   // quote inside a declaration, 0 outside
	declD    int    // '<' nesting inside a declaration
	prevPI   byte   // previous byte inside a PI
}

func newXMLLimiter(r io.Reader) *xmlLimiter {
	return &xmlLimiter{src: bufio.NewReaderSize(r, 64<<10)}
}

// ReadByte implements io.ByteReader.
func (l *xmlLimiter) ReadByte() (byte, error) {
	for l.outI == l.outN {
		if l.err != nil {
			return 0, l.err
		}
		l.outI, l.outN = 0, 0
		l.skipDropped()
		b, err := l.src.ReadByte()
		if err != nil {
			if err == io.EOF {
				l.eof = true
			}
			l.err = err
			continue
		}
		l.step(b)
	}
	b := l.out[l.outI]
	l.outI++
	return b, nil
}

// skipDropped discards buffered bytes that content would drop anyway: the
// rest of an elided text run up to '<', or of an attribute value up to its
// quote. (Comments and CDATA go byte by byte to track their terminator.)
func (l *xmlLimiter) skipDropped() {
	if !l.dropping {
		return
	}
	var stop byte
	switch l.state {
	case xsText:
		stop = '<'
	case xsAttr:
		stop = l.quote
	default:
		return
	}
	for {
		buf, _ := l.src.Peek(max(l.src.Buffered(), 1))
		if len(buf) == 0 {
			return
		}
		i := bytes.IndexByte(buf, stop)
		if i < 0 {
			i = len(buf)
		}
		l.src.Discard(i)
		if i < len(buf) {
			return
		}
	}
}

// Read implements io.Reader.
func (l *xmlLimiter) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		b, err := l.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		p[n] = b
		n++
		if l.outI == l.outN && l.src.Buffered() == 0 {
			break
		}
	}
	return n, nil
}

func (l *xmlLimiter) emit(b byte) {
	l.out[l.outN] = b
	l.outN++
	l.lastOut = b
}

// markup emits one byte of a tag, PI or declaration under MaxXMLTagBytes.
func (l *xmlLimiter) markup(b byte) {
	l.tagLen++
	if l.tagLen > MaxXMLTagBytes {
		l.err = errXMLTagTooLong
		return
	}
	l.emit(b)
}

func (l *xmlLimiter) startRun(s xmlState) {
	l.state = s
	l.runLen, l.dropping, l.entity, l.held = 0, false, 0, 0
}

func (l *xmlLimiter) step(b byte) {
	switch l.state {
	case xsText:
		if b == '<' {
			l.tagLen = 0
			l.state = xsLT
			l.markup(b)
			return
		}
		l.content(b, true)
	case xsLT:
		switch b {
		case '!':
			l.state, l.bang = xsBang, l.bang[:0]
			l.markup(b)
		case '?':
			l.state, l.prevPI = xsPI, 0
			l.markup(b)
		default:
			l.state = xsTag
			l.step(b)
		}
	case xsBang:
		l.markup(b)
		l.bang = append(l.bang, b)
		switch s := string(l.bang); {
		case s == "--":
			l.startRun(xsComment)
			l.term = "-->"
		case s == "[CDATA[":
			l.startRun(xsCDATA)
			l.term = "]]>"
		case len(s) <= len("[CDATA[") && ("--"[:min(len(s), 2)] == s || "[CDATA["[:len(s)] == s):
			// still deciding
		default:
			l.state, l.declQ, l.declD = xsDecl, 0, 0
		}
	case xsTag:
		switch b {
		case '"', '\'':
			l.markup(b)
			l.quote = b
			l.startRun(xsAttr)
		case '>':
			l.markup(b)
			l.startRun(xsText)
		default:
			l.markup(b)
		}
	case xsAttr:
		if b == l.quote {
			l.state = xsTag
			l.markup(b)
			return
		}
		before := l.outN
		l.content(b, true)
		if l.tagLen += l.outN - before; l.tagLen > MaxXMLTagBytes {
			l.err = errXMLTagTooLong
		}
	case xsComment, xsCDATA:
		l.termByte(b)
	case xsPI:
		l.markup(b)
		if l.prevPI == '?' && b == '>' {
			l.startRun(xsText)
		}
		l.prevPI = b
	case xsDecl:
		l.markup(b)
		switch {
		case l.declQ != 0:
			if b == l.declQ {
				l.declQ = 0
			}
		case b == '"' || b == '\'':
			l.declQ = b
		case b == '<':
			l.declD++
		case b == '>':
			if l.declD == 0 {
				l.startRun(xsText)
			} else {
				l.declD--
			}
		}
	}
}

// termByte handles a byte inside a comment or CDATA section, holding back
// bytes that may begin its terminator.
func (l *xmlLimiter) termByte(b byte) {
	t := l.term
	if b == t[l.held] {
		l.held++
		if l.held == len(t) {
			for i := 0; i < len(t); i++ {
				l.emit(t[i])
			}
			l.startRun(xsText)
		}
		return
	}
	// Both terminators begin with a doubled byte ("--", "]]"): a third one
	// shifts the window by one.
	if l.held == 2 && b == t[0] {
		l.content(t[0], false)
		return
	}
	for i := 0; i < l.held; i++ {
		l.content(t[i], false)
	}
	l.held = 0
	if b == t[0] {
		l.held = 1
		return
	}
	l.content(b, false)
}

// content emits or elides one content byte of the current run.
func (l *xmlLimiter) content(b byte, entities bool) {
	if l.dropping {
		return
	}
	keep := l.runLen < MaxXMLValueBytes ||
		b&0xC0 == 0x80 || // completes a rune already begun
		(entities && l.entity > 0 && l.entity < maxXMLEntityBytes)
	if !keep {
		l.dropping = true
		if l.state == xsComment && l.lastOut == '-' {
			// "-" followed by "-->" would read as a forbidden "--".
			l.emit(' ')
		}
		return
	}
	l.emit(b)
	l.runLen++
	if entities {
		switch {
		case b == '&':
			l.entity = 1
		case l.entity > 0 && b == ';':
			l.entity = 0
		case l.entity > 0:
			l.entity++
		}
	}
}
