package app_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/gateway"
)

// Regression tests of issue 11 item 1 ("parse once at the edge") and the
// first sentence of item 10, through REST, GPT Actions and MCP (both eras).

// rawArgsCall sends a modern tools/call whose arguments are the exact
// bytes args (json.Marshal would drop a duplicate key).
func rawArgsCall(t *testing.T, s *server, version, tool, args string) rawCallResult {
	t.Helper()
	meta, _ := json.Marshal(rawMeta(rawModernVersion))
	hdr := rawHeaders("tools/call", tool)
	params := `{"name":"` + tool + `","arguments":` + args + `,"_meta":` + string(meta) + `}`
	if version == rawLegacyVersion {
		hdr = map[string]string{"MCP-Protocol-Version": rawLegacyVersion}
		params = `{"name":"` + tool + `","arguments":` + args + `}`
	}
	r := rawPost(t, s, s.token, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+params+`}`), hdr)
	if r.Status != http.StatusOK || r.Msg == nil || r.Msg.Error != nil {
		t.Fatalf("tools/call %s (%s): %s", tool, version, r)
	}
	var res rawCallResult
	if err := json.Unmarshal(r.Msg.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDuplicateKeysRefusedWithWrapperMembers reproduces `{"a":1,"a":2}`
// alone and with a context_request (or recording_session_id) member: both
// are refused with invalid_arguments, nothing reaches the kernel and
// nothing is recorded, through GPT Actions and MCP in both eras.
func TestDuplicateKeysRefusedWithWrapperMembers(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	sess := rawStartSession(t, s, s.token, "duplicate keys")
	files := `"project":"` + rawProjectID + `","files":[{"path":"a.txt"}]`
	cases := map[string]string{
		"alone":               `{"a":1,"a":2}`,
		"with context":        `{"a":1,"a":2,"context_request":["webcodex.workflow"]}`,
		"with recorder":       `{` + files + `,"a":1,"a":2,"recording_session_id":"` + sess + `"}`,
		"nested with context": `{"project":"` + rawProjectID + `","files":[{"path":"a.txt","path":"AGENTS.md"}],"context_request":["webcodex.workflow"],"recording_session_id":"` + sess + `"}`,
	}
	for name, args := range cases {
		for _, version := range []string{rawModernVersion, rawLegacyVersion} {
			t.Run("MCP "+version+" "+name, func(t *testing.T) {
				before, calls := rawEvents(t, s, sess), s.a.Kernel.Stats().Calls
				res := rawArgsCall(t, s, version, "read_files", args)
				rawWantToolError(t, res, "invalid_arguments")
				if !strings.Contains(res.StructuredContent.Error.Message, "duplicate key") || res.StructuredContent.Context != nil {
					t.Fatalf("refusal: %+v context %v", res.StructuredContent.Error, res.StructuredContent.Context)
				}
				refusedOnce(t, s, calls)
				if after := rawEvents(t, s, sess); after != before {
					t.Fatalf("refused call recorded %d events", after-before)
				}
			})
		}
		t.Run("GPT Actions "+name, func(t *testing.T) {
			before, calls := rawEvents(t, s, sess), s.a.Kernel.Stats().Calls
			code, data := s.do(t, s.token, http.MethodPost, "/api/actions/read_files", []byte(args))
			var res result
			json.Unmarshal(data, &res)
			if code != http.StatusBadRequest || res.Error == nil || res.Error.Kind != "invalid_arguments" || !strings.Contains(res.Error.Message, "duplicate key") {
				t.Fatalf("HTTP %d %s", code, data)
			}
			refusedOnce(t, s, calls)
			if after := rawEvents(t, s, sess); after != before {
				t.Fatalf("refused call recorded %d events", after-before)
			}
		})
	}
	t.Run("OKNoDuplicate", func(t *testing.T) {
		// Positive control: the same body without the duplicate runs.
		res := rawArgsCall(t, s, rawModernVersion, "read_files", `{`+files+`,"context_request":["webcodex.workflow"]}`)
		if !res.StructuredContent.Success || res.StructuredContent.Context["webcodex.workflow"].Status != "available" {
			t.Fatalf("%+v", res.StructuredContent)
		}
	})
}

// TestContextRequestOnlyModern: legacy tools/list advertises
// context_request on no tool, modern tools/list on every tool. (A legacy
// call carrying it is refused as an unknown argument with no materials, and
// the modern era serves them: the testdata/mcp context_request
// transcripts.)
func TestContextRequestOnlyModern(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	for _, version := range []string{rawModernVersion, rawLegacyVersion} {
		hdr := map[string]string{"MCP-Protocol-Version": version}
		body := rawBody(1, "tools/list", nil, "")
		if version == rawModernVersion {
			hdr = rawHeaders("tools/list", "")
			body = rawBody(1, "tools/list", nil, rawModernVersion)
		}
		r := rawPost(t, s, s.token, body, hdr)
		if r.Msg == nil || r.Msg.Error != nil {
			t.Fatalf("tools/list %s: %s", version, r)
		}
		var list struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		}
		json.Unmarshal(r.Msg.Result, &list)
		if len(list.Tools) < 20 {
			t.Fatalf("%s: %d tools", version, len(list.Tools))
		}
		for _, tl := range list.Tools {
			if slices.Contains(gateway.Names, tl.Name) {
				continue // the gateway tools take no wrapper members
			}
			_, has := tl.InputSchema.Properties["context_request"]
			if has != (version == rawModernVersion) || tl.InputSchema.Properties["recording_session_id"] == nil {
				t.Fatalf("%s: %s context_request listed %v", version, tl.Name, has)
			}
		}
	}
}

// TestAuditNamesWhatRan: case-variant keys in an MCP tools/call body do
// not change the tool, method or project of the audit row (the SDK
// dispatches the exact keys), and an isError tool result is a failed row
// with its error kind.
func TestAuditNamesWhatRan(t *testing.T) {
	dir := rawProjectDir(t)
	s := startApp(t, t.TempDir(), "p="+dir, "q="+rawProjectDir(t))
	defer s.stop(t)
	meta, _ := json.Marshal(rawMeta(rawModernVersion))
	read := `{"project":"agent:local:p","files":[{"path":"a.txt"}]}`
	for i, c := range []struct{ name, body string }{
		{"NAME and Arguments beside the real keys", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_files","arguments":` + read +
			`,"NAME":"write_project_file","Arguments":{"project":"agent:local:q"},"_meta":` + string(meta) + `}}`},
		{"METHOD beside method", `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"initialize","params":{"name":"read_files","arguments":` + read +
			`,"_meta":` + string(meta) + `}}`},
		{"Arguments after arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_files","arguments":` + read +
			`,"Arguments":{"project":"agent:local:q","files":[{"path":"a.txt"}]},"_meta":` + string(meta) + `}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "case-variant-" + string(rune('a'+i))
			hdr := rawHeaders("tools/call", "read_files")
			hdr["x-action-session-id"] = id
			r := rawPost(t, s, s.token, []byte(c.body), hdr)
			if r.Msg == nil || r.Msg.Error != nil {
				t.Fatalf("%s", r)
			}
			var res rawCallResult
			json.Unmarshal(r.Msg.Result, &res)
			e := nthEvent(t, s, id, 1)
			if !res.StructuredContent.Success || e.ActionName != "read_files" || e.Summary["tool"] != "read_files" ||
				e.Project != rawProjectID || e.Operation != "mcp" || e.Status != audit.EventSuccess {
				t.Fatalf("result success=%v; row %+v", res.StructuredContent.Success, e)
			}
		})
	}
	t.Run("ErrToolFailureIsAFailedRow", func(t *testing.T) {
		hdr := rawHeaders("tools/call", "read_files")
		hdr["x-action-session-id"] = "is-error"
		args := map[string]any{"project": rawProjectID, "files": []any{map[string]any{"path": "missing.go"}}}
		r := rawPost(t, s, s.token, rawBody(1, "tools/call", map[string]any{"name": "read_files", "arguments": args}, rawModernVersion), hdr)
		var res rawCallResult
		if r.Msg == nil || json.Unmarshal(r.Msg.Result, &res) != nil || !res.IsError {
			t.Fatalf("want an isError result: %s", r)
		}
		e := nthEvent(t, s, "is-error", 1)
		m := ergonomicsOf(t, e)
		if e.Status != audit.EventFailed || e.HTTPStatus != 200 || m == nil || m.ErrorKind != res.StructuredContent.Error.Kind || m.Success {
			t.Fatalf("row %+v ergonomics %+v (error %+v)", e, m, res.StructuredContent.Error)
		}
	})
	t.Run("OKNotificationHasNoRow", func(t *testing.T) {
		hdr := map[string]string{"MCP-Protocol-Version": rawModernVersion, "Mcp-Method": "notifications/cancelled", "x-action-session-id": "notify"}
		r := rawPost(t, s, s.token, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`), hdr)
		if r.Status != http.StatusAccepted {
			t.Fatalf("notification: %s", r)
		}
		// A later request in the same audit session is its first row.
		hdr = rawHeaders("tools/list", "")
		hdr["x-action-session-id"] = "notify"
		rawPost(t, s, s.token, rawBody(2, "tools/list", nil, rawModernVersion), hdr)
		if e := nthEvent(t, s, "notify", 1); e.ActionName != "toolsList" {
			t.Fatalf("first row of the session: %+v", e)
		}
	})
}

// TestResultDigestReproducible: a result holding `a<b && c>d` is digested
// over exactly the bytes each transport documents (docs/evidence.md): the
// REST body without its final newline, the first MCP text block. The tool
// is write_project_file (its output names the path `a<b && c>d.txt`): a
// mutating call's record is durable before its result returns.
func TestResultDigestReproducible(t *testing.T) {
	s := startApp(t, t.TempDir(), "p="+rawProjectDir(t))
	defer s.stop(t)
	sess := rawStartSession(t, s, s.token, "digest")
	lastDigest := func() string {
		t.Helper()
		_, ev := evidenceOf(t, s, s.token, sess)
		for _, r := range ev.Records { // newest first
			if r.Record.Tool == "write_project_file" {
				return r.Record.ResultDigest
			}
		}
		t.Fatalf("no write_project_file record: %+v", ev)
		return ""
	}
	hash := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	args := func(content string) map[string]any {
		return map[string]any{"project": rawProjectID, "path": "a<b && c>d.txt", "content": content, "recording_session_id": sess}
	}

	body, _ := json.Marshal(args("one\n"))
	code, data := s.do(t, s.token, http.MethodPost, "/api/actions/write_project_file", body)
	if code != 200 || !strings.Contains(string(data), `"path":"a<b && c>d.txt"`) || !strings.HasSuffix(string(data), "}\n") {
		t.Fatalf("REST: %d %s", code, data)
	}
	if got, want := hash([]byte(strings.TrimSuffix(string(data), "\n"))), lastDigest(); got != want {
		t.Fatalf("REST body digest %s, journal %s", got, want)
	}

	args2 := args("two\n")
	args2["expected_sha256"] = hash([]byte("one\n"))
	res := rawCall(t, s, s.token, "write_project_file", args2)
	if !res.StructuredContent.Success || !strings.Contains(res.Content[0].Text, `"path":"a<b && c>d.txt"`) {
		t.Fatalf("MCP: %+v %s", res.StructuredContent.Error, res.Content[0].Text)
	}
	if got, want := hash([]byte(res.Content[0].Text)), lastDigest(); got != want {
		t.Fatalf("MCP first text block digest %s, journal %s", got, want)
	}
}

// refusedOnce checks that exactly one call reached the kernel since it
// counted calls, refused there (so it is journaled) and never run: the
// transport hands an envelope it refused to the kernel as a Refusal.
func refusedOnce(t *testing.T, s *server, calls int64) {
	t.Helper()
	if got := s.a.Kernel.Stats().Calls; got != calls+1 {
		t.Fatalf("the refused call was dispatched %d times, want once (as a refusal)", got-calls)
	}
}
