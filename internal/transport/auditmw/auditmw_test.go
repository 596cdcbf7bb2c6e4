package auditmw

import (
	"net/http/httptest"
	"testing"

	"github.com/webcodex/webcodex/internal/audit"
)

func TestOutcomeFromReports(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		f      facts
		want   string
	}{
		{"tool failed with HTTP 200 (MCP isError)", 200, facts{methodSeen: true, method: "tools/call", toolSeen: true}, audit.EventFailed},
		{"tool succeeded", 200, facts{toolSeen: true, succeeded: true}, audit.EventSuccess},
		{"JSON-RPC error with HTTP 200 (legacy stream)", 200, facts{methodSeen: true, method: "tools/call", failed: true}, audit.EventFailed},
		{"no report, HTTP 400", 400, facts{}, audit.EventFailed},
		{"no report, HTTP 200 (REST tools/list)", 200, facts{}, audit.EventSuccess},
		{"tool succeeded but HTTP 500", 500, facts{toolSeen: true, succeeded: true}, audit.EventFailed},
	} {
		if got := outcome(c.status, c.f); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDescribeNamesWhatRan(t *testing.T) {
	r := httptest.NewRequest("POST", "/mcp", nil)
	ev := describe(OpMCP, r, facts{methodSeen: true, method: "tools/call", name: "read_files", project: "agent:local:p", toolSeen: true, succeeded: true})
	if ev.ActionName != "read_files" || ev.Project != "agent:local:p" || ev.Summary["tool"] != "read_files" || ev.Summary["transport"] != "mcp" {
		t.Fatalf("tools/call: %+v", ev)
	}
	ev = describe(OpMCP, r, facts{methodSeen: true, method: "initialize"})
	if ev.ActionName != "initialize" || ev.Project != "" || ev.Summary["tool"] != nil {
		t.Fatalf("initialize: %+v", ev)
	}
	ev = describe(OpMCP, r, facts{})
	if ev.ActionName != "" || ev.Operation != OpMCP {
		t.Fatalf("unreported: %+v", ev)
	}
	for _, c := range []struct {
		f      facts
		status int
		want   bool
	}{
		{facts{methodSeen: true, method: "notifications/initialized"}, 202, true},
		{facts{methodSeen: true, method: "tools/call"}, 202, false},
		{facts{}, 202, true},
		{facts{}, 400, false},
	} {
		if got := notification(c.f, c.status); got != c.want {
			t.Errorf("notification(%+v, %d) = %v", c.f, c.status, got)
		}
	}
}
