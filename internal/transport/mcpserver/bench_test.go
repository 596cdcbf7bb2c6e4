package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
)

// The benchmarks drive /mcp the way an agent does: a go-sdk client session
// (Streamable HTTP, the negotiated 2026-07-28 era) against a loopback
// httptest.Server, one tools/call or tools/list per iteration. The
// webcodex_* cases serve the complete app handler (Host and Origin checks,
// bearer authentication against the token store, the MCP transport, the
// kernel and the read_files tool; with recording, the ledger events of the
// call committed with synchronous=FULL before the answer). bare_sdk is the
// floor: a plain go-sdk stateless server in the same process with one typed
// tool doing the same work (read the small file, return its content and
// SHA-256).
//
//	go test ./internal/transport/mcpserver -run '^$' -bench 'ToolsCall|ToolsList' -benchtime 300x -count 5

const (
	benchProject = "agent:local:bench"
	benchFile    = "small.go"
	// benchAgents is the number of concurrent agents of
	// BenchmarkToolsCallParallel, each with its own client session (and,
	// when recorded, its own Workflow Session).
	benchAgents = 8
)

var benchContent = []byte("package main\n\nimport \"fmt\"\n\n// main prints a greeting.\nfunc main() {\n\tfmt.Println(\"hello, bench\")\n}\n")

// BenchmarkToolsCallParallel runs benchAgents agents at once, each with its
// own client session (and Workflow Session when recorded), sharing b.N
// calls; with recording, group commit lets concurrent ledger appends share
// fsyncs.
func BenchmarkToolsCallParallel(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) {
			env := c.setup(b, benchAgents)
			for i, cs := range env.sessions {
				callOnce(b, cs, env.call(i))
			}
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, benchAgents)
			b.ResetTimer()
			for i, cs := range env.sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					call := env.call(i)
					for next.Add(1) <= int64(b.N) {
						res, err := cs.CallTool(ctx, call)
						if err == nil && res.IsError {
							err = fmt.Errorf("tool error: %s", textOf(res))
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkToolsList measures the latency of one modern tools/list POST
// through /mcp against the bare server, and reports the serialized size of
// the tools array (tools_bytes) and of the whole HTTP response body
// (wire_bytes). The request is sent as raw HTTP: the go-sdk client keeps
// tools/list in a TTL cache (SEP-2549) and WebCodex advertises a 5 minute
// TTL, so a second ClientSession.ListTools would never reach the server.
func BenchmarkToolsList(b *testing.B) {
	for _, c := range []struct {
		name  string
		setup func(*testing.B, int) *benchEnv
	}{{"webcodex", setupApp(false)}, {"bare_sdk", setupBare}} {
		b.Run(c.name, func(b *testing.B) {
			env := c.setup(b, 1)
			lt, err := env.sessions[0].ListTools(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := json.Marshal(lt.Tools)
			if err != nil {
				b.Fatal(err)
			}
			wire := listToolsRaw(b, env) // warm the connection and check the answer
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				listToolsRaw(b, env)
			}
			b.StopTimer()
			b.ReportMetric(float64(len(raw)), "tools_bytes")
			b.ReportMetric(float64(wire), "wire_bytes")
			b.ReportMetric(float64(len(lt.Tools)), "tools")
		})
	}
}

// listToolsBody is a modern (2026-07-28) tools/list request.
const listToolsBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"webcodex-bench","version":"1"}}}}`

// listToolsRaw posts one tools/list, reads the whole response and returns
// its size.
func listToolsRaw(b *testing.B, env *benchEnv) int {
	req, err := http.NewRequest(http.MethodPost, env.endpoint, strings.NewReader(listToolsBody))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := env.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"tools":[`)) {
		b.Fatalf("tools/list: HTTP %d: %.300s", resp.StatusCode, body)
	}
	return len(body)
}

type benchCase struct {
	name  string
	setup func(b *testing.B, agents int) *benchEnv
}

func benchCases() []benchCase {
	return []benchCase{
		{"webcodex_recorded", setupApp(true)},
		{"webcodex_unrecorded", setupApp(false)},
		{"bare_sdk", setupBare},
	}
}

// benchEnv is a server under test with one client session per agent.
type benchEnv struct {
	endpoint string
	hc       *http.Client // authenticated
	sessions []*mcp.ClientSession
	// call returns the agent's call. Each agent has its own params: the
	// go-sdk client writes the request _meta into the params it is given.
	call func(agent int) *mcp.CallToolParams
	// audit is the audit service behind the server's middleware (nil:
	// none).
	audit *audit.Service
}

// setupApp serves the complete WebCodex handler with one registered project
// holding the small file, and connects one authenticated client session per
// agent. With recorded, each agent opens its own Workflow Session with
// work_on_project and records every call in it.
func setupApp(recorded bool) func(*testing.B, int) *benchEnv {
	return func(b *testing.B, agents int) *benchEnv {
		ctx := context.Background()
		proj := b.TempDir()
		writeBenchFile(b, proj)
		cfg, err := app.LoadConfig(b.TempDir(), func(string) string { return "" })
		if err != nil {
			b.Fatal(err)
		}
		a, err := app.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		if _, err := a.RegisterProjects(ctx, []string{"bench=" + proj}); err != nil {
			b.Fatal(err)
		}
		token, _, err := a.Auth.CreateToken(ctx, "bench", "bench", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler())
		b.Cleanup(srv.Close)
		env := &benchEnv{endpoint: srv.URL + "/mcp", hc: benchClient(b, token, agents), audit: a.Audit}
		env.sessions = connectAgents(b, env.endpoint, env.hc, agents)
		recorders := make([]string, agents)
		if recorded {
			for i, cs := range env.sessions {
				recorders[i] = openSession(b, cs)
			}
		}
		calls := make([]*mcp.CallToolParams, agents)
		for i := range calls {
			args := map[string]any{"project": benchProject, "files": []any{map[string]any{"path": benchFile}}}
			if recorded {
				args["recording_session_id"] = recorders[i]
			}
			calls[i] = &mcp.CallToolParams{Name: "read_files", Arguments: args}
		}
		env.call = func(i int) *mcp.CallToolParams { return calls[i] }
		return env
	}
}

// bareIn and bareOut are the typed input and output of the bare server's
// one tool.
type bareIn struct {
	Path string `json:"path" jsonschema:"file to read, relative to the served directory"`
}

type bareOut struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	SHA256  string `json:"sha256"`
}

// setupBare serves a plain go-sdk stateless Streamable HTTP server with one
// typed read tool over the same small file: the cost of MCP itself.
func setupBare(b *testing.B, agents int) *benchEnv {
	s := bareServer(b)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	calls := make([]*mcp.CallToolParams, agents)
	for i := range calls {
		calls[i] = &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": benchFile}}
	}
	env := &benchEnv{endpoint: srv.URL, hc: benchClient(b, "", agents), call: func(i int) *mcp.CallToolParams { return calls[i] }}
	env.sessions = connectAgents(b, env.endpoint, env.hc, agents)
	return env
}

// bareServer is a plain go-sdk server with one typed read tool over a
// directory of its own holding the small file.
func bareServer(b *testing.B) *mcp.Server {
	dir := b.TempDir()
	writeBenchFile(b, dir)
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "read a file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in bareIn) (*mcp.CallToolResult, bareOut, error) {
			data, err := os.ReadFile(filepath.Join(dir, filepath.Clean("/"+in.Path)))
			if err != nil {
				return nil, bareOut{}, err
			}
			sum := sha256.Sum256(data)
			return nil, bareOut{Path: in.Path, Content: string(data), SHA256: hex.EncodeToString(sum[:])}, nil
		})
	return s
}

func writeBenchFile(b *testing.B, dir string) {
	if err := os.WriteFile(filepath.Join(dir, benchFile), benchContent, 0o644); err != nil {
		b.Fatal(err)
	}
}

// bearer adds the bearer credential to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token == "" {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

// benchClient returns an HTTP client sending token (if any) that keeps a
// connection per agent alive.
func benchClient(b *testing.B, token string, agents int) *http.Client {
	base := &http.Transport{MaxIdleConns: 4 * agents, MaxIdleConnsPerHost: 2 * agents}
	b.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: bearer{token: token, base: base}}
}

// connectAgents opens one client session per agent.
func connectAgents(b *testing.B, endpoint string, hc *http.Client, agents int) []*mcp.ClientSession {
	out := make([]*mcp.ClientSession, agents)
	for i := range out {
		client := mcp.NewClient(&mcp.Implementation{Name: "webcodex-bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
		}, nil)
		if err != nil {
			b.Fatalf("connect %s: %v", endpoint, err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			b.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		b.Cleanup(func() { cs.Close() })
		out[i] = cs
	}
	return out
}

// openSession starts a Workflow Session with work_on_project and returns
// its id.
func openSession(b *testing.B, cs *mcp.ClientSession) string {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "work_on_project",
		Arguments: map[string]any{"project": benchProject, "instruction": "benchmark reads"}})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("work_on_project: %s", textOf(res))
	}
	var r struct {
		Output struct {
			SessionID string `json:"session_id"`
		} `json:"output"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &r); err != nil || r.Output.SessionID == "" {
		b.Fatalf("work_on_project: no session_id in %s", raw)
	}
	return r.Output.SessionID
}

// callOnce makes one call and checks that it read the file.
func callOnce(b *testing.B, cs *mcp.ClientSession, call *mcp.CallToolParams) {
	res, err := cs.CallTool(context.Background(), call)
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s: %s", call.Name, textOf(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	sum := sha256.Sum256(benchContent)
	want, _ := json.Marshal(hex.EncodeToString(sum[:]))
	content, _ := json.Marshal(string(benchContent))
	if !bytes.Contains(raw, content) || !bytes.Contains(raw, want) {
		b.Fatalf("%s: answer lacks the file content or its sha256: %s", call.Name, raw)
	}
}

func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return "(no text)"
}
