package closeout_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/closeout"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// racyStore appends an event to the session right after every Events read,
// as a concurrent writer would (race), or runs during (any other change,
// such as a post on the session's board).
type racyStore struct {
	workflow.Store
	race   bool
	during func()
}

func (s *racyStore) Events(ctx context.Context, id string, limit int) ([]workflow.Event, error) {
	evs, err := s.Store.Events(ctx, id, limit)
	if s.race {
		s.Store.Update(ctx, id, func(*workflow.Session) ([]workflow.Event, error) {
			return []workflow.Event{{Kind: workflow.EventToolCallFinished, Tool: "read_files", Outcome: workflow.OutcomeOK}}, nil
		})
	}
	if s.during != nil {
		s.during()
	}
	return evs, err
}

// env is a kernel with the session tools and both closeout tools over a
// real workflow.db, and one session started with instruction.
type env struct {
	*kerneltest.Env
	svc   *workflow.Service
	store *racyStore
	board *workflow.Board
	id    string
	// other is a registered project the session is not in.
	other string
}

func newEnv(t *testing.T, instruction string) *env {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), filepath.Join(t.TempDir(), "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rs := &racyStore{Store: st}
	svc := workflow.NewService(rs, nil)
	p := kerneltest.TempProject(t, map[string]string{"calc.go": "package calc\n"})
	// A second project the caller may use, which no session of env's is
	// in.
	other := kerneltest.TempProject(t, nil)
	other.ID, other.Name = other.ID+"-other", other.Name+"-other"
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: svc})
	closeout.Register(reg, &closeout.Tools{Sessions: svc, Snapshots: st})
	k := kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p, other.ID: other}, Sessions: svc})
	e := &env{Env: &kerneltest.Env{T: t, Kernel: k, Project: p}, svc: svc, store: rs, board: workflow.NewBoard(st, nil), other: other.ID}
	e.id = kerneltest.OK[sessions.WorkOutput](t, e.Call("work_on_project", map[string]any{"instruction": instruction})).SessionID
	return e
}

// newHandoffEnv is the env of the session_handoff_summary tests: its
// instruction carries a secret the brief must never show.
func newHandoffEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, "Make the calculator tests pass. token=abcd1234secretvalue")
}

// newFinishEnv is the env of the finish_coding_task tests.
func newFinishEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, "Make the calculator tests pass.")
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const scope = "validation_scope:v1:0000000000000000000000000000000000000000000000000000000000000000"
