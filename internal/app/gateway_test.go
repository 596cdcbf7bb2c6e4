package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authdb"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/gateway"
)

// Tests of the tool profiles and the gateway (decision 0024), through the
// real HTTP server and go-sdk clients.

// hiddenTool is a tool the core profile does not list.
const hiddenTool = "project_overview"

// journalSize is the number of records of the evidence journal, once the
// read-only appends in flight are done.
func journalSize(t *testing.T, s *server) uint64 {
	t.Helper()
	s.a.WaitEvidence()
	cp, err := s.a.Evidence.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cp.Size
}

// newestRecord is the newest evidence record of session id.
func newestRecord(t *testing.T, s *server, id string) evidence.Record {
	t.Helper()
	s.a.WaitEvidence()
	entries, err := s.a.Evidence.SessionRecords(context.Background(), id, 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("session records of %s: %v %d", id, err, len(entries))
	}
	return entries[0].Record
}

func TestGatewayListAndDescribe(t *testing.T) {
	s := startApp(t, t.TempDir())
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tl := range lt.Tools {
		listed[tl.Name] = true
	}
	if listed[hiddenTool] || !listed[gateway.CallTool] || !listed["read_files"] {
		t.Fatalf("core tools/list: %v", listed)
	}

	r, _ := callMCP(t, cs, gateway.ListTools, nil, nil)
	var catalog []gateway.Entry
	if !r.Success || json.Unmarshal(r.Output["tools"], &catalog) != nil || str(t, r.Output["profile"]) != gateway.Core {
		t.Fatalf("list_tools: %+v", r)
	}
	all := s.a.Kernel.Registry().Tools()
	if len(catalog) != len(all) {
		t.Fatalf("list_tools names %d tools, the registry holds %d", len(catalog), len(all))
	}
	for i, e := range catalog {
		if e.Name != all[i].Name || e.Listed != listed[e.Name] || e.Summary == "" || len(e.Summary) > len(all[i].Description) {
			t.Errorf("list_tools entry %+v (tools/list lists it: %v)", e, listed[e.Name])
		}
	}

	// describe_tool gives a hidden tool's entry exactly as the full
	// profile lists it.
	full := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolProfile = gateway.Full })
	defer full.stop(t)
	flt, err := connectMCP(t, full, "", nil).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, tl := range flt.Tools {
		if tl.Name == hiddenTool {
			want, _ = json.Marshal(tl)
		}
	}
	r, _ = callMCP(t, cs, gateway.DescribeTool, map[string]any{"tool": hiddenTool}, nil)
	var got, wantV any
	json.Unmarshal(r.Output["tool"], &got)
	json.Unmarshal(want, &wantV)
	if gb, _ := json.Marshal(got); !r.Success || want == nil || string(gb) != string(mustJSON(wantV)) {
		t.Fatalf("describe_tool %s:\n got %s\nwant %s", hiddenTool, gb, want)
	}

	// An unknown name: unknown_tool, for describe_tool as for call_tool.
	r, _ = callMCP(t, cs, gateway.DescribeTool, map[string]any{"tool": "no_such_tool"}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "unknown_tool" {
		t.Fatalf("describe_tool of an unknown tool: %+v", r)
	}
	// Malformed gateway arguments are invalid_arguments.
	r, _ = callMCP(t, cs, gateway.ListTools, map[string]any{"recording_session_id": "x"}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "invalid_arguments" {
		t.Fatalf("list_tools with an argument: %+v", r)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestGatewayCallsHiddenTool: a hidden tool is called by name (tools/call)
// and through call_tool; each is one kernel call, recorded once under the
// hidden tool's name, in the session its recording_session_id names, with
// the same result as the direct call.
func TestGatewayCallsHiddenTool(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "Look around."}, nil)
	sid := str(t, w.Output["session_id"])
	args := map[string]any{"project": rawProjectID, "recording_session_id": sid}

	n0, e0 := journalSize(t, s), rawEvents(t, s, sid)
	direct, _ := callMCP(t, cs, hiddenTool, args, nil)
	n1, e1 := journalSize(t, s), rawEvents(t, s, sid)
	viaGateway, _ := callMCP(t, cs, gateway.CallTool, map[string]any{"tool": hiddenTool, "arguments": args}, nil)
	n2, e2 := journalSize(t, s), rawEvents(t, s, sid)
	if !direct.Success || !viaGateway.Success || string(direct.Output["file_count"]) != string(viaGateway.Output["file_count"]) {
		t.Fatalf("direct %+v\nvia call_tool %+v", direct, viaGateway)
	}
	if n1-n0 != 1 || n2-n1 != 1 {
		t.Fatalf("evidence records: %d for the direct call, %d for call_tool; want 1 each", n1-n0, n2-n1)
	}
	if e1-e0 != e2-e1 {
		t.Fatalf("ledger events: %d for the direct call, %d for call_tool", e1-e0, e2-e1)
	}
	rec := newestRecord(t, s, sid)
	if rec.Tool != hiddenTool || rec.Binding != evidence.BindingVerified || rec.Outcome != evidence.OutcomeOK || rec.ErrorKind != "" {
		t.Fatalf("call_tool's record: %+v", rec)
	}

	// A hidden mutating tool with a business session: the same ledger
	// events as a direct call, and its one record names it.
	const mutating = "update_session_context"
	margs := map[string]any{"session_id": sid, "default_shell": "bash"}
	e0 = rawEvents(t, s, sid)
	direct, _ = callMCP(t, cs, mutating, margs, nil)
	e1, n1 = rawEvents(t, s, sid), journalSize(t, s)
	viaGateway, _ = callMCP(t, cs, gateway.CallTool, map[string]any{"tool": mutating, "arguments": margs}, nil)
	e2, n2 = rawEvents(t, s, sid), journalSize(t, s)
	if !direct.Success || !viaGateway.Success || e1 == e0 || e2-e1 != e1-e0 || n2-n1 != 1 {
		t.Fatalf("%s: direct %+v (%d events), via call_tool %+v (%d events, %d records)", mutating, direct.Error, e1-e0, viaGateway.Error, e2-e1, n2-n1)
	}
	if rec := newestRecord(t, s, sid); rec.Tool != mutating || rec.Outcome != evidence.OutcomeOK {
		t.Fatalf("call_tool's record of %s: %+v", mutating, rec)
	}

	// Session claims are judged as for a direct call: another authority
	// group's session is refused with the same bytes.
	other, _, err := s.a.Auth.CreateToken(context.Background(), "other", "someone-else", []auth.Scope{auth.ScopeProjectRead, auth.ScopeProjectWrite})
	if err != nil {
		t.Fatal(err)
	}
	e0 = rawEvents(t, s, sid)
	d := rawCall(t, s, other, mutating, margs)
	v := rawCall(t, s, other, gateway.CallTool, map[string]any{"tool": mutating, "arguments": margs})
	if d.StructuredContent.Success || d.Content[0].Text != v.Content[0].Text || rawEvents(t, s, sid) != e0 {
		t.Fatalf("another group's session:\ndirect    %s\ncall_tool %s", d.Content[0].Text, v.Content[0].Text)
	}
}

// TestGatewayUnknownTool: call_tool naming no tool is unknown_tool; its one
// record is a refusal (never a success) and the session is untouched.
func TestGatewayUnknownTool(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	cs := connectMCP(t, s, "", nil)
	w, _ := callMCP(t, cs, "work_on_project", map[string]any{"project": rawProjectID, "instruction": "Look around."}, nil)
	sid := str(t, w.Output["session_id"])
	n0, e0 := journalSize(t, s), rawEvents(t, s, sid)
	r, _ := callMCP(t, cs, gateway.CallTool, map[string]any{"tool": "no_such_tool",
		"arguments": map[string]any{"project": rawProjectID, "recording_session_id": sid}}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "unknown_tool" {
		t.Fatalf("call_tool of an unknown tool: %+v", r)
	}
	if n := journalSize(t, s); n != n0+1 {
		t.Fatalf("%d evidence records, want 1 (the refusal)", n-n0)
	}
	if e := rawEvents(t, s, sid); e != e0 {
		t.Fatalf("the session got %d events", e-e0)
	}
	rec := newestRecord(t, s, sid)
	if rec.Tool != "no_such_tool" || rec.Outcome != evidence.OutcomeRefused || rec.ErrorKind != "unknown_tool" {
		t.Fatalf("the refusal's record: %+v", rec)
	}
	// A call_tool without a tool name is invalid_arguments, recorded as a
	// refused call_tool.
	r, _ = callMCP(t, cs, gateway.CallTool, map[string]any{"arguments": map[string]any{}}, nil)
	if r.Success || r.Error == nil || r.Error.Kind != "invalid_arguments" {
		t.Fatalf("call_tool without tool: %+v", r)
	}
}

// TestGatewayScopeDenied: a hidden tool the caller lacks the scope for is
// denied through call_tool exactly as when called directly (a 403 step-up
// before the kernel: no evidence record), and list_tools does not name it.
func TestGatewayScopeDenied(t *testing.T) {
	dir := rawProjectDir(t)
	s := startApp(t, t.TempDir(), "p="+dir)
	defer s.stop(t)
	reader, _, err := s.a.Auth.CreateToken(context.Background(), "reader", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	const hidden = "run_script" // requires job:run
	args := map[string]any{"project": rawProjectID, "interpreter": "sh", "script": "echo hi > made.txt"}
	n0 := journalSize(t, s)
	direct, _ := rawStepUp(t, s, reader, hidden, toolScopes(t, s, hidden), args)
	via, _ := rawStepUp(t, s, reader, gateway.CallTool, toolScopes(t, s, hidden), map[string]any{"tool": hidden, "arguments": args})
	if string(direct.Data) != string(via.Data) {
		t.Fatalf("denied differently:\ndirect    %s\ncall_tool %s", direct.Data, via.Data)
	}
	if n := journalSize(t, s); n != n0 {
		t.Fatalf("%d evidence records for two calls refused before the kernel", n-n0)
	}
	if _, err := os.Stat(filepath.Join(dir, "made.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied script ran: %v", err)
	}
	list := rawCall(t, s, reader, gateway.ListTools, map[string]any{})
	var catalog []gateway.Entry
	json.Unmarshal(list.StructuredContent.Output["tools"], &catalog)
	if len(catalog) == 0 || slices.ContainsFunc(catalog, func(e gateway.Entry) bool { return e.Name == hidden }) {
		t.Fatalf("list_tools for a reader: %+v", catalog)
	}
}

// TestToolProfileConfig: a named list is the profile; a name that is no
// tool stops the server at start-up with an error naming it, before any
// store is opened.
func TestToolProfileConfig(t *testing.T) {
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.ToolList = []string{"read_files", "git_diff"} })
	names, _ := toolsListBudget(t, s, rawModernVersion)
	s.stop(t)
	if want := []string{"call_tool", "describe_tool", "git_diff", "list_tools", "read_files"}; !slices.Equal(names, want) {
		t.Fatalf("tool_list profile lists %v, want %v", names, want)
	}

	data := t.TempDir()
	toml := "tool_list = [\"read_files\", \"no_such_tool\"]\n"
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(data, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	const want = `config: config: tool_list: unknown tool "no_such_tool"`
	var ce *app.ConfigError
	if a != nil || err == nil || err.Error() != want || !errors.As(err, &ce) {
		t.Fatalf("Open with an unknown tool in tool_list: %v, %q; want %q", a, err, want)
	}
	entries, _ := os.ReadDir(data)
	if len(entries) != 1 {
		t.Fatalf("the data directory holds %d entries after the refused start, want only %s", len(entries), app.ConfigFile)
	}

	// An unknown profile name is a configuration error too.
	if err := os.WriteFile(filepath.Join(data, app.ConfigFile), []byte("tool_profile = \"everything\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.LoadConfig(data, func(string) string { return "" }); err == nil ||
		err.Error() != `config: config: tool_profile: "everything" is not core or full` {
		t.Fatalf("tool_profile everything: %v", err)
	}
}

// TestDocsCoreProfile keeps docs/tools.md's core profile row equal to
// gateway.CoreTools.
func TestDocsCoreProfile(t *testing.T) {
	b, err := os.ReadFile("../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `core` (default) | "); ok {
			for _, f := range strings.Split(strings.TrimSuffix(rest, " |"), ", ") {
				names = append(names, strings.Trim(f, "`"))
			}
		}
	}
	if !slices.Equal(names, gateway.CoreTools) {
		t.Fatalf("docs/tools.md core profile %v, gateway.CoreTools %v", names, gateway.CoreTools)
	}
}

// TestTokenToolProfile: a token with its own tool profile gets that list
// (cached privately) and list_tools marks it; the server's profile stays
// the others'. A profile naming no tool is refused at creation, and a
// stored one stops the server at start-up, naming token and tool.
func TestTokenToolProfile(t *testing.T) {
	data := t.TempDir()
	s := startApp(t, data, "p="+rawProjectDir(t))
	ctx := context.Background()
	narrow, tok, err := s.a.Auth.CreateTokenWithTools(ctx, "narrow", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, []string{"read_files"})
	if err != nil {
		t.Fatal(err)
	}
	list := func(token string) (names []string, scope string) {
		r := rawModern(t, s, token, 1, "tools/list", nil)
		var res struct {
			Tools      []struct{ Name string }
			CacheScope string `json:"cacheScope"`
		}
		if r.Msg == nil || json.Unmarshal(r.Msg.Result, &res) != nil {
			t.Fatalf("tools/list: %s", r)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return names, res.CacheScope
	}
	if names, scope := list(narrow); !slices.Equal(names, []string{"call_tool", "describe_tool", "list_tools", "read_files"}) || scope != "private" {
		t.Fatalf("the narrow token's tools/list: %v (%s)", names, scope)
	}
	if names, scope := list(s.token); len(names) != len(gateway.CoreTools)+len(gateway.Names) || scope != "public" {
		t.Fatalf("the admin's tools/list: %v (%s)", names, scope)
	}
	lt := rawCall(t, s, narrow, gateway.ListTools, map[string]any{})
	var catalog []gateway.Entry
	json.Unmarshal(lt.StructuredContent.Output["tools"], &catalog)
	for _, e := range catalog {
		if e.Listed != (e.Name == "read_files") {
			t.Errorf("list_tools for the narrow token: %+v", e)
		}
	}
	// Hidden from its list, project_overview is still callable.
	if r := rawCall(t, s, narrow, hiddenTool, map[string]any{"project": rawProjectID}); !r.StructuredContent.Success {
		t.Fatalf("a hidden tool for the narrow token: %+v", r.StructuredContent.Error)
	}

	if _, _, err := s.a.Auth.CreateTokenWithTools(ctx, "bad", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, []string{"read_files", "no_such_tool"}); err == nil ||
		err.Error() != `invalid_arguments: tool profile: unknown tool "no_such_tool"` {
		t.Fatalf("a token naming no tool: %v", err)
	}
	if toks, _ := s.a.Auth.ListTokens(ctx); len(toks) != 2 { // the admin's and narrow
		t.Fatalf("%d tokens after a refused creation", len(toks))
	}
	s.stop(t)

	// A stored profile naming no tool (as after an upgrade that removed
	// it) stops the next start.
	st, err := authdb.Open(ctx, filepath.Join(data, authdb.FileName))
	if err != nil {
		t.Fatal(err)
	}
	bad := tok
	bad.ID, bad.Tools = "tok_00000000000000ff", []string{"no_such_tool"}
	if err := st.Create(ctx, bad, strings.Repeat("ab", 32)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	cfg, err := app.LoadConfig(data, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	a, err := app.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	const want = `config: auth.db: token tok_00000000000000ff tools: unknown tool "no_such_tool"`
	if a != nil || err == nil || err.Error() != want {
		t.Fatalf("start with a stored profile naming no tool: %v; want %q", err, want)
	}
}
