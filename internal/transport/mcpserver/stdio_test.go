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
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/httpserver"
)

// stdioPeer is a bare go-sdk server running on a StdioTransport over pipes:
// the test writes lines to in and reads the server's lines from out.
type stdioPeer struct {
	in   *os.File
	out  *bufio.Reader
	done chan error // Run's result
}

func startStdio(t *testing.T, srv *mcp.Server, log *slog.Logger) *stdioPeer {
	t.Helper()
	// OS pipes, as for a child process: the kernel buffers both ways.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &stdioPeer{in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		err := srv.Run(context.Background(), &StdioTransport{In: inR, Out: outW, Logger: log})
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() { inW.Close(); inR.Close(); outR.Close() })
	return p
}

func (p *stdioPeer) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			t.Fatalf("write %.80q: %v", l, err)
		}
	}
}

// answer is one line the server wrote.
type answer struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
	Method string `json:"method"`
	raw    string
}

func (p *stdioPeer) next(t *testing.T) answer {
	t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the server's output: %v (got %q)", err, line)
	}
	var a answer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		t.Fatalf("server wrote a line that is not JSON: %q", line)
	}
	a.raw = line
	return a
}

// end closes the input and returns every remaining line and Run's result.
func (p *stdioPeer) end(t *testing.T) ([]answer, error) {
	t.Helper()
	p.in.Close()
	var rest []answer
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			if line != "" {
				t.Fatalf("unterminated output line %q", line)
			}
			return rest, <-p.done
		}
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", line)
		}
		a.raw = line
		rest = append(rest, a)
	}
}

func newBareServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
}

const (
	legacyInit  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func call(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

func ping(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id) }

// idIs compares a decoded JSON id with an int id.
func idIs(got any, want int) bool { f, ok := got.(float64); return ok && f == float64(want) }

// signalHandler is a slog handler that closes ended when the transport
// logs that input ended.
type signalHandler struct {
	slog.Handler
	once  *sync.Once
	ended chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == logInputEnded {
		h.once.Do(func() { close(h.ended) })
	}
	return nil
}

// TestStdioAnswersRequestsRunningAtEndOfInput: a tool call still running
// when the transport has reached end of input is answered, and only then
// does the session end (cleanly). The SDK's own stdio transport cancels it
// and drops its answer.
func TestStdioAnswersRequestsRunningAtEndOfInput(t *testing.T) {
	ended := make(chan struct{})
	log := slog.New(signalHandler{slog.DiscardHandler, &sync.Once{}, ended})
	srv := newBareServer()
	var cancelled atomic.Bool
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ended // the transport has seen end of input
		cancelled.Store(ctx.Err() != nil)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "finished after EOF"}}}, nil, nil
	})
	p := startStdio(t, srv, log)
	p.send(t, legacyInit, initialized)
	if a := p.next(t); a.ID != "init" || a.Error != nil {
		t.Fatalf("initialize: %s", a.raw)
	}
	p.send(t, call(2, "slow"), call(3, "slow"))
	rest, err := p.end(t)
	if err != nil {
		t.Fatalf("Run after end of input: %v", err)
	}
	got := map[float64]string{}
	for _, a := range rest {
		if a.Error != nil || !strings.Contains(string(a.Result), "finished after EOF") {
			t.Fatalf("answer is not the tool's result: %s", a.raw)
		}
		got[a.ID.(float64)] = a.raw
	}
	if len(rest) != 2 || got[2] == "" || got[3] == "" {
		t.Fatalf("want answers to 2 and 3, got %d lines: %v", len(rest), rest)
	}
	if cancelled.Load() {
		t.Fatal("end of input cancelled a running request")
	}
}

// TestStdioRefusesBadLinesAndContinues: every bad line gets its JSON-RPC
// error and the request after it is still answered.
func TestStdioRefusesBadLinesAndContinues(t *testing.T) {
	cases := []struct {
		name, line string
		code       int64
		id         any // nil: answered with id null
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, jsonrpc.CodeParseError, nil},
		{"garbage", `hello`, jsonrpc.CodeParseError, nil},
		{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, jsonrpc.CodeParseError, nil},
		{"batch", `[` + ping(5) + `]`, jsonrpc.CodeInvalidRequest, nil},
		{"not an object", `42`, jsonrpc.CodeInvalidRequest, nil},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, jsonrpc.CodeInvalidRequest, float64(7)},
		{"bad id type", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
		{"no method, no id", `{"jsonrpc":"2.0","params":{}}`, jsonrpc.CodeInvalidRequest, nil},
		{"two ids", `{"jsonrpc":"1.0","id":7,"id":8,"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startStdio(t, newBareServer(), nil)
			p.send(t, tc.line, ping(100))
			bad := p.next(t)
			if bad.Error == nil || bad.Error.Code != tc.code || bad.ID != tc.id || !strings.Contains(bad.raw, `"id":`) {
				t.Fatalf("bad line answered %s, want code %d id %v", bad.raw, tc.code, tc.id)
			}
			if a := p.next(t); !idIs(a.ID, 100) || a.Error != nil {
				t.Fatalf("the request after the bad line: %s", a.raw)
			}
			rest, err := p.end(t)
			if err != nil || len(rest) != 0 {
				t.Fatalf("end: %v, extra lines %v", err, rest)
			}
		})
	}
}

// TestStdioIgnoresMalformedResponses: a malformed answer (result or error,
// no method) is never answered back, so two peers cannot trade errors
// forever; blank lines are skipped.
func TestStdioIgnoresMalformedResponses(t *testing.T) {
	p := startStdio(t, newBareServer(), nil)
	p.send(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, "", "  \r", ping(1))
	if a := p.next(t); !idIs(a.ID, 1) || a.Error != nil {
		t.Fatalf("want only the ping's answer, got %s", a.raw)
	}
	if rest, err := p.end(t); err != nil || len(rest) != 0 {
		t.Fatalf("end: %v, extra lines %v", err, rest)
	}
}

// TestStdioOversizedLine: a line over MaxLineBytes is answered with an
// invalid-request error carrying its id and the bound, and the next
// request is answered; a line of exactly MaxLineBytes is served.
func TestStdioOversizedLine(t *testing.T) {
	if MaxLineBytes != httpserver.MaxBodyBytes {
		t.Fatalf("MaxLineBytes = %d, want the HTTP body bound %d", MaxLineBytes, httpserver.MaxBodyBytes)
	}
	// padded returns a ping of id whose line is n bytes long.
	padded := func(id, n int) string {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_pad":"`, id)
		return head + strings.Repeat("x", n-len(head)-3) + `"}}`
	}
	p := startStdio(t, newBareServer(), nil)
	p.send(t, padded(1, MaxLineBytes+1), ping(2), padded(3, MaxLineBytes), padded(4, 3*MaxLineBytes))
	// The transport's own answers and the server's may come in any order.
	byID := map[float64]answer{}
	for range 4 {
		a := p.next(t)
		id, _ := a.ID.(float64)
		byID[id] = a
	}
	if a := byID[1]; a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidRequest || a.Error.Data["max_bytes"] != float64(MaxLineBytes) {
		t.Fatalf("oversized line answered %.300s", a.raw)
	}
	if a := byID[2]; a.raw == "" || a.Error != nil {
		t.Fatalf("request after the oversized line: %.300s", a.raw)
	}
	if a := byID[3]; a.raw == "" || a.Error != nil {
		t.Fatalf("line of exactly MaxLineBytes: %.300s", a.raw)
	}
	if a := byID[4]; a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("line of 3×MaxLineBytes: %.300s", a.raw)
	}
	if rest, err := p.end(t); err != nil || len(rest) != 0 {
		t.Fatalf("end: %v, extra lines %v", err, rest)
	}
}

// TestLineReader checks the bound and line ends on a small bound.
func TestLineReader(t *testing.T) {
	in := "abc\r\n" + "12345678\n" + "123456789\n" + strings.Repeat("z", 100) + "\r\n" + "\n" + "last"
	lr := &lineReader{r: bufio.NewReaderSize(strings.NewReader(in), 16), max: 8}
	want := []struct {
		line string
		size int
	}{{"abc", 3}, {"12345678", 8}, {"12345678", 9}, {"zzzzzzzz", 100}, {"", 0}, {"last", 4}}
	for i, w := range want {
		line, size, err := lr.next()
		if err != nil || string(line) != w.line || size != w.size {
			t.Fatalf("line %d: %q %d %v, want %q %d", i, line, size, err, w.line, w.size)
		}
	}
	if _, _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
	// A read error is reported as the end, not as a line.
	broken := &lineReader{r: bufio.NewReader(io.MultiReader(strings.NewReader("part"), errReader{})), max: 8}
	if _, _, err := broken.next(); !errors.Is(err, errBroken) {
		t.Fatalf("read error: %v", err)
	}
}

var errBroken = errors.New("broken input")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// TestStdioDuplicateIDInFlight: a request (or a malformed line) reusing
// the id of one still running is refused with id null; the first is
// answered once.
func TestStdioDuplicateIDInFlight(t *testing.T) {
	release := make(chan struct{})
	srv := newBareServer()
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	p := startStdio(t, srv, nil)
	p.send(t, legacyInit, initialized)
	p.next(t)
	p.send(t, call(9, "wait"), call(9, "wait"))
	a := p.next(t) // the first call is blocked, so this is the refusal
	if a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidRequest || a.ID != nil {
		t.Fatalf("duplicate id answered %s", a.raw)
	}
	// A malformed line naming the id in flight is refused with id null too.
	p.send(t, `{"jsonrpc":"1.0","id":9,"method":"ping"}`)
	if a := p.next(t); a.Error == nil || a.Error.Code != jsonrpc.CodeInvalidRequest || a.ID != nil || !strings.Contains(a.raw, "version") {
		t.Fatalf("malformed line with the id in flight answered %s", a.raw)
	}
	close(release)
	rest, err := p.end(t)
	if err != nil || len(rest) != 1 || !idIs(rest[0].ID, 9) || !strings.Contains(string(rest[0].Result), "done") {
		t.Fatalf("end: %v, lines %v", err, rest)
	}
}

// TestStdioServerRequestAtEndOfInput: a tool waiting for the client's
// answer to a server request when input ends gets "connection closed"
// instead of waiting forever, and its own answer is written.
func TestStdioServerRequestAtEndOfInput(t *testing.T) {
	ended := make(chan struct{})
	log := slog.New(signalHandler{slog.DiscardHandler, &sync.Once{}, ended})
	srv := newBareServer()
	asked := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(asked)
		_, err := req.Session.ListRoots(ctx, nil)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("roots: ", errors.Is(err, mcp.ErrConnectionClosed))}}}, nil, nil
	})
	p := startStdio(t, srv, log)
	p.send(t, legacyInit, initialized)
	p.next(t)
	p.send(t, call(4, "roots"))
	if a := p.next(t); a.Method != "roots/list" {
		t.Fatalf("want the server's roots/list request, got %s", a.raw)
	}
	<-asked
	rest, err := p.end(t)
	if err != nil || len(rest) != 1 || !idIs(rest[0].ID, 4) || !strings.Contains(string(rest[0].Result), "roots: true") {
		t.Fatalf("end: %v, lines %v", err, rest)
	}
}

// TestStdioWritesOneMessagePerLine: concurrent writes never interleave;
// each reaches the writer as one whole line.
func TestStdioWritesOneMessagePerLine(t *testing.T) {
	w := &lineRecorder{}
	conn, err := (&StdioTransport{In: strings.NewReader(""), Out: w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			id, _ := jsonrpc.MakeID(float64(i))
			msg := &jsonrpc.Response{ID: id, Result: json.RawMessage(`"` + strings.Repeat("r", 10000) + `"`)}
			if err := conn.Write(context.Background(), msg); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if w.overlap.Load() {
		t.Fatal("two writes overlapped")
	}
	if len(w.writes) != 64 {
		t.Fatalf("%d writes, want 64", len(w.writes))
	}
	for _, b := range w.writes {
		if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 || !json.Valid(b) {
			t.Fatalf("a write is not one JSON line: %.100q", b)
		}
	}
}

type lineRecorder struct {
	busy    atomic.Bool
	overlap atomic.Bool
	mu      sync.Mutex
	writes  [][]byte
}

func (r *lineRecorder) Write(b []byte) (int, error) {
	if !r.busy.CompareAndSwap(false, true) {
		r.overlap.Store(true)
	}
	defer r.busy.Store(false)
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(b))
	r.mu.Unlock()
	return len(b), nil
}

// TestStdioReadWaitsForAnswers drives the connection as the SDK does: the
// end of input is reported only after the request read has been answered.
func TestStdioReadWaitsForAnswers(t *testing.T) {
	conn, err := (&StdioTransport{In: strings.NewReader(ping(1) + "\n"), Out: io.Discard}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Bool
	ended := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		ended <- err
		if !answered.Load() {
			t.Error("end of input reported before the request was answered")
		}
	}()
	answered.Store(true)
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the answer: %v, want EOF", err)
	}
}
