package workflowdb

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowrow"
)

// headerSample is a session header as the store writes them.
func headerSample() workflow.Session {
	now := time.Date(2026, 12, 1, 17, 4, 5, 123456700, time.UTC)
	return workflow.Session{ID: "wc_sess_0123456789abcdef0123456789abcdef", Project: "agent:local:demo", Title: "fix the flaky test",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, OwnerFingerprint: "fp_0123456789abcdef",
		CreatedAt: now, UpdatedAt: now.Add(time.Millisecond), EventsObserved: 7,
		Counters: workflow.Counters{ToolCalls: 3, ToolFailures: 1, Instructions: 2, GuardDenials: 4}}
}

// TestEncodeHeaderIsJSONMarshal: the header's hand-written encoding is
// byte for byte json.Marshal's, for the shapes it writes itself and for
// those it leaves to json.Marshal.
func TestEncodeHeaderIsJSONMarshal(t *testing.T) {
	closed := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for name, change := range map[string]func(s *workflow.Session){
		"plain":             func(*workflow.Session) {},
		"closed":            func(s *workflow.Session) { s.Lifecycle, s.ClosedAt = workflow.Closed, &closed },
		"whole seconds":     func(s *workflow.Session) { s.UpdatedAt = closed },
		"zero times":        func(s *workflow.Session) { s.CreatedAt, s.UpdatedAt = time.Time{}.UTC(), time.Time{} },
		"year 9999":         func(s *workflow.Session) { s.UpdatedAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC) },
		"monotonic reading": func(s *workflow.Session) { s.UpdatedAt = time.Now().UTC() },
		"local time":        func(s *workflow.Session) { s.UpdatedAt = time.Now() },
		"fixed zone":        func(s *workflow.Session) { s.CreatedAt = s.CreatedAt.In(time.FixedZone("east", 2*3600+30*60)) },
		"cwd only":          func(s *workflow.Session) { s.ExecutionContext.DefaultCwd = "src/pkg" },
		"shell only":        func(s *workflow.Session) { s.ExecutionContext.DefaultShell = "bash" },
		"cwd and shell": func(s *workflow.Session) {
			s.ExecutionContext = workflow.ExecutionContext{DefaultCwd: "a b", DefaultShell: "sh"}
		},
		"retention truncated": func(s *workflow.Session) { s.RetentionTruncated = true },
		"negative counter":    func(s *workflow.Session) { s.Counters.ToolFailures = -1 },
		"empty job markers":   func(s *workflow.Session) { s.JobMarkers = []string{} },
		"one job marker":      func(s *workflow.Session) { s.JobMarkers = []string{"job_1"} },
		"job markers":         func(s *workflow.Session) { s.JobMarkers = []string{"job_1", "job_2", "job_3"} },
		"empty strings":       func(s *workflow.Session) { s.Title, s.Mode = "", "" },
		"html":                func(s *workflow.Session) { s.Title = "fix <the> & test" },
		"quote and backslash": func(s *workflow.Session) { s.Title = `say "hi" \ bye` },
		"control characters":  func(s *workflow.Session) { s.Title = "a\tb\nc\x00d\x7f" },
		"unicode":             func(s *workflow.Session) { s.Title = "fix ✓ \u2028 \u2029 é" },
		"invalid UTF-8":       func(s *workflow.Session) { s.Title = "bad \xff" },
		"escaped job marker":  func(s *workflow.Session) { s.JobMarkers = []string{"ok", "<job>"} },
		"escaped project":     func(s *workflow.Session) { s.Project = "agent:local:dé" },
	} {
		s := headerSample()
		change(&s)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := workflowrow.EncodeHeader(s); got != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// FuzzEncodeHeader: for any strings, instants and counters, the header's
// encoding is json.Marshal's.
func FuzzEncodeHeader(f *testing.F) {
	f.Add("fix the flaky test", "src", "job_1", int64(1764608645123456700), int64(7), true)
	f.Add("<&>\"\\\n\xff\u2028", "", "", int64(0), int64(-1), false)
	f.Fuzz(func(t *testing.T, title, cwd, job string, nanos, n int64, truncated bool) {
		s := headerSample()
		s.Title, s.ExecutionContext.DefaultCwd, s.UpdatedAt = title, cwd, time.Unix(0, nanos).UTC()
		s.EventsObserved, s.Counters.ToolCalls, s.RetentionTruncated = n, n/2, truncated
		if job != "" {
			s.JobMarkers = []string{job, title}
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Skip(err)
		}
		if got := workflowrow.EncodeHeader(s); got != string(want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}
