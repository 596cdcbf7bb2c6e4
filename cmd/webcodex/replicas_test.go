package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// roundRobin is a loopback reverse proxy that sends each request to the
// next replica in turn, as a load balancer in front of a deployment does.
// A replica that refuses the connection (it is gone) is skipped for that
// request: nothing of the request reached it, so sending it to the next
// one cannot run it twice.
type roundRobin struct {
	backends []*url.URL
	next     atomic.Uint64
	srv      *httptest.Server
}

func newRoundRobin(t *testing.T, bases ...string) *roundRobin {
	t.Helper()
	rr := &roundRobin{}
	for _, b := range bases {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		rr.backends = append(rr.backends, u)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.Out.URL.Scheme = "http" },
		Transport:     rr,
		FlushInterval: -1, // stream SSE responses as they come
		// A replica killed mid-response is expected here.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	rr.srv = httptest.NewServer(proxy)
	t.Cleanup(rr.srv.Close)
	return rr
}

// RoundTrip sends r to the next replica, or to the one after it when the
// connection is refused. The body is read first (the requests are small
// JSON-RPC messages) so that a second attempt can send it again: a
// transport closes the body of a request it failed to send.
func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	start := rr.next.Add(1)
	var err error
	for i := range uint64(len(rr.backends)) {
		b := rr.backends[(start+i)%uint64(len(rr.backends))]
		out := r.Clone(r.Context())
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
		}
		out.URL.Host, out.Host = b.Host, b.Host
		var resp *http.Response
		resp, err = http.DefaultTransport.RoundTrip(out)
		var op *net.OpError
		if err == nil || !errors.As(err, &op) || op.Op != "dial" {
			return resp, err
		}
	}
	return nil, err
}

// replicaClient is an MCP client (the official go-sdk) of one base URL.
func replicaClient(t *testing.T, base string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{testToken}}}
	cs, err := client.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", base, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpCall calls tool and returns its structured result (the ToolResult
// envelope); a protocol error is returned as err.
func mcpCall(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (toolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return toolResult{}, err
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return toolResult{}, err
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return toolResult{}, fmt.Errorf("%s: structuredContent %s: %w", tool, raw, err)
	}
	return r, nil
}

// mcpOutput calls tool, fails the test unless it succeeds, and returns its
// output's members.
func mcpOutput(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]json.RawMessage {
	t.Helper()
	r, err := mcpCall(t.Context(), cs, tool, args)
	if err != nil || !r.Success {
		t.Fatalf("%s %v: %v %+v", tool, args, err, r.Error)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(r.Output, &out); err != nil {
		t.Fatalf("%s output %s: %v", tool, r.Output, err)
	}
	return out
}

func outField[T any](t *testing.T, out map[string]json.RawMessage, name string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(out[name], &v); err != nil {
		t.Fatalf("%s = %s: %v", name, out[name], err)
	}
	return v
}

type replicaMsg struct {
	ID           string `json:"message_id"`
	Status       string `json:"status"`
	CompletionID string `json:"completion_id"`
}

// startReplicas starts n `webcodex serve` processes on one PostgreSQL
// database, each with its own data directory and the same evidence key
// file, one after the other (the first creates the journal and the key).
func startReplicas(t *testing.T, n int, project string) (dbURL, keyFile string, replicas []*child) {
	t.Helper()
	dbURL = strings.Replace(pgtest.URL(t), "postgres@", "postgres:"+testDBPassword+"@", 1)
	keyFile = filepath.Join(t.TempDir(), "evidence.key")
	for range n {
		r := startServe(t, "--data-dir", t.TempDir(), "--database", dbURL, "--evidence-key", keyFile, "--project", "demo="+project)
		replicas = append(replicas, r)
	}

	return dbURL, keyFile, replicas
}

// TestReplicasServeOneDeployment runs two real replicas on one PostgreSQL
// database, driven by go-sdk MCP clients, directly and through a
// round-robin proxy: a session created on A is continued on B; a board
// wait on A is woken by a post on B; a completion retried on the other
// replica replays; completions racing on both replicas with different
// keys leave exactly one winner; and the evidence both journaled verifies.
func TestReplicasServeOneDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	proj := t.TempDir()
	dbURL, keyFile, rs := startReplicas(t, 2, proj)
	a, b := replicaClient(t, rs[0].base), replicaClient(t, rs[1].base)
	rr := newRoundRobin(t, rs[0].base, rs[1].base)
	viaProxy := replicaClient(t, rr.srv.URL)

	// A session created on A is continued on B and seen on the proxy.
	sess := outField[string](t, mcpOutput(t, a, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "replicas"}), "session_id")
	mcpOutput(t, b, "write_project_file", map[string]any{"project": "agent:local:demo", "path": "b.txt", "content": "from B", "recording_session_id": sess})
	for range 4 { // both replicas answer through the proxy
		mcpOutput(t, viaProxy, "session_summary", map[string]any{"session_id": sess})
	}
	if got, err := os.ReadFile(filepath.Join(proj, "b.txt")); err != nil || string(got) != "from B" {
		t.Fatalf("b.txt = %q, %v", got, err)
	}

	// A wait on A is woken by a post on B. The wait asks for 60 s; a
	// wake that came only from its own timer would not answer before
	// the context's 30 s.
	tok := outField[string](t, mcpOutput(t, a, "observe_session_messages", map[string]any{"session_id": sess}), "observation_token")
	woken := make(chan map[string]json.RawMessage, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := mcpCall(ctx, a, "observe_session_messages", map[string]any{"session_id": sess, "after_observation_token": tok, "wait_seconds": 60})
		var out map[string]json.RawMessage
		if err == nil && r.Success {
			json.Unmarshal(r.Output, &out)
		}
		woken <- out
	}()
	posted := outField[replicaMsg](t, mcpOutput(t, b, "post_session_message", map[string]any{"session_id": sess, "kind": "todo", "message": "Fix the parser."}), "message")
	out := <-woken
	if msgs := outField[[]replicaMsg](t, out, "messages"); len(msgs) != 1 || msgs[0].ID != posted.ID {
		t.Fatalf("the wait on A saw %s", out["messages"])
	}

	// A completion on A, retried on B, replays.
	fence := outField[string](t, mcpOutput(t, b, "get_session_assignment", map[string]any{"session_id": sess, "message_id": posted.ID}), "assignment_fence")
	complete := map[string]any{"session_id": sess, "message_id": posted.ID, "answer": "done", "completion_key": "k-1", "expected_assignment_fence": fence}
	first := mcpOutput(t, a, "complete_session_message", complete)
	again := mcpOutput(t, b, "complete_session_message", complete)
	if outField[bool](t, first, "replayed") || !outField[bool](t, again, "replayed") ||
		outField[replicaMsg](t, first, "answer").ID != outField[replicaMsg](t, again, "answer").ID {
		t.Fatalf("completion %s, retried on B %s", first, again)
	}

	// Completions racing on both replicas with different keys: one wins.
	for round := range 5 {
		todo := outField[replicaMsg](t, mcpOutput(t, viaProxy, "post_session_message", map[string]any{"session_id": sess, "kind": "todo", "message": fmt.Sprintf("race %d", round)}), "message")
		fence := outField[string](t, mcpOutput(t, a, "get_session_assignment", map[string]any{"session_id": sess, "message_id": todo.ID}), "assignment_fence")
		results := make([]toolResult, 2)
		var wg sync.WaitGroup
		for i, cs := range []*mcp.ClientSession{a, b} {
			wg.Go(func() {
				r, err := mcpCall(t.Context(), cs, "complete_session_message", map[string]any{"session_id": sess, "message_id": todo.ID,
					"answer": "mine", "completion_key": fmt.Sprintf("race-%d-%d", round, i), "expected_assignment_fence": fence})
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			})
		}
		wg.Wait()
		won, lost := 0, 0
		for _, r := range results {
			switch {
			case r.Success:
				won++
			case r.Error != nil && r.Error.Kind == "already_completed":
				lost++
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("round %d: %+v", round, results)
		}
	}
	for _, r := range rs {
		out := stopServe(t, r)
		if !strings.Contains(out, "database  postgres://postgres:xxxxx@") || strings.Contains(out, testDBPassword) {
			t.Fatalf("a replica's banner does not name its database, or shows its password:\n%s", out)
		}
	}
	verifyReplicaEvidence(t, dbURL, keyFile)
}

// testDBPassword is put in the replicas' database URL (the test cluster
// trusts every local connection, so it is never checked): it must never
// be printed.
const testDBPassword = "s3cret-db-pass"

// verifyReplicaEvidence runs `webcodex evidence verify` on the
// deployment's journal and fails unless it is clean.
func verifyReplicaEvidence(t *testing.T, dbURL, keyFile string) {
	t.Helper()
	out := mustRun(t, "--data-dir", t.TempDir(), "evidence", "verify", "--database", dbURL, "--evidence-key", keyFile)
	if !strings.Contains(out, "Evidence verification: OK") || strings.Contains(out, "records     0 read") || strings.Contains(out, testDBPassword) {
		t.Fatalf("evidence verify:\n%s", out)
	}
}

// TestReplicaKilledUnderLoad kills one of two replicas with SIGKILL while
// clients write through the round-robin proxy: every acknowledged write
// is in the ledger afterwards, the other replica keeps answering, and a
// call the dead replica had not answered is never recorded as a success.
func TestReplicaKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	proj := t.TempDir()
	dbURL, keyFile, rs := startReplicas(t, 2, proj)
	rr := newRoundRobin(t, rs[0].base, rs[1].base)
	b := replicaClient(t, rs[1].base)
	sess := outField[string](t, mcpOutput(t, b, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "load"}), "session_id")

	// At most writers*perWriter posts: all fit one list page
	// (workflow.MessageListMax) and the board (MaxRetainedMessages).
	const writers, perWriter, killAfter = 4, 24, 30
	var (
		mu    sync.Mutex
		acked []string
	)
	enough := make(chan struct{})
	var once sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		cs := replicaClient(t, rr.srv.URL)
		wg.Go(func() {
			for i := range perWriter {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf("w%d-%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				r, err := mcpCall(ctx, cs, "post_session_message", map[string]any{"session_id": sess, "kind": "note", "message": body})
				cancel()
				if err != nil || !r.Success {
					continue // cut off by the kill: its outcome is unknown
				}
				mu.Lock()
				acked = append(acked, body)
				if len(acked) == killAfter {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-enough:
	case <-finished:
		t.Fatalf("the writers stopped after %d acknowledged posts", len(acked))
	}
	if err := rs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-rs[0].done
	// B keeps answering through the proxy after the kill.
	after := replicaClient(t, rr.srv.URL)
	for range 4 {
		mcpOutput(t, after, "session_summary", map[string]any{"session_id": sess})
	}
	close(stop)
	<-finished

	listed := outField[[]struct {
		Body string `json:"message"`
	}](t, mcpOutput(t, b, "list_session_messages", map[string]any{"session_id": sess, "limit": 100}), "messages")
	have := map[string]bool{}
	for _, m := range listed {
		have[m.Body] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for _, body := range acked {
		if !have[body] {
			t.Fatalf("acknowledged post %q is missing after the kill (%d acknowledged, %d listed)", body, len(acked), len(listed))
		}
	}
	stopServe(t, rs[1])
	verifyReplicaEvidence(t, dbURL, keyFile)
}

// TestServeRefusesABadDatabase: a database that cannot be reached stops
// serve at start with an error naming it (without its password), and
// nothing is created in the data directory; a database a newer WebCodex
// migrated is refused, naming the schema.
func TestServeRefusesABadDatabase(t *testing.T) {
	data := t.TempDir()
	out, err := run(t, "--data-dir", data, "serve", "--listen", "127.0.0.1:0", "--database", "postgres://webcodex:"+testDBPassword+"@127.0.0.1:1/webcodex?connect_timeout=2")
	if failure.KindOf(err) != failure.Unavailable || !strings.Contains(err.Error(), "postgres://webcodex:xxxxx@127.0.0.1:1/webcodex") ||
		strings.Contains(err.Error()+out, testDBPassword) {
		t.Fatalf("serve on an unreachable database: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Fatalf("serve on an unreachable database created %v", entries)
	}

	url := pgtest.URL(t)
	mustRun(t, "--data-dir", t.TempDir(), "--database", url, "session", "list")
	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(context.Background(), `INSERT INTO workflow.schema_migrations (version, name) VALUES (9999, '9999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "--data-dir", t.TempDir(), "serve", "--listen", "127.0.0.1:0", "--database", url)
	if failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "workflow") || !strings.Contains(err.Error(), "9999") {
		t.Fatalf("serve on a newer schema: %v\n%s", err, out)
	}
}

// TestAReplicaJudgedGoneStops: another replica judged this one gone (its
// membership row deleted, as Alive does when it finds the lock free) and
// then its lock's connection is cut. Taking the lock again, the replica
// finds itself forgotten and stops, saying why, instead of writing on
// beside records another replica may have made for its calls.
func TestAReplicaJudgedGoneStops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	dbURL, _, rs := startReplicas(t, 1, t.TempDir())
	ctx := context.Background()
	db, err := pgdb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pid int32
	if err := db.Pool.QueryRow(ctx, `DELETE FROM replicas.members m RETURNING (SELECT l.pid FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = m.lock_key)`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend($1, 60000)`, pid); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-rs[0].done:
		if err == nil || !strings.Contains(rs[0].stderr.String(), "lost its claim on the database") {
			t.Fatalf("the forgotten replica exited with %v:\n%s", err, rs[0].stderr.String())
		}
	case <-time.After(2 * pgdb.LockCheckInterval * 6):
		t.Fatal("the forgotten replica is still serving")
	}
}
