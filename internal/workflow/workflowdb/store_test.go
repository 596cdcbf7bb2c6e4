package workflowdb_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

const proj = "agent:local:demo"

var owner = auth.Fingerprint("local")

func open(t testing.TB, path string) *workflowdb.Store {
	t.Helper()
	st, err := workflowdb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func start(t testing.TB, svc *workflow.Service) workflow.Session {
	t.Helper()
	s, err := svc.Start(context.Background(), workflow.StartParams{Project: proj, Fingerprint: owner, Instruction: "fix the flaky test"})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func TestRedactionBeforeWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "workflow.db")
	st := open(t, path)
	svc := workflow.NewService(st, nil)
	secret := "wc_pat_" + strings.Repeat("Zq9", 14)
	s, err := svc.Start(ctx, workflow.StartParams{Project: proj, Fingerprint: owner,
		Instruction: "deploy with token " + secret + " and password=hunter2hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	svc.Append(ctx, s.ID, workflow.Event{Kind: workflow.EventToolCallFinished, Facts: map[string]string{"note": "Authorization: Bearer " + secret}})
	st.Close()
	for _, f := range []string{path, path + "-wal"} {
		b, _ := readFile(f)
		if strings.Contains(string(b), secret) || strings.Contains(string(b), "hunter2hunter2") {
			t.Fatalf("%s contains a planted secret", filepath.Base(f))
		}
	}
}

// knownProj accepts only proj, as the project registry of a data directory
// where proj alone is registered would.
func knownProj(_ context.Context, id string) error {
	if id != proj {
		return failure.New(failure.UnknownProject, "project %q is not registered", id)
	}
	return nil
}
