package app_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/runnerhub"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/runnerwire"
)

// wireRunner speaks the runner protocol by hand, to send what a real
// runner never sends, over one transport of its link.
type wireRunner struct {
	ws  runnerlink.Link
	gen uint64
}

// overTransports runs a protocol test over each transport of the link.
func overTransports(t *testing.T, test func(t *testing.T, tr runnerlink.Transport)) {
	for _, tr := range []runnerlink.Transport{runnerlink.WebSocket, runnerlink.LongPoll} {
		t.Run(string(tr), func(t *testing.T) { test(t, tr) })
	}
}

func runnerToken(t *testing.T, s *server, clientID string) string {
	t.Helper()
	raw, _, err := s.a.Auth.CreateRunnerToken(context.Background(), clientID, auth.DefaultOwner)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func helloFor(clientID, root string) runnerwire.Hello {
	return runnerwire.Hello{Major: runnerwire.Major, Minor: runnerwire.Minor, ClientID: clientID, InstanceID: "ri_test",
		Version: "test", OS: "linux", Arch: "amd64", Sandbox: "workspace-write", Capabilities: []string{},
		Projects: []runnerwire.Project{{Name: "demo", Root: root}}, Resources: []string{}, Processes: []runnerwire.Inventory{},
		MaxConcurrentJobs: 4}
}

// dialRunner connects over tr with token and sends hello; it returns the
// link and the server's answer frame (an HTTP refusal is a
// *runnerlink.HTTPError).
func dialRunner(t *testing.T, s *server, tr runnerlink.Transport, token string, hello any) (runnerlink.Link, runnerwire.Frame, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := runnerwire.Encode(runnerwire.KindHello, 0, "", hello)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := runnerlink.Dial(ctx, tr, s.base, token, b)
	if err != nil {
		return nil, runnerwire.Frame{}, err
	}
	t.Cleanup(func() { ws.Close("") })
	_, b, err = ws.Read(ctx)
	if err != nil {
		return ws, runnerwire.Frame{}, err
	}
	f, err := runnerwire.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return ws, f, nil
}

// refusedWith reports whether err is an HTTP refusal with status.
func refusedWith(err error, status int) bool {
	var he *runnerlink.HTTPError
	return errors.As(err, &he) && he.Status == status
}

func connectWireRunner(t *testing.T, s *server, tr runnerlink.Transport, token, clientID, root string) *wireRunner {
	t.Helper()
	ws, f, err := dialRunner(t, s, tr, token, helloFor(clientID, root))
	if err != nil || f.Kind != runnerwire.KindWelcome {
		t.Fatalf("hello: %v %+v %s", err, f, f.Body)
	}
	return &wireRunner{ws: ws, gen: f.Gen}
}

func (w *wireRunner) read(t *testing.T) runnerwire.Frame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, b, err := w.ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := runnerwire.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (w *wireRunner) send(t *testing.T, k runnerwire.Kind, gen uint64, id string, body any) {
	t.Helper()
	b, err := runnerwire.Encode(k, gen, id, body)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ws.Write(context.Background(), runnerlink.Text, b); err != nil {
		t.Fatal(err)
	}
}

func projectIDs(t *testing.T, s *server) []string {
	t.Helper()
	ps, err := s.a.Projects.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestRunnerTokenCallsNoTool(t *testing.T) { overTransports(t, testRunnerTokenCallsNoTool) }

func testRunnerTokenCallsNoTool(t *testing.T, tr runnerlink.Transport) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	tok := runnerToken(t, s, "box")
	for _, path := range []string{"/api/tools/call", "/mcp"} {
		code, body := s.do(t, tok, "POST", path, []byte(`{"tool":"list_runners","arguments":{}}`))
		if code != http.StatusUnauthorized {
			t.Errorf("runner token on %s: HTTP %d %s, want 401", path, code, body)
		}
	}
	// And an API token is no runner token.
	if _, _, err := dialRunner(t, s, tr, s.token, helloFor("box", t.TempDir())); !refusedWith(err, http.StatusUnauthorized) {
		t.Fatalf("an API token on the runner channel: %v", err)
	}
}

func TestRunnerHelloRefusalsChangeNothing(t *testing.T) {
	overTransports(t, testRunnerHelloRefusalsChangeNothing)
}

func testRunnerHelloRefusalsChangeNothing(t *testing.T, tr runnerlink.Transport) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	tok := runnerToken(t, s, "box")
	root := t.TempDir()
	before := projectIDs(t, s)
	rejected := func(hello any, code string, words ...string) {
		t.Helper()
		_, f, err := dialRunner(t, s, tr, tok, hello)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		var rj runnerwire.Reject
		if f.Kind != runnerwire.KindReject || runnerwire.DecodeBody(f, &rj) != nil || rj.Code != code {
			t.Fatalf("want reject %s, got %s %s", code, f.Kind, f.Body)
		}
		for _, w := range words {
			if !strings.Contains(rj.Message, w) {
				t.Errorf("reject message %q does not name %q", rj.Message, w)
			}
		}
	}
	// Another major version: both versions named.
	other := helloFor("box", root)
	other.Major = runnerwire.Major + 1
	rejected(other, runnerwire.RejectVersion, fmt.Sprintf("%d.0", runnerwire.Major+1), fmt.Sprintf("%d.0", runnerwire.Major))
	// Registering under another client id than the token's.
	rejected(helloFor("other", root), runnerwire.RejectAuth, `"box"`, `"other"`)
	// An invalid project name.
	bad := helloFor("box", root)
	bad.Projects[0].Name = "../etc"
	rejected(bad, runnerwire.RejectInvalid)
	// An oversized frame is refused (the WebSocket closes with 1009; the
	// long-poll open answers 400).
	huge := []byte(`{"v":1,"kind":"hello","body":{"x":"` + strings.Repeat("a", runnerwire.MaxFrameBytes) + `"}}`)
	sendOversizedHello(t, s, tr, tok, huge)
	if got := projectIDs(t, s); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("refused hellos registered projects: %v, before %v", got, before)
	}
	var list struct {
		Runners []any `json:"runners"`
	}
	json.Unmarshal(must(t, s.call(t, "list_runners", map[string]any{}, ""), "list_runners").Output["runners"], &list.Runners)
	if len(list.Runners) != 0 {
		t.Fatalf("refused hellos left runner records: %v", list.Runners)
	}
}

func TestRunnerHelloStormIsRateLimited(t *testing.T) {
	overTransports(t, testRunnerHelloStormIsRateLimited)
}

func testRunnerHelloStormIsRateLimited(t *testing.T, tr runnerlink.Transport) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	tok := runnerToken(t, s, "box")
	v2 := helloFor("box", t.TempDir())
	v2.Major = 2 // refused after the upgrade, so each attempt is cheap
	limited := false
	for range runnerhub.HelloBurst + 1 {
		_, _, err := dialRunner(t, s, tr, tok, v2)
		var he *runnerlink.HTTPError
		if errors.As(err, &he) && he.Status == http.StatusTooManyRequests {
			limited = he.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Fatalf("%d hellos in a row were not rate-limited", runnerhub.HelloBurst+1)
	}
}

// TestRunnerFramesAreFenced: a response or a result of another generation,
// a result for no pending request and output for an unknown process are
// refused (the call keeps waiting, the connection stays); the right
// response then answers the call.
func TestRunnerFramesAreFenced(t *testing.T) { overTransports(t, testRunnerFramesAreFenced) }

func testRunnerFramesAreFenced(t *testing.T, tr runnerlink.Transport) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	tok := runnerToken(t, s, "box")
	w := connectWireRunner(t, s, tr, tok, "box", t.TempDir())
	got := make(chan result, 1)
	go func() {
		got <- s.call(t, "project_overview", map[string]any{"project": "agent:box:demo"}, "")
	}()
	req := w.read(t)
	if req.Kind != runnerwire.KindRequest || req.Gen != w.gen {
		t.Fatalf("want a request of generation %d, got %+v", w.gen, req)
	}
	w.send(t, runnerwire.KindResponse, w.gen+1, req.ID, runnerwire.Response{Result: json.RawMessage(`{"stale":true}`)})
	out, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinOutput, Gen: w.gen, ID: "rq_unknown", Stream: "stdout", Data: []byte("x")})
	if err := w.ws.Write(context.Background(), runnerlink.Binary, out); err != nil {
		t.Fatal(err)
	}
	w.send(t, runnerwire.KindExit, w.gen, "rq_unknown", runnerwire.Exit{})
	stale, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinResult, Gen: w.gen + 1, ID: req.ID, Data: []byte(`{"stale":true}`)})
	unknown, _ := runnerwire.EncodeBinary(runnerwire.Binary{Type: runnerwire.BinResult, Gen: w.gen, ID: "rq_unknown", Data: []byte(`{}`)})
	for _, m := range [][]byte{stale, unknown} {
		if err := w.ws.Write(context.Background(), runnerlink.Binary, m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a refused frame answered the call: %+v", r)
	default:
	}
	overview := `{"project":"agent:box:demo","root_name":"demo","is_git_repo":false,"top_level":[],"top_level_truncated":false,` +
		`"file_count":7,"dir_count":0,"total_bytes":0,"truncated":false,"languages":[],"instruction_files":[]}`
	w.send(t, runnerwire.KindResponse, w.gen, req.ID, runnerwire.Response{Result: json.RawMessage(overview)})
	r := <-got
	if !r.Success || string(r.Output["file_count"]) != "7" {
		t.Fatalf("the fenced call: %+v %+v", r, r.Error)
	}
}

// TestRunnerCutConnectionIsOutcomeUnknown: a request sent and not answered
// when the connection ends fails outcome_unknown, and is never sent again.
func TestRunnerCutConnectionIsOutcomeUnknown(t *testing.T) {
	overTransports(t, testRunnerCutConnectionIsOutcomeUnknown)
}

func testRunnerCutConnectionIsOutcomeUnknown(t *testing.T, tr runnerlink.Transport) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	tok := runnerToken(t, s, "box")
	root := t.TempDir()
	w := connectWireRunner(t, s, tr, tok, "box", root)
	got := make(chan result, 1)
	go func() {
		got <- s.call(t, "read_files", map[string]any{"project": "agent:box:demo", "files": []any{map[string]any{"path": "a.txt"}}}, "")
	}()
	if req := w.read(t); req.Kind != runnerwire.KindRequest {
		t.Fatalf("want the request, got %+v", req)
	}
	w.ws.Close("")
	r := <-got
	if r.Success || r.Error.Kind != "outcome_unknown" {
		t.Fatalf("a cut request: %+v", r)
	}
	// The same runner back: nothing is re-sent to it.
	w2 := connectWireRunner(t, s, tr, tok, "box", root)
	if w2.gen <= w.gen {
		t.Fatalf("generation %d after %d", w2.gen, w.gen)
	}
	w2.send(t, runnerwire.KindHeartbeat, w2.gen, "", runnerwire.Heartbeat{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, b, err := w2.ws.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the new connection received %s (%v); nothing may be re-sent", b, err)
	}
}

// TestRunnerProjectsAreVisibleOnlyToTheirGroup: a principal of another
// authority group is told a runner's project does not exist, exactly as
// for an id nobody registered, and lists no runner.
func TestRunnerProjectsAreVisibleOnlyToTheirGroup(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	connectWireRunner(t, s, runnerlink.WebSocket, runnerToken(t, s, "box"), "box", t.TempDir())
	other, _, err := s.a.Auth.CreateToken(context.Background(), "other", "other-group",
		[]auth.Scope{auth.ScopeProjectRead, auth.ScopeRuntimeRead})
	if err != nil {
		t.Fatal(err)
	}
	args := func(p string) map[string]any {
		return map[string]any{"project": p, "files": []any{map[string]any{"path": "a.txt"}}}
	}
	hidden := s.callAs(t, other, "read_files", args("agent:box:demo"), "")
	absent := s.callAs(t, other, "read_files", args("agent:box:nothing"), "")
	if hidden.Success || hidden.Error.Kind != "unknown_project" || absent.Error.Kind != "unknown_project" ||
		strings.Replace(hidden.Error.Message, "demo", "nothing", 1) != absent.Error.Message {
		t.Fatalf("another group's view of a runner project: %+v, of a missing one: %+v", hidden.Error, absent.Error)
	}
	var list []any
	json.Unmarshal(must(t, s.callAs(t, other, "list_runners", map[string]any{}, ""), "list_runners").Output["runners"], &list)
	if len(list) != 0 {
		t.Fatalf("another group lists %v", list)
	}
}

// TestAResourceOfNoRunnerIsRefused: a session of a local project cannot
// select an SSH resource (this host has none), and nothing changes.
func TestAResourceOfNoRunnerIsRefused(t *testing.T) {
	s := startApp(t, t.TempDir(), "demo="+t.TempDir())
	defer s.stop(t)
	id := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "x"}, ""), "work_on_project").Output["session_id"])
	r := s.call(t, "update_session_context", map[string]any{"session_id": id, "resource": "db", "default_cwd": "/srv"}, "")
	if r.Success || r.Error.Kind != "resource_not_allowed" {
		t.Fatalf("a resource on a local project: %+v", r.Error)
	}
	sess, err := s.a.Sessions.Get(context.Background(), id)
	if err != nil || sess.ExecutionContext.Resource != "" || sess.ExecutionContext.DefaultCwd != "" {
		t.Fatalf("the refused update changed the session: %v %+v", err, sess.ExecutionContext)
	}
}

// sendOversizedHello sends a hello over runnerwire.MaxFrameBytes by hand
// (runnerlink.Dial refuses to) and checks the server refuses it.
func sendOversizedHello(t *testing.T, s *server, tr runnerlink.Transport, token string, huge []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if tr == runnerlink.WebSocket {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+runnerlink.WebSocketPath, &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": []string{"Bearer " + token}}, Subprotocols: []string{runnerwire.Subprotocol}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		ws.SetReadLimit(runnerwire.MaxFrameBytes)
		err = ws.Write(ctx, websocket.MessageText, huge)
		if err == nil {
			_, _, err = ws.Read(ctx)
		}
		if err == nil {
			t.Fatal("an oversized hello was answered")
		}
		if websocket.CloseStatus(err) != -1 && websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Fatalf("oversized frame: close status %v", websocket.CloseStatus(err))
		}
		return
	}
	body := append([]byte{'t', 0, 0, 0, 0}, huge...)
	binary.BigEndian.PutUint32(body[1:5], uint32(len(huge)))
	code, msg := s.do(t, token, http.MethodPost, runnerlink.PollPath+"open", body)
	if code != http.StatusBadRequest {
		t.Fatalf("an oversized hello over long-poll: HTTP %d %s", code, msg)
	}
}
