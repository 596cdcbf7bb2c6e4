package auditmw

import "net/http"

// holdWriter passes a response through as the handler writes it, except
// its tail: the last byte that is not ASCII white space, and everything
// after it, stay here until release. A client therefore cannot hold a
// complete response before the middleware releases it, whatever the
// framing (Content-Length, chunked, an event stream flushed message by
// message) and however it reads the body (to EOF, or a JSON decoder that
// stops at the closing brace, or an SSE parser that waits for the blank
// line); the middleware releases it only after the request's audit event
// is committed, so an audit read made after a response was received sees
// its event. The cost is that a message the handler flushes is complete
// for the client only when the next one is written (or the response
// ends): an MCP progress notification arrives with the message after it.
type holdWriter struct {
	http.ResponseWriter
	tail []byte
	sent bool // some body byte has been passed on
}

// isSpace is ASCII white space, the only bytes allowed after the last
// significant byte of JSON, an SSE event or plain text.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (h *holdWriter) Write(p []byte) (int, error) {
	i := len(p) - 1
	for i >= 0 && isSpace(p[i]) {
		i--
	}
	if i < 0 { // white space only: it belongs to the tail
		h.tail = append(h.tail, p...)
		return len(p), nil
	}
	if err := h.pass(h.tail); err != nil {
		return 0, err
	}
	h.tail = h.tail[:0]
	if err := h.pass(p[:i]); err != nil {
		return 0, err
	}
	h.tail = append(h.tail, p[i:]...)
	return len(p), nil
}

// pass writes b through.
func (h *holdWriter) pass(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	h.sent = true
	_, err := h.ResponseWriter.Write(b)
	return err
}

// Flush pushes what was passed on to the client. Before any body byte was
// passed on it does nothing: flushing the header alone could complete a
// response without a body.
func (h *holdWriter) Flush() {
	if h.sent {
		http.NewResponseController(h.ResponseWriter).Flush()
	}
}

// release writes the held tail; the server completes the response when
// the middleware returns.
func (h *holdWriter) release() {
	if err := h.pass(h.tail); err == nil {
		h.tail = nil
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (h *holdWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }
