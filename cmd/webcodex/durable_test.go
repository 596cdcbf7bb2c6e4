package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// TestAcknowledgedSurvivesADatabaseCrash serves a deployment on a cluster
// with fsync and synchronous_commit on, acknowledges posts, crashes the
// PostgreSQL server (an immediate stop), and starts it again: every
// acknowledged post is there, a post tried while the database was down
// failed (and is not there), and the replica answers again without a
// restart of its own.
func TestAcknowledgedSurvivesADatabaseCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes")
	}
	c := pgtest.DurableCluster(t)
	proj := t.TempDir()
	srv := startServe(t, "--data-dir", t.TempDir(), "--database", c.URL, "--evidence-key", filepath.Join(t.TempDir(), "evidence.key"), "--project", "demo="+proj)
	ctx := context.Background()
	r, err := callTool(ctx, srv.base, "work_on_project", map[string]any{"project": "agent:local:demo", "instruction": "durable"}, "")
	if err != nil || !r.Success {
		t.Fatalf("work_on_project: %v %+v", err, r.Error)
	}
	var start struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(r.Output, &start)
	post := func(body string) (toolResult, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return callTool(cctx, srv.base, "post_session_message", map[string]any{"session_id": start.SessionID, "kind": "note", "message": body}, "")
	}
	const posts = 20
	for i := range posts {
		if r, err := post(fmt.Sprintf("acked %d", i)); err != nil || !r.Success {
			t.Fatalf("post %d: %v %+v", i, err, r.Error)
		}
	}
	c.Crash()
	if r, err := post("while down"); err == nil && r.Success {
		t.Fatal("a post succeeded while the database was down")
	}
	c.Restart()
	r, err = callTool(ctx, srv.base, "list_session_messages", map[string]any{"session_id": start.SessionID, "limit": 100}, "")
	if err != nil || !r.Success {
		t.Fatalf("list after the restart: %v %+v", err, r.Error)
	}
	listed := string(r.Output)
	for i := range posts {
		if !strings.Contains(listed, fmt.Sprintf(`"acked %d"`, i)) {
			t.Fatalf("acknowledged post %d is missing after the crash:\n%s", i, listed)
		}
	}
	if strings.Contains(listed, "while down") {
		t.Fatal("a post that failed is on the board")
	}
	if r, err := post("after"); err != nil || !r.Success {
		t.Fatalf("post after the restart: %v %+v", err, r.Error)
	}
}
