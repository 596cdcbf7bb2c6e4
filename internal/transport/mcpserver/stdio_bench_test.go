package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkStdioSmallCall measures the smallest calls over stdio the way a
// client that starts its server as a child process makes them: one
// JSON-RPC request line written to the server's input pipe, one answer
// line read from its output pipe, after an initialize handshake. The
// subject is the complete WebCodex MCP server (the app, the kernel with
// its evidence journal, the StdioTransport) on real os.Pipe pipes; the
// base, alternated call by call (benchpair), is the floor: a hand-written
// loop on the same kind of pipes that reads a request line, decodes the
// arguments, does the same file I/O (read a 4 KiB file; or stage it in a
// new file, fsync it, rename it over the old one and fsync the directory,
// as write_project_file does) and writes a tools/call answer carrying the
// content as text and as structuredContent.
//
//	go test ./internal/transport/mcpserver -run '^$' -bench StdioSmallCall -count 5
func BenchmarkStdioSmallCall(b *testing.B) {
	for _, c := range []struct {
		name     string
		recorded bool
		write    bool
	}{
		{"read_unrecorded", false, false},
		{"read_recorded", true, false},
		{"write_unrecorded", false, true},
		{"write_recorded", true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			floor := startFloor(b)
			wc := startStdioApp(b)
			if c.recorded {
				wc.recorder = wc.openSession(b)
			}
			var base, subject func()
			if c.write {
				base = floor.writer(b)
				subject = wc.writer(b)
			} else {
				base = floor.reader(b)
				subject = wc.reader(b)
			}
			benchpair.Run(b, "floor", base, "webcodex", subject)
		})
	}
}

// smallContent returns a 4 KiB source-like file; variant makes two
// contents of the same size differ.
func smallContent(variant byte) []byte {
	line := "\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n"
	c := []byte(strings.Repeat(line, 64))
	c[1] = 'a' + variant
	return c
}

const smallFile = "small.go"

// lineClient is a raw JSON-RPC client over newline-delimited pipes.
type lineClient struct {
	w      io.Writer
	r      *bufio.Reader
	id     int
	prefix []byte // scratch for the request line
}

// call sends one request with params (a JSON object) and returns its
// answer line; it fails the benchmark on a JSON-RPC or tool error.
func (c *lineClient) call(b *testing.B, method string, params []byte) []byte {
	c.id++
	line := fmt.Appendf(c.prefix[:0], `{"jsonrpc":"2.0","id":%d,"method":%q,"params":`, c.id, method)
	line = append(append(line, params...), "}\n"...)
	c.prefix = line
	if _, err := c.w.Write(line); err != nil {
		b.Fatal(err)
	}
	ans, err := c.r.ReadBytes('\n')
	if err != nil {
		b.Fatalf("%s: %v", method, err)
	}
	if bytes.Contains(ans, []byte(`"isError":true`)) || !bytes.Contains(ans, []byte(`"result":`)) {
		b.Fatalf("%s: %.400s", method, ans)
	}
	return ans
}

func (c *lineClient) notify(b *testing.B, method string) {
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","method":%q}`+"\n", method); err != nil {
		b.Fatal(err)
	}
}

// handshake is the initialize exchange of a 2025-11-25 stdio client.
func (c *lineClient) handshake(b *testing.B) {
	c.call(b, "initialize", []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"webcodex-bench","version":"1"}}`))
	c.notify(b, "notifications/initialized")
}

// pipes returns a client connected to a server reading the returned
// reader and writing the returned writer; the pipes close at cleanup.
func pipes(b *testing.B) (*lineClient, io.Reader, io.Writer) {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return &lineClient{w: inW, r: bufio.NewReaderSize(outR, 64<<10)}, inR, outW
}

// stdioApp is the WebCodex server on pipes with one registered project.
type stdioApp struct {
	*lineClient
	dir      string
	recorder string
}

func startStdioApp(b *testing.B) *stdioApp {
	ctx, cancel := context.WithCancel(context.Background())
	proj := b.TempDir()
	if err := os.WriteFile(filepath.Join(proj, smallFile), smallContent(0), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := app.LoadConfig(b.TempDir(), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
		b.Fatal(err)
	}
	c, in, out := pipes(b)
	done := make(chan error, 1)
	go func() { done <- a.MCP().ServeStream(ctx, in, out) }()
	b.Cleanup(func() {
		cancel()
		<-done
		a.Kernel.Drain(context.Background())
		a.Close()
	})
	c.handshake(b)
	return &stdioApp{lineClient: c, dir: proj}
}

func (s *stdioApp) openSession(b *testing.B) string {
	ans := s.call(b, "tools/call", []byte(`{"name":"work_on_project","arguments":{"project":"`+benchProject+`","instruction":"benchmark small calls"}}`))
	var r struct {
		Result struct {
			StructuredContent struct {
				Output struct {
					SessionID string `json:"session_id"`
				} `json:"output"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ans, &r); err != nil || r.Result.StructuredContent.Output.SessionID == "" {
		b.Fatalf("work_on_project: no session_id in %.400s", ans)
	}
	return r.Result.StructuredContent.Output.SessionID
}

// args renders a tools/call of tool with the given arguments members
// (a JSON object's inside) plus the project and, when recorded, the
// recording session.
func (s *stdioApp) args(tool, members string) []byte {
	extra := ""
	if s.recorder != "" {
		extra = `,"recording_session_id":"` + s.recorder + `"`
	}
	return []byte(`{"name":"` + tool + `","arguments":{"project":"` + benchProject + `",` + members + extra + `}}`)
}

func (s *stdioApp) reader(b *testing.B) func() {
	params := s.args("read_files", `"files":[{"path":"`+smallFile+`"}]`)
	sum := sha256.Sum256(smallContent(0))
	if ans := s.call(b, "tools/call", params); !bytes.Contains(ans, []byte(hex.EncodeToString(sum[:]))) {
		b.Fatalf("read_files: answer lacks the file's sha256: %.400s", ans)
	}
	return func() { s.call(b, "tools/call", params) }
}

// writer returns a call that overwrites the file, alternating between two
// contents of the same size, fenced by the current content's SHA-256.
func (s *stdioApp) writer(b *testing.B) func() {
	var params [2][]byte
	for v := range params {
		cur := sha256.Sum256(smallContent(byte(v)))
		content, _ := json.Marshal(string(smallContent(byte(1 - v))))
		params[v] = s.args("write_project_file", `"path":"`+smallFile+`","content":`+string(content)+`,"expected_sha256":"`+hex.EncodeToString(cur[:])+`"`)
	}
	v := 0
	call := func() {
		s.call(b, "tools/call", params[v])
		v = 1 - v
	}
	call()
	if got, err := os.ReadFile(filepath.Join(s.dir, smallFile)); err != nil || !bytes.Equal(got, smallContent(1)) {
		b.Fatalf("write_project_file did not write the file: %v", err)
	}
	return call
}

// floorServer is the hand-written floor: one goroutine answering
// tools/call lines for one directory.
type floorServer struct {
	*lineClient
	dir string
}

func startFloor(b *testing.B) *floorServer {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, smallFile), smallContent(0), 0o644); err != nil {
		b.Fatal(err)
	}
	c, in, out := pipes(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		serveFloor(dir, in, out)
		out.(io.Closer).Close()
	}()
	b.Cleanup(func() {
		c.w.(io.Closer).Close()
		<-done
	})
	c.handshake(b)
	return &floorServer{lineClient: c, dir: dir}
}

// floorRequest is what the floor decodes of a request line.
type floorRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Arguments struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"arguments"`
	} `json:"params"`
}

type floorText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type floorResult struct {
	Content           []floorText `json:"content"`
	StructuredContent any         `json:"structuredContent,omitempty"`
	ProtocolVersion   string      `json:"protocolVersion,omitempty"`
}

// serveFloor answers each request line until in ends: initialize with a
// version, a read_file call with the file's content, a write_file call by
// writing the content durably; notifications get no answer.
func serveFloor(dir string, in io.Reader, out io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		var req floorRequest
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue
		}
		var res floorResult
		switch {
		case req.Method == "initialize":
			res.ProtocolVersion = "2025-11-25"
		case req.Params.Arguments.Content != "":
			if err := durableWrite(dir, req.Params.Arguments.Path, []byte(req.Params.Arguments.Content)); err != nil {
				res.Content = []floorText{{"text", err.Error()}}
				break
			}
			msg := fmt.Sprintf("wrote %d bytes", len(req.Params.Arguments.Content))
			res.Content = []floorText{{"text", msg}}
			res.StructuredContent = map[string]any{"path": req.Params.Arguments.Path, "bytes": len(req.Params.Arguments.Content)}
		default:
			data, err := os.ReadFile(filepath.Join(dir, filepath.Clean("/"+req.Params.Arguments.Path)))
			if err != nil {
				res.Content = []floorText{{"text", err.Error()}}
				break
			}
			res.Content = []floorText{{"text", string(data)}}
			res.StructuredContent = map[string]string{"content": string(data)}
		}
		ans, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  floorResult     `json:"result"`
		}{"2.0", req.ID, res})
		if err != nil {
			return
		}
		if _, err := out.Write(append(ans, '\n')); err != nil {
			return
		}
	}
}

// durableWrite replaces dir/name with content the way write_project_file
// does: a new staged file, written and fsynced, renamed over the old one,
// then the directory fsynced.
func durableWrite(dir, name string, content []byte) error {
	path := filepath.Join(dir, filepath.Clean("/"+name))
	tmp := filepath.Join(filepath.Dir(path), ".floor-"+rand.Text()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *floorServer) reader(b *testing.B) func() {
	params := []byte(`{"name":"read_file","arguments":{"path":"` + smallFile + `"}}`)
	want, _ := json.Marshal(string(smallContent(0)))
	if ans := s.call(b, "tools/call", params); !bytes.Contains(ans, want) {
		b.Fatalf("floor read: %.400s", ans)
	}
	return func() { s.call(b, "tools/call", params) }
}

func (s *floorServer) writer(b *testing.B) func() {
	var params [2][]byte
	for v := range params {
		content, _ := json.Marshal(string(smallContent(byte(1 - v))))
		params[v] = []byte(`{"name":"write_file","arguments":{"path":"` + smallFile + `","content":` + string(content) + `}}`)
	}
	v := 0
	call := func() {
		s.call(b, "tools/call", params[v])
		v = 1 - v
	}
	call()
	if got, err := os.ReadFile(filepath.Join(s.dir, smallFile)); err != nil || !bytes.Equal(got, smallContent(1)) {
		b.Fatalf("floor write did not write the file: %v", err)
	}
	return call
}
