package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
	"github.com/webcodex/webcodex/internal/project/filerev"
	"github.com/webcodex/webcodex/internal/readset"
)

const readSetProject = "agent:local:rs"

// readSetResult is a REST tool result with its changed_since_read block.
type readSetResult struct {
	Success          bool
	Error            *struct{ Kind, Message string }
	ChangedSinceRead *readset.Notices `json:"changed_since_read"`
}

// callReadSet calls tool over REST recorded in recorder.
func callReadSet(t *testing.T, s *server, tool string, args map[string]any, recorder string) readSetResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args, "recording_session_id": recorder})
	code, data := s.do(t, s.token, "POST", "/api/tools/call", body)
	var r readSetResult
	if code != 200 || json.Unmarshal(data, &r) != nil || !r.Success {
		t.Fatalf("%s: HTTP %d %s", tool, code, data)
	}
	return r
}

// TestReadSetNoticesSQLite runs the read-set flow on SQLite files
// (readsets.db).
func TestReadSetNoticesSQLite(t *testing.T) {
	dir := rawProjectDir(t)
	s := startApp(t, t.TempDir(), "rs="+dir)
	defer s.stop(t)
	readSetFlow(t, s, dir)
	// Only paths and digests are stored, never contents.
	for _, f := range []string{app.ReadSetsDB, app.ReadSetsDB + "-wal"} {
		raw, err := os.ReadFile(filepath.Join(s.a.Config.DataDir, f))
		if err != nil && f == app.ReadSetsDB {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("secretMarker")) {
			t.Fatalf("%s holds file content", f)
		}
	}
}

// TestReadSetNoticesPostgres is the same flow on PostgreSQL (schema
// readsets).
func TestReadSetNoticesPostgres(t *testing.T) {
	url := pgtest.URL(t)
	dir := rawProjectDir(t)
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.DatabaseURL = url }, "rs="+dir)
	defer s.stop(t)
	if s.a.Stores.Backend == app.BackendSQLite {
		t.Fatal("the app is not on PostgreSQL")
	}
	readSetFlow(t, s, dir)
}

// readSetFlow: session A reads x.go; session B overwrites it with
// write_project_file; A's next call (another tool) carries
// changed_since_read naming x.go, changed by B, and the call after does
// not repeat it. Then A re-reads, the file changes on disk behind every
// tool, B reads it: A's next call names it changed by unknown. B, the
// writer and the observer, is never told of its own change. A dry run
// of apply_text_edits is told to no one; its delete is told without a
// new digest.
func readSetFlow(t *testing.T, s *server, dir string) {
	ctx := context.Background()
	flush := func() {
		t.Helper()
		if err := s.a.ReadSets.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	v1, v2, v3 := "package x // secretMarker 1\n", "package x // secretMarker 2\n", "package x // secretMarker 3\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	a := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": readSetProject, "instruction": "read"}, ""), "A").Output["session_id"])
	b := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": readSetProject, "instruction": "edit"}, ""), "B").Output["session_id"])
	readX := map[string]any{"project": readSetProject, "files": []any{map[string]any{"path": "x.go"}}}
	other := map[string]any{"project": readSetProject, "files": []any{map[string]any{"path": "a.txt"}}}

	if r := callReadSet(t, s, "read_files", readX, a); r.ChangedSinceRead != nil {
		t.Fatalf("a first read carried %+v", r.ChangedSinceRead)
	}
	flush()
	if r := callReadSet(t, s, "write_project_file", map[string]any{"project": readSetProject, "path": "x.go", "content": v2,
		"expected_sha256": filerev.SHA256([]byte(v1))}, b); r.ChangedSinceRead != nil {
		t.Fatalf("the writer was told of %+v", r.ChangedSinceRead)
	}
	flush()
	r := callReadSet(t, s, "list_project_files", map[string]any{"project": readSetProject}, a)
	want := readset.Notice{Path: "x.go", ReadSHA256: filerev.SHA256([]byte(v1)), SHA256: filerev.SHA256([]byte(v2)), ChangedBy: b}
	if n := r.ChangedSinceRead; n == nil || len(n.Files) != 1 || n.Total != 1 || n.Truncated || n.Hint != readset.NoticeHint ||
		n.Files[0].Path != want.Path || n.Files[0].ReadSHA256 != want.ReadSHA256 || n.Files[0].SHA256 != want.SHA256 || n.Files[0].ChangedBy != b {
		t.Fatalf("A's next call carried %+v, want %+v", r.ChangedSinceRead, want)
	}
	if r := callReadSet(t, s, "read_files", other, a); r.ChangedSinceRead != nil {
		t.Fatalf("delivered again: %+v", r.ChangedSinceRead)
	}

	// A re-reads; the file then changes behind every tool.
	callReadSet(t, s, "read_files", readX, a)
	flush()
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(v3), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := callReadSet(t, s, "read_files", readX, b); r.ChangedSinceRead != nil {
		t.Fatalf("the observer was told %+v", r.ChangedSinceRead)
	}
	flush()
	r = callReadSet(t, s, "read_files", other, a)
	if n := r.ChangedSinceRead; n == nil || len(n.Files) != 1 || n.Files[0].Path != "x.go" || n.Files[0].ChangedBy != readset.Unknown ||
		n.Files[0].ReadSHA256 != filerev.SHA256([]byte(v2)) || n.Files[0].SHA256 != filerev.SHA256([]byte(v3)) {
		t.Fatalf("after the out-of-band change A got %+v", r.ChangedSinceRead)
	}
	// B, which observed the change itself, is told nothing.
	if r := callReadSet(t, s, "read_files", other, b); r.ChangedSinceRead != nil {
		t.Fatalf("B was told %+v", r.ChangedSinceRead)
	}

	// A re-reads; B's dry run changes nothing and is told to no one; B's
	// delete through apply_text_edits is told with no new digest.
	callReadSet(t, s, "read_files", readX, a)
	flush()
	edit := func(change map[string]any, dry bool) {
		callReadSet(t, s, "apply_text_edits", map[string]any{"project": readSetProject, "changes": []any{change}, "dry_run": dry}, b)
		flush()
	}
	edit(map[string]any{"path": "x.go", "op": "replace", "expected_sha256": filerev.SHA256([]byte(v3)),
		"edits": []any{map[string]any{"old_text": "3", "new_text": "4"}}}, true)
	if r := callReadSet(t, s, "read_files", other, a); r.ChangedSinceRead != nil {
		t.Fatalf("a dry run was told: %+v", r.ChangedSinceRead)
	}
	edit(map[string]any{"path": "x.go", "op": "delete", "expected_sha256": filerev.SHA256([]byte(v3))}, false)
	r = callReadSet(t, s, "read_files", other, a)
	if n := r.ChangedSinceRead; n == nil || len(n.Files) != 1 || n.Files[0].Path != "x.go" || n.Files[0].ChangedBy != b || n.Files[0].SHA256 != "" {
		t.Fatalf("after B's delete A got %+v", r.ChangedSinceRead)
	}
}

// TestReadSetNoticesMCP: over MCP, with the sessions named as business
// sessions (session_id) rather than recorders, B's write reaches A's next
// result as changed_since_read (in structuredContent and the sidecar),
// once; close_session forgets A's read set.
func TestReadSetNoticesMCP(t *testing.T) {
	dir := rawProjectDir(t)
	s := startApp(t, t.TempDir(), "rs="+dir)
	defer s.stop(t)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := connectMCP(t, s, "", nil)
	var a, b string
	decodeInto(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": readSetProject, "instruction": "read"}).Output["session_id"], &a)
	decodeInto(t, mcpOK(t, cs, "work_on_project", map[string]any{"project": readSetProject, "instruction": "edit"}).Output["session_id"], &b)
	read := func(session, path string) *readset.Notices {
		t.Helper()
		r, raw := callMCP(t, cs, "read_files", map[string]any{"project": readSetProject, "session_id": session,
			"files": []any{map[string]any{"path": path}}}, nil)
		var n struct {
			N *readset.Notices `json:"changed_since_read"`
		}
		if !r.Success || json.Unmarshal(raw, &n) != nil {
			t.Fatalf("read_files: %+v", r.Error)
		}
		if err := s.a.ReadSets.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return n.N
	}
	read(a, "x.go")
	mcpOK(t, cs, "write_project_file", map[string]any{"project": readSetProject, "session_id": b, "path": "x.go",
		"content": "package y\n", "expected_sha256": filerev.SHA256([]byte("package x\n"))})
	if err := s.a.ReadSets.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := read(a, "a.txt"); n == nil || len(n.Files) != 1 || n.Files[0].Path != "x.go" || n.Files[0].ChangedBy != b {
		t.Fatalf("A's next MCP result carried %+v", n)
	}
	if n := read(a, "a.txt"); n != nil {
		t.Fatalf("told twice: %+v", n)
	}
	// Closing A forgets its read set.
	if rs, err := s.a.Stores.ReadSets.Reads(ctx, a, readSetProject); err != nil || len(rs) == 0 {
		t.Fatalf("A's read set before close: %v %v", rs, err)
	}
	mcpOK(t, cs, "close_session", map[string]any{"session_id": a})
	if err := s.a.ReadSets.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if rs, err := s.a.Stores.ReadSets.Reads(ctx, a, readSetProject); err != nil || len(rs) != 0 {
		t.Fatalf("A's read set after close: %v %v", rs, err)
	}
}
