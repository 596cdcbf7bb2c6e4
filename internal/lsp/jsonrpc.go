// Package lsp navigates a project's code through real language servers:
// servers found on PATH by language, started lazily per project and
// language under the server's sandbox (read-only) and containment, kept
// warm, stopped after IdleTimeout and restarted on the next call after a
// crash. It speaks LSP (JSON-RPC 2.0 with Content-Length framing) over
// the server's stdio and answers read-only navigation requests with
// project-relative, bounded results.
package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// MaxMessageBytes bounds one message read from a language server; a
// larger one ends the connection (the server is then restarted).
const MaxMessageBytes = 32 << 20

// MaxHeaderBytes bounds one header line of a message.
const MaxHeaderBytes = 1 << 10

// errClosed is the error of a call on a connection that ended.
var errClosed = errors.New("lsp: connection closed")

// writeMessage writes body framed with its Content-Length header.
func writeMessage(w io.Writer, body []byte) error {
	if _, err := fmt.Fprintf(w, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// readMessage reads one framed message: headers up to an empty line (a
// Content-Length is required, other headers are ignored), then exactly
// that many bytes, at most MaxMessageBytes.
func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull || len(line) > MaxHeaderBytes {
			return nil, errors.New("lsp: header line too long")
		}
		if err != nil {
			return nil, err
		}
		h := strings.TrimRight(string(line), "\r\n")
		if h == "" {
			break
		}
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, fmt.Errorf("lsp: malformed header %q", h)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("lsp: bad Content-Length %q", value)
			}
			length = n
		}
	}
	if length < 0 {
		return nil, errors.New("lsp: message without Content-Length")
	}
	if length > MaxMessageBytes {
		return nil, fmt.Errorf("lsp: message of %d bytes exceeds %d", length, MaxMessageBytes)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// message is any JSON-RPC 2.0 message.
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *rpcError        `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("language server error %d: %s", e.Code, e.Message)
}

// methodNotFound is JSON-RPC's code for a method the receiver lacks.
const methodNotFound = -32601

// conn is a JSON-RPC client over a server's stdio. It answers the
// server's own requests (configuration, progress, registration) with
// empty results and keeps the latest diagnostics per document.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[int64]chan message
	err     error // set once the read loop ended
	diags   map[string]published
	changed chan struct{} // closed and replaced at every publication
	done    chan struct{}
}

// published is the latest diagnostics publication for one document.
type published struct {
	version *int // the document version they are for, when the server says
	list    []diagnostic
}

func newConn(w io.Writer, r io.Reader) *conn {
	c := &conn{w: w, pending: map[int64]chan message{}, diags: map[string]published{}, changed: make(chan struct{}), done: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(r, MaxHeaderBytes))
	return c
}

func (c *conn) send(m message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeMessage(c.w, b)
}

// call sends a request and decodes its result into result (unless nil).
// It returns ctx's error when ctx ends first; the request is then
// abandoned (its late answer is dropped).
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.next++
	id := c.next
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	raw := json.RawMessage(strconv.FormatInt(id, 10))
	if err := c.send(message{ID: &raw, Method: method, Params: p}); err != nil {
		return fmt.Errorf("lsp: sending %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if result == nil || len(m.Result) == 0 {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	case <-c.done:
		return c.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.send(message{Method: method, Params: p})
}

func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) readLoop(r *bufio.Reader) {
	var err error
	for {
		var body []byte
		if body, err = readMessage(r); err != nil {
			break
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			continue // not JSON-RPC: ignored
		}
		switch {
		case m.Method != "" && m.ID != nil:
			c.answer(m)
		case m.Method != "":
			c.notification(m)
		case m.ID != nil:
			id, perr := strconv.ParseInt(string(*m.ID), 10, 64)
			if perr != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %v", errClosed, err)
	c.mu.Unlock()
	close(c.done)
}

// answer replies to a request from the server: workspace/configuration
// gets one null per item, the known client-side requests null, any other
// method not found.
func (c *conn) answer(m message) {
	reply := message{ID: m.ID, Result: json.RawMessage("null")}
	switch m.Method {
	case "workspace/configuration":
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		json.Unmarshal(m.Params, &p)
		reply.Result = json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("null,", len(p.Items)), ",") + "]")
	case "window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability",
		"window/showMessageRequest", "workspace/diagnostic/refresh", "workspace/semanticTokens/refresh",
		"workspace/inlayHint/refresh", "workspace/codeLens/refresh":
	default:
		reply.Result = nil
		reply.Error = &rpcError{Code: methodNotFound, Message: "not supported by this client"}
	}
	c.send(reply)
}

// notification records what the client keeps of a server notification:
// the diagnostics of each document.
func (c *conn) notification(m message) {
	if m.Method != "textDocument/publishDiagnostics" {
		return
	}
	var p struct {
		URI         string       `json:"uri"`
		Version     *int         `json:"version"`
		Diagnostics []diagnostic `json:"diagnostics"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	c.mu.Lock()
	if _, seen := c.diags[p.URI]; seen || len(c.diags) < MaxOpenDocuments {
		c.diags[p.URI] = published{version: p.Version, list: p.Diagnostics}
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// forget drops the diagnostics kept for uri.
func (c *conn) forget(uri string) {
	c.mu.Lock()
	delete(c.diags, uri)
	c.mu.Unlock()
}

// diagnostics waits until the server published diagnostics for uri at
// version (or a later one) and returns them; a server that does not say
// the version is taken at its first publication for uri. It returns
// ctx's error when ctx ends first.
func (c *conn) diagnostics(ctx context.Context, uri string, version int) ([]diagnostic, error) {
	for {
		c.mu.Lock()
		p, ok := c.diags[uri]
		changed := c.changed
		c.mu.Unlock()
		if ok && (p.version == nil || *p.version >= version) {
			return p.list, nil
		}
		select {
		case <-changed:
		case <-c.done:
			return nil, c.closedErr()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
