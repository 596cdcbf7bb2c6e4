package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/jsonkeys"
)

// MaxLineBytes bounds one stdio message: one line, without its line end.
// It is the bound of one HTTP request body, so a message that /mcp accepts
// is accepted on stdio and the other way round.
const MaxLineBytes = httpserver.MaxBodyBytes

// StdioTransport is an mcp.Transport over newline-delimited JSON-RPC on a
// byte stream (stdin and stdout for `webcodex mcp`). Unlike the SDK's own
// stdio transport, which ends the session at end of input and drops every
// answer still being computed, and which ends it as well on the first line
// that is not JSON or is too long:
//
//   - every request read before end of input is answered before the
//     connection closes: at end of input it stops reading, waits until each
//     request it handed to the server has been answered, and only then
//     reports the end (notifications need no answer, so nothing waits for
//     them);
//   - a line that is not JSON is answered with a JSON-RPC parse error
//     (-32700, id null) and the next line is read;
//   - a line that is JSON but not one JSON-RPC message (a batch, a
//     non-object, a malformed message, an id already in flight) is answered
//     with an invalid-request error (-32600) and the next line is read;
//   - a line longer than MaxLineBytes is answered with an invalid-request
//     error (with the request's id when it appears within the bound, else
//     null) and skipped to the next newline without being buffered whole;
//   - a request the server sent to the client that is unanswered at end of
//     input is answered on the client's behalf with a "client is closing"
//     error, so a handler waiting for it ends and its own answer is written.
//
// Writes are serialized: each message is written whole, as one line. Close
// does not close In or Out; a read of In still blocked at Close ends with
// the process.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
	// Logger receives a warning for every line refused (its size and the
	// reason, never its content). Nil discards.
	Logger *slog.Logger
}

// Connect starts reading In and returns the connection.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &stdioConn{
		out:      t.Out,
		log:      log,
		lines:    make(chan inputLine),
		closed:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
		pending:  map[jsonrpc.ID]struct{}{},
		outgoing: map[jsonrpc.ID]struct{}{},
	}
	go c.readLines(&lineReader{r: bufio.NewReaderSize(t.In, 64<<10), max: MaxLineBytes})
	return c, nil
}

// stdioConn is the mcp.Connection of a StdioTransport.
type stdioConn struct {
	out     io.Writer
	writeMu sync.Mutex // one message per write, whole
	log     *slog.Logger

	// lines carries what the reading goroutine made of each line; it is
	// closed after the last one, with the end of input as its last item.
	lines     chan inputLine
	closed    chan struct{}
	closeOnce sync.Once

	mu sync.Mutex
	// pending holds the ids of the requests handed to the server and not
	// yet answered; outgoing the ids of the server's requests to the client
	// not yet answered.
	pending  map[jsonrpc.ID]struct{}
	outgoing map[jsonrpc.ID]struct{}
	// wake is signalled whenever pending or outgoing change.
	wake chan struct{}
	// end is the end of input (io.EOF or the read error), once reached.
	end error
}

// inputLine is one line of input as the reading goroutine decoded it:
// either a message, or the error to answer it with, or the end of input.
type inputLine struct {
	msg    jsonrpc.Message
	refuse *lineError
	end    error
	// drop, when set, is why the line is ignored without an answer.
	drop string
	size int
}

// lineError is a line answered by the transport itself.
type lineError struct {
	id     jsonrpc.ID // zero when the id is unknown (answered as null)
	code   int64
	msg    string
	reason string // for the log
	size   int
	data   any
}

func (c *stdioConn) readLines(lr *lineReader) {
	defer close(c.lines)
	for {
		line, size, err := lr.next()
		var in inputLine
		switch {
		case err != nil:
			in.end = err
		case size > lr.max:
			in.refuse = &lineError{id: scanHead(line).id, code: jsonrpc.CodeInvalidRequest, size: size, reason: "too long",
				msg:  fmt.Sprintf("message too large: a stdio message is at most %d bytes; it was skipped", lr.max),
				data: map[string]any{"max_bytes": lr.max}}
		default:
			in = decodeLine(line)
			if in.drop != "" {
				c.log.Warn("stdio message ignored", "reason", in.drop, "bytes", in.size)
			}
			if in.msg == nil && in.refuse == nil {
				continue // a blank or ignored line
			}
		}
		select {
		case c.lines <- in:
		case <-c.closed:
			return
		}
		if in.end != nil {
			return
		}
	}
}

// decodeLine decodes one complete line as the SDK decodes a message,
// refusing what is not exactly one JSON-RPC message.
func decodeLine(line []byte) inputLine {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return inputLine{}
	}
	refuse := func(id jsonrpc.ID, code int64, reason, msg string) inputLine {
		return inputLine{refuse: &lineError{id: id, code: code, msg: msg, reason: reason, size: len(line)}}
	}
	switch {
	case !json.Valid(trimmed):
		return refuse(jsonrpc.ID{}, jsonrpc.CodeParseError, "not JSON", "parse error: the line is not valid JSON")
	case trimmed[0] == '[':
		return refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "batch", "JSON-RPC batches are not supported: send one message per line")
	case trimmed[0] != '{':
		return refuse(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "not an object", "invalid request: a message is a JSON object")
	}
	if req, ok := decodeRequest(trimmed); ok {
		return inputLine{msg: req}
	}
	msg, err := jsonrpc.DecodeMessage(trimmed)
	if err != nil {
		h := scanHead(trimmed)
		if h.response {
			// Answering a malformed answer could start an endless exchange.
			return inputLine{drop: "malformed response", size: len(line)}
		}
		return refuse(h.id, jsonrpc.CodeInvalidRequest, "not a JSON-RPC message", "invalid request: "+err.Error())
	}
	return inputLine{msg: msg}
}

// maxDepth is the nesting the SDK's message decoding accepts.
const maxDepth = 1000

// decodeRequest decodes the common shape of a request line, valid JSON
// with exactly the members jsonrpc ("2.0"), method and, optionally, id and
// params, as jsonrpc.DecodeMessage decodes it, from the members' bytes
// (jsonkeys). It reports false for every other line, which is left to
// DecodeMessage: the SDK's decoder allocates a 32 KiB buffer for every
// value it decodes, twice per message.
func decodeRequest(line []byte) (*jsonrpc.Request, bool) {
	if bytes.Count(line, []byte("{"))+bytes.Count(line, []byte("[")) > maxDepth {
		return nil, false
	}
	members, ok := jsonkeys.Members(line)
	if !ok {
		return nil, false
	}
	var (
		req             jsonrpc.Request
		version, method bool
		seen            [4]bool
	)
	for _, m := range members {
		slot := slices.Index([]string{"jsonrpc", "id", "method", "params"}, m.Key)
		if slot < 0 || seen[slot] {
			return nil, false
		}
		seen[slot] = true
		switch slot {
		case 0:
			version = string(m.Value) == `"2.0"`
		case 1:
			id, ok := plainID(m.Value)
			if !ok {
				return nil, false
			}
			req.ID = id
		case 2:
			name, ok := plainString(m.Value)
			if !ok {
				return nil, false
			}
			req.Method, method = name, true
		case 3:
			if m.Value[0] != '{' {
				return nil, false
			}
			req.Params = json.RawMessage(m.Value)
		}
	}
	if !version || !method {
		return nil, false
	}
	return &req, true
}

// plainString is the value of a JSON string with no escapes and valid
// UTF-8, which every decoder reads the same.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// plainID is a request id written as a plain string or as an integer of
// at most 15 digits (exact as the float64 the SDK decodes it to).
func plainID(v []byte) (jsonrpc.ID, bool) {
	if s, ok := plainString(v); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	digits := strings.TrimPrefix(string(v), "-")
	if len(digits) == 0 || len(digits) > 15 || strings.Trim(digits, "0123456789") != "" || (len(digits) > 1 && digits[0] == '0') {
		return jsonrpc.ID{}, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n))
	return id, err == nil
}

// head is what the top-level members of a JSON object say about it, read
// from the token stream so that a line cut off after its first members
// still yields them.
type head struct {
	// id is the value of the one "id" member; zero when there is none,
	// more than one, or one that is not an id.
	id jsonrpc.ID
	// response says the object has a "result" or "error" member and no
	// "method": it is a (malformed) answer, which is never answered back.
	response bool
}

func scanHead(line []byte) head {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return head{}
	}
	var (
		h                     head
		ids                   int
		method, result, fault bool
	)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var v any
		if key == "id" {
			err = dec.Decode(&v)
		} else {
			err = dec.Decode(&json.RawMessage{})
		}
		if err != nil {
			break
		}
		switch key {
		case "id":
			if ids++; ids == 1 {
				h.id, _ = jsonrpc.MakeID(v)
			} else {
				h.id = jsonrpc.ID{}
			}
		case "method":
			method = true
		case "result":
			result = true
		case "error":
			fault = true
		}
	}
	h.response = (result || fault) && !method
	return h
}

// Read returns the next message of the input. At end of input it returns
// the server's unanswered requests' synthetic answers, then waits until
// every request it returned has been answered, then reports the end.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if c.inputEnded() {
			return c.drain()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case in, ok := <-c.lines:
			switch {
			case !ok:
				return nil, io.EOF // closed while reading
			case in.end != nil:
				c.mu.Lock()
				c.end = in.end
				unanswered := len(c.pending)
				c.mu.Unlock()
				c.log.Debug(logInputEnded, "unanswered", unanswered, "err", in.end)
			case in.refuse != nil:
				c.mu.Lock()
				if _, inFlight := c.pending[in.refuse.id]; inFlight {
					in.refuse.id = jsonrpc.ID{} // not to be taken for that request's answer
				}
				c.mu.Unlock()
				c.answer(in.refuse)
			case c.accept(in.msg):
				return in.msg, nil
			default:
				req := in.msg.(*jsonrpc.Request)
				c.answer(&lineError{code: jsonrpc.CodeInvalidRequest, reason: "id in flight",
					msg: fmt.Sprintf("invalid request: id %v is already used by a request in flight", req.ID.Raw())})
			}
		}
	}
}

func (c *stdioConn) inputEnded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end != nil
}

// accept records a message about to be handed to the server: a request's
// id becomes pending, and a response answers one of the server's requests.
// It reports false for a request reusing an id in flight, which must be
// refused: its answer could not be told from the first one's.
func (c *stdioConn) accept(msg jsonrpc.Message) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() {
			return true
		}
		if _, dup := c.pending[m.ID]; dup {
			return false
		}
		c.pending[m.ID] = struct{}{}
	case *jsonrpc.Response:
		delete(c.outgoing, m.ID)
	}
	return true
}

// logInputEnded is logged (at debug) when the end of input is reached.
const logInputEnded = "stdio input ended; answering what was read"

// errClientClosing answers, on the client's behalf, a request of the server
// still unanswered at end of input. Its code is the SDK's "client is
// closing", which the SDK reports to the caller as mcp.ErrConnectionClosed.
var errClientClosing = &jsonrpc.Error{Code: -32003, Message: "end of input: the client can no longer answer"}

// drain runs after the end of input: it answers the server's outstanding
// requests to the client, waits until no request of the client is
// unanswered, and then reports the end of input.
func (c *stdioConn) drain() (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		for id := range c.outgoing {
			delete(c.outgoing, id)
			c.mu.Unlock()
			return &jsonrpc.Response{ID: id, Error: errClientClosing}, nil
		}
		idle, end := len(c.pending) == 0, c.end
		c.mu.Unlock()
		if idle {
			return nil, end
		}
		select {
		case <-c.wake:
		case <-c.closed:
			return nil, end
		}
	}
}

// Write writes msg as one line. An answer to a pending request clears it,
// whether or not the write succeeded (a failed write breaks the session).
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		c.settle(msg, false)
		return err
	}
	line, err := encodeLine(msg)
	if err != nil {
		c.settle(msg, false)
		return fmt.Errorf("encoding message: %w", err)
	}
	c.settle(msg, true)
	err = c.write(line)
	c.settle(msg, false)
	return err
}

// encodeLine returns msg as one line: the bytes of jsonrpc.EncodeMessage
// and a newline. A successful response is framed directly around its
// result, which the SDK has already encoded compactly (EncodeMessage would
// only scan and copy it again, a second pass over a whole file's content).
func encodeLine(msg jsonrpc.Message) ([]byte, error) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error != nil || len(r.Result) == 0 || !r.ID.IsValid() {
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, err
		}
		return append(data, '\n'), nil
	}
	line := make([]byte, 0, len(r.Result)+64)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	switch id := r.ID.Raw().(type) {
	case int64:
		line = strconv.AppendInt(line, id, 10)
	case string:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as EncodeMessage
		if err := enc.Encode(id); err != nil {
			return nil, err
		}
		line = append(line, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	default:
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, err
		}
		return append(data, '\n'), nil
	}
	line = append(line, `,"result":`...)
	line = append(line, r.Result...)
	return append(line, '}', '\n'), nil
}

// settle updates the bookkeeping for msg: before its write (before=true) a
// request of the server becomes outgoing, so its answer cannot be missed;
// after it, an answer clears its pending request.
func (c *stdioConn) settle(msg jsonrpc.Message, before bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if before && m.IsCall() {
			c.outgoing[m.ID] = struct{}{}
		}
	case *jsonrpc.Response:
		if before {
			return
		}
		delete(c.pending, m.ID)
	default:
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *stdioConn) writeLine(data []byte) error {
	line := make([]byte, 0, len(data)+1)
	return c.write(append(append(line, data...), '\n'))
}

// write writes one whole line (ending in a newline).
func (c *stdioConn) write(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(line)
	return err
}

// answer writes the transport's own error answer to a line and logs it.
func (c *stdioConn) answer(e *lineError) {
	c.log.Warn("stdio message refused", "reason", e.reason, "bytes", e.size, "code", e.code)
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", e.id.Raw(), wireError{e.code, e.msg, e.data}})
	if err == nil {
		err = c.writeLine(b)
	}
	if err != nil {
		c.log.Warn("stdio error answer not written", "err", err)
	}
}

// Close stops the connection; a Read waiting for input or for answers
// returns.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: a stdio connection has no protocol session id.
func (c *stdioConn) SessionID() string { return "" }

// lineReader reads lines of at most max bytes (without the line end).
type lineReader struct {
	r   *bufio.Reader
	max int
}

// next returns the next line without its line end ("\n" or "\r\n") and
// its full size. A line longer than max is returned cut to its first max
// bytes, the rest read and dropped, so memory stays bounded by max plus
// the reader's buffer. The last line may lack a line end. At the end of
// input it returns io.EOF, or the read error.
func (lr *lineReader) next() (line []byte, size int, err error) {
	var tail []byte // the last two bytes read, to find the line end
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += len(chunk)
		if room := lr.max + 2 - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		tail = append(tail, chunk[max(0, len(chunk)-2):]...)
		tail = tail[max(0, len(tail)-2):]
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
		case errors.Is(err, io.EOF) && size > 0:
			// The last line, without a line end.
		default:
			return nil, 0, err
		}
		if n := len(tail); n > 0 && tail[n-1] == '\n' {
			size--
			if n == 2 && tail[0] == '\r' {
				size--
			}
		}
		return line[:min(size, lr.max)], size, nil
	}
}
