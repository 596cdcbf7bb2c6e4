package audit_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"IdleReuse seconds", int64(audit.IdleReuse.Seconds()), 1800},
		{"MaxSessionIDChars", audit.MaxSessionIDChars, 120},
		{"DefaultSessionsLimit", audit.DefaultSessionsLimit, 50},
		{"MaxSessionsLimit", audit.MaxSessionsLimit, 200},
		{"DefaultEventsLimit", audit.DefaultEventsLimit, 50},
		{"MaxEventsLimit", audit.MaxEventsLimit, 200},
		{"DefaultStatsSessions", audit.DefaultStatsSessions, 20},
		{"MaxStatsSessions", audit.MaxStatsSessions, 50},
		{"MaxStatsEventsOneSession", audit.MaxStatsEventsOneSession, 500},
		{"MaxStatsEventsPerSession", audit.MaxStatsEventsPerSession, 200},
		{"MaxEventsPerSession", audit.MaxEventsPerSession, 500},
		{"MaxSummaryTextChars", audit.MaxSummaryTextChars, 500},
		{"MaxFirstLinePreview", audit.MaxFirstLinePreview, 80},
		{"ErgonomicsSchemaVersion", audit.ErgonomicsSchemaVersion, 6},
		{"ToolSurfaceSchemaVersion", audit.ToolSurfaceSchemaVersion, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestClampLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 50}, {1, 1}, {200, 200}, {201, 200}, {1 << 30, 200}} {
		got, err := audit.ClampLimit(c.in, 50, 200)
		if err != nil || got != c.want {
			t.Errorf("ClampLimit(%d) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if _, err := audit.ClampLimit(-1, 50, 200); !failure.Is(err, failure.InvalidArguments) {
		t.Errorf("negative: %v", err)
	}
}

func TestValidateSessionID(t *testing.T) {
	if id, err := audit.ValidateSessionID("  my-audit 1 \t"); err != nil || id != "my-audit 1" {
		t.Fatalf("trim: %q %v", id, err)
	}
	if _, err := audit.ValidateSessionID(strings.Repeat("é", 120)); err != nil {
		t.Fatalf("120 runes: %v", err)
	}
	for _, bad := range []string{strings.Repeat("a", 121), "a\x00b", "a\nb", "a\x7fb", "a\u200bb", "a\xffb"} {
		if _, err := audit.ValidateSessionID(bad); !failure.Is(err, failure.InvalidArguments) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// refusedIDs are audit ids that must never become audit sessions, with
// what the refusal must say.
var refusedIDs = []struct{ id, why string }{
	{"wc_sess_0123456789abcdef0123456789abcdef", "Workflow Session id"},
	{"  WC_SESS_0123456789abcdef  ", "Workflow Session id"},
	{"wc_pat_AuditIdToken0123456789abcdef", "looks like a credential"},
	{"ghp_AuditIdToken0123456789abcdefABCD", "looks like a credential"},
	{"github_pat_11AuditIdToken0123456789_abcdef", "looks like a credential"},
	{"sk-AuditIdToken0123456789abcdef", "looks like a credential"},
	{"xoxb-1234567890-AuditIdToken", "looks like a credential"},
	{"AKIAAUDITID01234567Z", "looks like a credential"},
	{"my-audit ghp_AuditIdToken0123456789abcdefABCD", "looks like a credential"},
	{"Bearer AuditIdToken0123456789", "looks like a credential"},
}

// TestValidateSessionIDRefusesWorkflowIDsAndCredentials: each shape is
// refused with invalid_arguments and a message that says why and never
// repeats the id; look-alikes that are not those shapes stay accepted.
func TestValidateSessionIDRefusesWorkflowIDsAndCredentials(t *testing.T) {
	for _, c := range refusedIDs {
		id, err := audit.ValidateSessionID(c.id)
		if !failure.Is(err, failure.InvalidArguments) || id != "" {
			t.Errorf("%q: %q %v, want invalid_arguments", c.id, id, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.why) || strings.Contains(msg, strings.TrimSpace(c.id)) ||
			strings.Contains(msg, "0123456789") {
			t.Errorf("%q: message %q must say %q and never echo the id", c.id, msg, c.why)
		}
	}
	for _, ok := range []string{"wc_session-notes", "my wc_sess_ notes", "task-sk", "ghp-review", "akia", "audit-2026-05-01"} {
		if id, err := audit.ValidateSessionID(ok); err != nil || id != ok {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}

func TestNewIDIsUUIDv4(t *testing.T) {
	id := audit.NewID()
	if len(id) != 36 || id[14] != '4' || strings.Count(id, "-") != 4 || id == audit.NewID() {
		t.Fatalf("bad id %q", id)
	}
}

func TestSanitizeSummary(t *testing.T) {
	in := map[string]any{
		"api_key":      "abc",
		"Auth-Token":   map[string]any{"x": 1},
		"stdout":       "out",
		"output_text":  "out",
		"command_text": "echo hi\nsecond line password=hunter2",
		"script":       []any{"bash", "-c", "ls"},
		"nested":       map[string]any{"note": "Bearer abcdefghijklmnop", "n": 3, "ok": true, "content": "x"},
		"long":         strings.Repeat("x", 5000),
		"list":         make([]any, 100),
	}
	out := audit.SanitizeSummary(in)
	if out["api_key"] != audit.RedactedMarker || out["Auth-Token"] != audit.RedactedMarker {
		t.Fatalf("secret keys: %v", out)
	}
	if _, ok := out["stdout"]; ok {
		t.Fatal("stdout kept")
	}
	if _, ok := out["output_text"]; ok {
		t.Fatal("output_text kept")
	}
	d := out["command_text"].(map[string]any)
	if d["kind"] != "command" || d["line_count"] != 2 || d["first_line_preview"] != "echo hi" || len(d["sha256"].(string)) != 64 {
		t.Fatalf("digest: %v", d)
	}
	if s := out["script"].(map[string]any); s["kind"] != "script" || s["first_line_preview"] != "bash -c ls" {
		t.Fatalf("argv digest: %v", s)
	}
	n := out["nested"].(map[string]any)
	if strings.Contains(n["note"].(string), "abcdefghijklmnop") || n["ok"] != true || fmt.Sprint(n["n"]) != "3" {
		t.Fatalf("nested: %v", n)
	}
	if _, ok := n["content"]; ok {
		t.Fatal("content kept")
	}
	if len(out["long"].(string)) != audit.MaxStringChars {
		t.Fatal("string not bounded")
	}
	if l := out["list"].([]any); len(l) != audit.MaxSummaryItems+1 || l[len(l)-1] != audit.TruncatedMarker {
		t.Fatalf("list bound: %d", len(l))
	}
	deep := map[string]any{}
	cur := deep
	for range 20 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	b, _ := json.Marshal(audit.SanitizeSummary(deep))
	if !strings.Contains(string(b), audit.TruncatedMarker) {
		t.Fatal("depth not bounded")
	}
}

func TestCommandDigestPreviewRedactedAndBounded(t *testing.T) {
	d := audit.CommandDigest("command", "curl -H 'Authorization: Bearer sekritsekritsekrit' "+strings.Repeat("a", 200))
	p := d["first_line_preview"].(string)
	if strings.Contains(p, "sekrit") || len([]rune(p)) > audit.MaxFirstLinePreview {
		t.Fatalf("preview %q", p)
	}
}

func TestEventViewHasNoAttribution(t *testing.T) {
	ev := audit.Event{EventView: audit.EventView{EventID: "e", SessionID: "s",
		IDs: map[string]string{"job_id": "j", "password": "[REDACTED]"}, Summary: map[string]any{"token": "[REDACTED]", "a": 1}},
		Attribution: audit.Attribution{PrincipalKind: "oauth2", PrincipalUserID: "u1", OAuthClientID: "c1"}}
	for _, v := range []any{ev, ev.View()} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		for k := range m {
			if strings.Contains(k, "principal") || strings.Contains(k, "oauth") || strings.Contains(k, "attribution") || strings.Contains(k, "client") {
				t.Fatalf("attribution key %q in %s", k, b)
			}
		}
		if strings.Contains(string(b), "u1") || strings.Contains(string(b), "c1") {
			t.Fatalf("attribution value leaked: %s", b)
		}
	}
	v := ev.View()
	if _, ok := v.IDs["password"]; ok {
		t.Fatal("read-time pass kept secret id key")
	}
	if _, ok := v.Summary["token"]; ok {
		t.Fatal("read-time pass kept secret summary key")
	}
	want := []string{"event_id", "session_id", "started_at", "ended_at", "duration_ms", "endpoint", "operation", "action_name", "project",
		"status", "http_status", "error_summary", "warning_summary", "changed_files", "ids", "summary", "request_bytes", "response_bytes"}
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	if len(m) != len(want) {
		t.Fatalf("view keys %v", m)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Fatalf("missing %s", k)
		}
	}
}

// TestSanitizeTelemetry: typed telemetry in a summary is normalized and
// redacted like any other value.
func TestSanitizeTelemetry(t *testing.T) {
	m := &audit.ModelErgonomics{ToolName: "ghp_" + strings.Repeat("a", 24), ToolCategory: "files", ErrorKind: "Bearer abcdefghijkl",
		ExecutionState: audit.ExecCompleted, EditSurface: "canonical", EditOutcome: "applied"}
	out := audit.SanitizeSummary(map[string]any{audit.SummaryErgonomics: m, audit.SummaryToolSurface: audit.ToolSurface{ProtocolEra: "wc_pat_0123456789abc"}})
	b, _ := json.Marshal(out)
	for _, bad := range []string{"ghp_", "Bearer", "wc_pat_"} {
		if strings.Contains(string(b), bad) {
			t.Fatalf("%q survived: %s", bad, b)
		}
	}
	if !strings.Contains(string(b), `"schema_version":6`) || !strings.Contains(string(b), `"edit_outcome":"applied"`) || !strings.Contains(string(b), `"schema_version":1`) {
		t.Fatalf("telemetry lost: %s", b)
	}
}
