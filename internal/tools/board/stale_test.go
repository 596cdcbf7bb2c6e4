package board

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

const project = "agent:local:demo"

// staleEnv is a real workflow.db with one session, a real window.db, and
// the board tools over both with one injected clock.
type staleEnv struct {
	now     time.Time
	ledger  *workflowdb.Store
	windows *window.Service
	tools   *Tools
	session string
	p       auth.Principal
}

func newStaleEnv(t *testing.T) *staleEnv {
	t.Helper()
	ctx := context.Background()
	e := &staleEnv{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), p: auth.Principal{Kind: "token", ID: "tok1", Owner: "alice"}}
	clock := func() time.Time { return e.now }
	var err error
	if e.ledger, err = workflowdb.Open(ctx, filepath.Join(t.TempDir(), "workflow.db"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ledger.Close() })
	ws, err := windowdb.Open(ctx, filepath.Join(t.TempDir(), "window.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	e.windows = window.NewService(ws, nil, clock)
	s, err := workflow.NewService(e.ledger, nil).Start(ctx, workflow.StartParams{Project: project, Fingerprint: e.p.AuthorityFingerprint(), Instruction: "coordinate"})
	if err != nil {
		t.Fatal(err)
	}
	e.session = s.ID
	e.tools = &Tools{Board: workflow.NewBoard(e.ledger, clock), Activity: e.windows}
	return e
}

// win returns the hashed window of a raw host value.
func (e *staleEnv) win(raw string) string { return window.Hash(raw, e.p) }

// active records a meaningful call of w at the current clock.
func (e *staleEnv) active(w string) {
	e.windows.Observe(context.Background(), e.p, w, "read_file", project, false, "")
}

func (e *staleEnv) todo(t *testing.T) string {
	t.Helper()
	m, _, err := e.tools.Board.Post(context.Background(), workflow.PostParams{SessionID: e.session, Kind: workflow.MessageTodo, Body: "fix the parser"})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// fetch is get_session_assignment from window w; the fetch record (a
// behind write) is flushed before it returns.
func (e *staleEnv) fetch(t *testing.T, w, id string) workflow.Assignment {
	t.Helper()
	a, err := e.tools.assignment(context.Background(), &kernel.Invocation{Window: w},
		AssignmentInput{RequiredSessionRef: kernel.RequiredSessionRef{SessionID: e.session}, MessageID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ledger.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

func (e *staleEnv) observe(t *testing.T, w, token string) workflow.Observation {
	t.Helper()
	o, err := e.tools.observe(context.Background(), &kernel.Invocation{Window: w},
		ObserveInput{RequiredSessionRef: kernel.RequiredSessionRef{SessionID: e.session}, AfterToken: token})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func diag(o workflow.Observation, id string) (string, bool) {
	for _, m := range o.Messages {
		if m.ID == id {
			return m.AssigneeRecentActivity, true
		}
	}
	return "", false
}

func TestStaleAssignmentDiagnostic(t *testing.T) {
	e := newStaleEnv(t)
	worker, coord := e.win("worker-window"), e.win("coordinator-window")
	base := e.observe(t, coord, "").Token
	id := e.todo(t)
	e.active(worker)
	first := e.fetch(t, worker, id)
	if first.Todo.AssigneeRecentActivity != "" || !first.Completable {
		t.Fatalf("first fetch: %+v", first)
	}

	// The worker was active 5 minutes later: at 11 minutes nothing is
	// reported.
	e.now = e.now.Add(5 * time.Minute)
	e.active(worker)
	e.now = e.now.Add(6 * time.Minute)
	if a := e.fetch(t, coord, id); a.Todo.AssigneeRecentActivity != "" {
		t.Fatalf("recent fetcher activity: diagnostic %q", a.Todo.AssigneeRecentActivity)
	}
	if d, ok := diag(e.observe(t, coord, base), id); !ok || d != "" {
		t.Fatalf("recent fetcher activity: observe diagnostic %q (todo shown %v)", d, ok)
	}

	// The coordinator's fetch above replaced the worker's: the worker
	// fetches again (and is active) so that it is the recorded fetcher.
	e.active(worker)
	e.fetch(t, worker, id)
	e.now = e.now.Add(workflow.AssigneeQuietAfter)
	a := e.fetch(t, coord, id)
	if a.Todo.AssigneeRecentActivity != workflow.AssigneeNoneWithin10m {
		t.Fatalf("stale fetcher: diagnostic %q", a.Todo.AssigneeRecentActivity)
	}
	b, _ := json.Marshal(a)
	if !strings.Contains(string(b), `"assignee_recent_activity":"none_within_10m"`) {
		t.Fatalf("stale fetcher: JSON %s", b)
	}
	// Diagnostic only: the fence is the one the worker holds, and the
	// board did not change observably.
	if a.Fence != first.Fence || !a.Completable {
		t.Fatalf("fence changed: %q, want %q", a.Fence, first.Fence)
	}
	o := e.observe(t, coord, base)
	if d, _ := diag(o, id); d != workflow.AssigneeNoneWithin10m {
		t.Fatalf("stale fetcher: observe diagnostic %q", d)
	}
	if again := e.observe(t, coord, o.Token); again.Changed {
		t.Fatalf("the diagnostic changed the board: %+v", again)
	}
	// The coordinator told of the quiet fetcher did not become it.
	if a := e.fetch(t, coord, id); a.Todo.AssigneeRecentActivity != workflow.AssigneeNoneWithin10m {
		t.Fatalf("second coordinator fetch: diagnostic %q", a.Todo.AssigneeRecentActivity)
	}

	// The fetching window itself is never told about itself.
	if d, _ := diag(e.observe(t, worker, base), id); d != "" {
		t.Fatalf("same window observe: diagnostic %q", d)
	}
	if a := e.fetch(t, worker, id); a.Todo.AssigneeRecentActivity != "" {
		t.Fatalf("same window fetch: diagnostic %q", a.Todo.AssigneeRecentActivity)
	}

	// The worker completes with the fence it fetched first.
	if _, err := e.tools.Board.Complete(context.Background(), workflow.CompleteParams{SessionID: e.session, MessageID: id,
		Answer: "done", CompletionKey: "k1", Fence: first.Fence}); err != nil {
		t.Fatalf("complete with the worker's fence: %v", err)
	}
	e.now = e.now.Add(time.Hour)
	if a := e.fetch(t, coord, id); a.Todo.AssigneeRecentActivity != "" {
		t.Fatalf("resolved todo: diagnostic %q", a.Todo.AssigneeRecentActivity)
	}
}

func TestStaleAssignmentDiagnosticNeedsFetchWindow(t *testing.T) {
	e := newStaleEnv(t)
	coord := e.win("coordinator-window")
	base := e.observe(t, coord, "").Token
	id := e.todo(t)
	e.fetch(t, "", id)
	e.now = e.now.Add(time.Hour)
	if d, ok := diag(e.observe(t, coord, base), id); !ok || d != "" {
		t.Fatalf("fetch without a window: observe diagnostic %q (todo shown %v)", d, ok)
	}
	if a := e.fetch(t, coord, id); a.Todo.AssigneeRecentActivity != "" || a.Fetch.Window != "" {
		t.Fatalf("fetch without a window: %+v", a)
	}
}
