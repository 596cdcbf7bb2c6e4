package auditdb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/failure"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func open(t testing.TB) (*auditdb.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), auditdb.FileName)
	st, err := auditdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func newService(t testing.TB) (*audit.Service, *auditdb.Store, *clock, string) {
	st, path := open(t)
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	return audit.NewService(st, c.now), st, c, path
}

var ctx = context.Background()

// owner and intruder are two principals' keys (authority fingerprints).
const (
	owner    = "fp-owner"
	intruder = "fp-intruder"
)

func TestSchema(t *testing.T) {
	st, _ := open(t)
	rows, err := st.DB().Read.Query(`SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var typ, name string
		rows.Scan(&typ, &name)
		got = append(got, typ+":"+name)
	}
	want := "index:idx_action_events_meaningful index:idx_action_events_session_seq index:idx_action_sessions_requested index:idx_action_sessions_status " +
		"index:idx_window_session_relations_last table:action_events table:action_sessions table:window_session_relations"
	if strings.Join(got, " ") != want {
		t.Fatalf("schema objects %v", got)
	}
	for _, col := range []string{"principal_kind", "principal_user_id", "oauth_client_id", "changed_files_json", "ids_json", "summary_json",
		"client_window", "window_principal", "meaningful", "started_at_ms", "ended_at_ms"} {
		var n int
		st.DB().Read.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('action_events') WHERE name = ?`, col).Scan(&n)
		if n != 1 {
			t.Errorf("action_events.%s missing", col)
		}
	}
}

func TestAffinityRules(t *testing.T) {
	svc, _, c, _ := newService(t)
	for _, bad := range []string{strings.Repeat("x", audit.MaxSessionIDChars+1), "bad\x01id", "tab\tinside"} {
		if _, given, err := svc.Affinity(ctx, owner, bad); !failure.Is(err, failure.InvalidArguments) || !given {
			t.Errorf("%q: given=%v err=%v", bad, given, err)
		}
	}
	id, given, err := svc.Affinity(ctx, owner, "  client-chosen  ")
	if err != nil || !given || id != "client-chosen" {
		t.Fatalf("explicit: %q %v %v", id, given, err)
	}
	if _, evs, err := svc.SessionWithEvents(ctx, "client-chosen", 0); err != nil || len(evs) != 0 {
		t.Fatalf("explicit unknown id not created: %v", err)
	}
	// No explicit id: the most recent open session is reused while idle < 1800 s.
	a, given, err := svc.Affinity(ctx, owner, "")
	if err != nil || given || a != "client-chosen" {
		t.Fatalf("idle reuse of fresh explicit session: %q %v %v", a, given, err)
	}
	c.add(audit.IdleReuse - time.Second)
	if b, _, _ := svc.Affinity(ctx, owner, ""); b != a {
		t.Fatalf("1799 s idle: got new session %q", b)
	}
	if err := svc.Record(ctx, a, audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{}); err != nil {
		t.Fatal(err)
	}
	c.add(audit.IdleReuse - time.Second) // activity refreshed by the event
	if b, _, _ := svc.Affinity(ctx, owner, ""); b != a {
		t.Fatalf("event did not refresh activity: %q", b)
	}
	c.add(time.Second) // exactly 1800 s idle: no reuse
	b, _, err := svc.Affinity(ctx, owner, "")
	if err != nil || b == a || len(b) != 36 {
		t.Fatalf("after idle timeout: %q %v", b, err)
	}
	// Closed sessions are never reused.
	if _, err := svc.CloseSession(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := svc.Affinity(ctx, owner, ""); d == b || d == a {
		t.Fatalf("closed session reused: %q", d)
	}
}

func TestConcurrentFirstRequestsCreateOneSession(t *testing.T) {
	svc, st, _, _ := newService(t)
	const n = 64
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _, err := svc.Affinity(ctx, owner, "")
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("different ids: %q vs %q", id, ids[0])
		}
	}
	var count int
	st.DB().Read.QueryRow(`SELECT COUNT(*) FROM action_sessions`).Scan(&count)
	if count != 1 {
		t.Fatalf("%d sessions created, want 1", count)
	}
}

const (
	bearer = "Bearer eyJhbGciOiJIUzI1NiJ9.planted.bearer"
	pat    = "wc_pat_PLANTEDpat0123456789"
	pw     = "hunter2-PLANTED-pw"
	pem    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEPLANTEDPEMBODY\n-----END RSA PRIVATE KEY-----"
	cmd    = "export X=1\nrm -rf /PLANTED-command-body"
	stdout = "PLANTED-stdout-output"
)

func TestSanitizerLeavesNoSecretOnDisk(t *testing.T) {
	svc, st, _, path := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "")
	ev := audit.Event{EventView: audit.EventView{
		Endpoint: "/api/tools/run", Operation: "run_process", Status: audit.EventFailed, HTTPStatus: 500,
		ErrorSummary:   "failed with " + bearer + " and " + pem,
		WarningSummary: "password=" + pw,
		ChangedFiles:   []string{"a.go", "b/" + pat},
		IDs:            map[string]string{"job_id": "j1", "api_token": pat, "note": "auth " + bearer},
		Summary: map[string]any{
			"headers":      map[string]any{"Authorization": bearer, "Cookie": "sid=" + pw},
			"password":     pw,
			"command_text": cmd,
			"stdout":       stdout,
			"stderr":       stdout,
			"free":         "token " + pat + " key " + pem,
			"items":        []any{map[string]any{"secret": pw}, "ok " + pat},
		},
	}}
	if err := svc.Record(ctx, id, ev, audit.Attribution{PrincipalKind: "api_token", PrincipalUserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	planted := []string{"planted.bearer", "PLANTEDpat", pw, "PLANTEDPEMBODY", "PLANTED-command-body", stdout, "eyJhbGci"}
	scan := func(stage string) {
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				t.Fatal(err)
			}
			for _, p := range planted {
				if bytes.Contains(b, []byte(p)) {
					t.Errorf("%s: %s contains planted %q", stage, filepath.Base(f), p)
				}
			}
		}
	}
	scan("open")
	_, evs, err := svc.SessionWithEvents(ctx, id, 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%v %d", err, len(evs))
	}
	d, ok := evs[0].Summary["command_text"].(map[string]any)
	if !ok {
		t.Fatalf("command_text not a digest: %v", evs[0].Summary["command_text"])
	}
	for _, k := range []string{"kind", "line_count", "char_count", "sha256", "first_line_preview"} {
		if _, ok := d[k]; !ok {
			t.Fatalf("digest lacks %s: %v", k, d)
		}
	}
	if d["first_line_preview"] != "export X=1" || d["line_count"] != float64(2) {
		t.Fatalf("digest %v", d)
	}
	if _, ok := evs[0].Summary["stdout"]; ok {
		t.Fatal("stdout kept")
	}
	st.Close()
	scan("closed")
}

func TestCountersAndTrimming(t *testing.T) {
	svc, st, c, _ := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "trim")
	statuses := []string{audit.EventSuccess, audit.EventFailed, audit.EventTimeoutOrUnknown, audit.EventWarning, "other"}
	// Trimming is batched (decision 0041): the session holds every event
	// up to MaxEventsPerSession, the next one trims it to its newest
	// MaxEventsPerSession-TrimSlack, and it grows again from there.
	limit := audit.MaxEventsPerSession
	keep := audit.MaxEventsPerSession - auditdb.TrimSlack(audit.MaxEventsPerSession)
	total := (limit/len(statuses) + 5) * len(statuses) // past the trim, a multiple of the statuses
	kept := func() []string {
		ids := eventIDs(t, st, id)
		for i, e := range ids {
			if i > 0 && e <= ids[i-1] {
				t.Fatalf("events out of order: %s after %s", e, ids[i-1])
			}
		}
		return ids
	}
	for i := range total {
		c.add(time.Second)
		ev := audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("e%04d", i), Status: statuses[i%len(statuses)], DurationMS: 10,
			ChangedFiles: []string{"f"}, IDs: map[string]string{"job_id": "j"}}}
		if err := svc.Record(ctx, id, ev, audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		switch n := i + 1; n {
		case limit:
			if k := kept(); len(k) != limit || k[0] != "e0000" {
				t.Fatalf("after %d events: %d kept from %s, want all %d", n, len(k), k[0], limit)
			}
		case limit + 1:
			if k := kept(); len(k) != keep || k[0] != fmt.Sprintf("e%04d", n-keep) {
				t.Fatalf("after %d events: %d kept from %s, want the newest %d", n, len(k), k[0], keep)
			}
		}
	}
	sess, evs, err := svc.SessionWithEvents(ctx, id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != audit.MaxEventsLimit || evs[len(evs)-1].EventID != fmt.Sprintf("e%04d", total-1) || evs[0].EventID != fmt.Sprintf("e%04d", total-audit.MaxEventsLimit) {
		t.Fatalf("events window: %d first=%s", len(evs), evs[0].EventID)
	}
	if k, want := kept(), keep+total-limit-1; len(k) != want || k[0] != fmt.Sprintf("e%04d", total-want) {
		t.Fatalf("kept %d events from %s, want the newest %d", len(k), k[0], want)
	}
	per := int64(total / len(statuses))
	if sess.TotalActions != int64(total) || sess.SuccessCount != per || sess.FailedCount != per || sess.TimeoutOrUnknownCount != per ||
		sess.WarningCount != per || sess.TotalDurationMS != int64(total*10) || sess.ChangedFilesCount != int64(total) || sess.JobIDsCount != int64(total) {
		t.Fatalf("counters %+v", sess)
	}
	start := int64(1_800_000_000)
	if *sess.FirstEventAt != start+1 || *sess.LastEventAt != start+int64(total) || sess.UpdatedAt != start+int64(total) || sess.Status != audit.StatusOpen {
		t.Fatalf("times %+v", sess)
	}
}

func TestCloseIdempotentAndList(t *testing.T) {
	svc, _, c, _ := newService(t)
	for i := range 3 {
		c.add(time.Second)
		svc.Affinity(ctx, owner, fmt.Sprintf("s%d", i))
	}
	if _, err := svc.CloseSession(ctx, "nope"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("close unknown: %v", err)
	}
	first, err := svc.CloseSession(ctx, "s1")
	if err != nil || first.Status != audit.StatusClosed || first.ClosedAt == nil {
		t.Fatalf("%+v %v", first, err)
	}
	c.add(time.Minute)
	again, err := svc.CloseSession(ctx, "s1")
	if err != nil || *again.ClosedAt != *first.ClosedAt {
		t.Fatalf("not idempotent: %+v %v", again, err)
	}
	all, _ := svc.ListSessions(ctx, "", 0)
	open, _ := svc.ListSessions(ctx, audit.StatusOpen, 0)
	closed, _ := svc.ListSessions(ctx, audit.StatusClosed, 0)
	if len(all) != 3 || all[0].SessionID != "s2" || len(open) != 2 || len(closed) != 1 {
		t.Fatalf("list all=%d open=%d closed=%d", len(all), len(open), len(closed))
	}
	if _, err := svc.ListSessions(ctx, "weird", 0); !failure.Is(err, failure.InvalidArguments) {
		t.Fatal(err)
	}
	if _, _, err := svc.SessionWithEvents(ctx, "missing", 0); !failure.Is(err, failure.NotFound) {
		t.Fatal(err)
	}
}

func TestLimitsClamping(t *testing.T) {
	svc, _, c, _ := newService(t)
	for i := range audit.MaxSessionsLimit + 5 {
		c.add(time.Second)
		if _, _, err := svc.Affinity(ctx, owner, fmt.Sprintf("s%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ in, want int }{{0, audit.DefaultSessionsLimit}, {7, 7}, {1000, audit.MaxSessionsLimit}} {
		got, err := svc.ListSessions(ctx, "", tc.in)
		if err != nil || len(got) != tc.want {
			t.Errorf("limit %d: %d %v", tc.in, len(got), err)
		}
	}
	if _, err := svc.ListSessions(ctx, "", -1); !failure.Is(err, failure.InvalidArguments) {
		t.Error(err)
	}
	for range audit.MaxEventsLimit + 5 {
		svc.Record(ctx, "s000", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{})
	}
	for _, tc := range []struct{ in, want int }{{0, audit.DefaultEventsLimit}, {3, 3}, {1000, audit.MaxEventsLimit}} {
		_, evs, err := svc.SessionWithEvents(ctx, "s000", tc.in)
		if err != nil || len(evs) != tc.want {
			t.Errorf("events_limit %d: %d %v", tc.in, len(evs), err)
		}
	}
	if _, _, err := svc.SessionWithEvents(ctx, "s000", -5); !failure.Is(err, failure.InvalidArguments) {
		t.Error(err)
	}
	st, err := svc.Stats(ctx, "", 0)
	if err != nil || st.SessionsScanned != audit.DefaultStatsSessions || st.SessionsAvailable != int64(audit.MaxSessionsLimit+5) || !st.Partial {
		t.Errorf("stats default: %+v %v", st, err)
	}
	st, _ = svc.Stats(ctx, "", 1000)
	if st.SessionsScanned != audit.MaxStatsSessions {
		t.Errorf("stats max: %d", st.SessionsScanned)
	}
	if _, err := svc.Stats(ctx, "", -1); !failure.Is(err, failure.InvalidArguments) {
		t.Error(err)
	}
}

func TestStatsCoverageAndAttribution(t *testing.T) {
	svc, _, c, _ := newService(t)
	attrs := []audit.Attribution{
		{PrincipalKind: "oauth2", PrincipalUserID: "u1", OAuthClientID: "client-a"},
		{PrincipalKind: "oauth2", OAuthClientID: "client-b"},
		{PrincipalKind: "api_token", PrincipalUserID: "u2"},
		{},
	}
	n := audit.MaxStatsEventsPerSession + 10
	for i := range n {
		c.add(time.Second)
		ev := audit.Event{EventView: audit.EventView{Endpoint: "/api/x", Project: "p" + fmt.Sprint(i%2), Status: audit.EventSuccess,
			ChangedFiles: []string{"f" + fmt.Sprint(i%3)}, IDs: map[string]string{"job_id": "j" + fmt.Sprint(i%4)}}}
		if err := svc.Record(ctx, "big", ev, attrs[i%4]); err != nil {
			t.Fatal(err)
		}
	}
	c.add(time.Second)
	svc.Record(ctx, "small", audit.Event{EventView: audit.EventView{Endpoint: "/mcp", Status: audit.EventFailed}}, attrs[0])

	all, err := svc.Stats(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.SessionsScanned != 2 || all.SessionsAvailable != 2 || all.EventsAvailable != int64(n+1) ||
		all.EventsScanned != int64(audit.MaxStatsEventsPerSession+1) || all.TruncatedSessions != 1 || !all.Truncated || !all.Partial {
		t.Fatalf("coverage %+v", all)
	}
	one, err := svc.Stats(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	if one.EventsScanned != int64(n) || one.EventsAvailable != int64(n) || one.Truncated || one.Partial || one.SessionsScanned != 1 {
		t.Fatalf("one-session coverage %+v", one)
	}
	a := one.Attribution
	if a.AttributedCount+a.UnattributedCount != int64(n) || a.UnattributedCount != int64(n/4) || a.ByPrincipalKind["api_token"] == 0 ||
		len(a.ByOAuthClient) != 2 || a.ByOAuthClient[0].Count+a.ByOAuthClient[1].Count != a.ByPrincipalKind["oauth2"] {
		t.Fatalf("attribution %+v", a)
	}
	if one.ChangedFilesDistinctCount != 3 || one.JobIDsDistinctCount != 4 || one.ByEndpoint["/api/x"] != int64(n) ||
		one.ByProject["p0"]+one.ByProject["p1"] != int64(n) || one.ByStatus[audit.EventSuccess] != int64(n) {
		t.Fatalf("aggregates %+v", one)
	}
	if _, err := svc.Stats(ctx, "missing", 0); !failure.Is(err, failure.NotFound) {
		t.Fatal(err)
	}
	b, _ := json.Marshal(one)
	for _, k := range []string{"events_scanned", "events_available", "sessions_scanned", "partial", "truncated", "by_oauth_client", "attributed_count"} {
		if !strings.Contains(string(b), `"`+k+`"`) {
			t.Fatalf("stats JSON lacks %s: %s", k, b)
		}
	}
}

func TestAttributionStoredButNotInViews(t *testing.T) {
	svc, st, _, _ := newService(t)
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{PrincipalKind: "oauth2", PrincipalUserID: "user-7", OAuthClientID: "cli-9"})
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{})
	var pk, pu, oc, nullKind any
	st.DB().Read.QueryRow(`SELECT principal_kind, principal_user_id, oauth_client_id FROM action_events ORDER BY seq LIMIT 1`).Scan(&pk, &pu, &oc)
	st.DB().Read.QueryRow(`SELECT principal_kind FROM action_events ORDER BY seq DESC LIMIT 1`).Scan(&nullKind)
	if fmt.Sprintf("%v %v %v", pk, pu, oc) != "oauth2 user-7 cli-9" || nullKind != nil {
		t.Fatalf("stored attribution %v %v %v / legacy %v", pk, pu, oc, nullKind)
	}
	_, views, _ := svc.SessionWithEvents(ctx, "s", 0)
	b, _ := json.Marshal(views)
	if bytes.Contains(b, []byte("user-7")) || bytes.Contains(b, []byte("cli-9")) || bytes.Contains(b, []byte("principal")) {
		t.Fatalf("view leaks attribution: %s", b)
	}
}

func TestRecordOnClosedStoreFails(t *testing.T) {
	svc, st, c, _ := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "")
	st.Close()
	c.add(audit.AffinityCacheTTL) // past the cached answer
	if err := svc.Record(ctx, id, audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{}); err == nil {
		t.Fatal("Record on a closed store succeeded")
	}
	if _, _, err := svc.Affinity(ctx, owner, ""); err == nil {
		t.Fatal("Affinity on a closed store succeeded")
	}
	if _, err := svc.Stats(ctx, "", 0); err == nil {
		t.Fatal("Stats on a closed store succeeded")
	}
}

func TestReopenKeepsData(t *testing.T) {
	st, path := open(t)
	svc := audit.NewService(st, nil)
	svc.Record(ctx, "keep", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{})
	st.Close()
	st2, err := auditdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	sess, evs, err := st2.Session(ctx, "keep", 10)
	if err != nil || sess.TotalActions != 1 || len(evs) != 1 {
		t.Fatalf("%+v %d %v", sess, len(evs), err)
	}
}

func BenchmarkRecord(b *testing.B) {
	svc, st, _, _ := newService(b)
	id, _, err := svc.Affinity(ctx, owner, "")
	if err != nil {
		b.Fatal(err)
	}
	ev := audit.Event{EventView: audit.EventView{Endpoint: "/api/tools/read_file", Operation: "read_file", Status: audit.EventSuccess, DurationMS: 3,
		ChangedFiles: []string{"a.go"}, IDs: map[string]string{"job_id": "j"},
		Summary: map[string]any{"model_ergonomics": map[string]any{"schema_version": 6, "tool_name": "read_file", "success": true}}}}
	var failed atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := svc.Record(ctx, id, ev, audit.Attribution{PrincipalKind: "api_token"}); err != nil {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d records failed", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	commits, jobs := st.DB().Writer.Stats()
	if commits > 0 {
		b.ReportMetric(float64(jobs)/float64(commits), "jobs/commit")
	}
}

// TestEventsDurableEverySecond: the first append is fsynced; appends
// within DurableEvery of the last durable one are committed lazily
// (readable at once, no fsync); the first append DurableEvery or more
// after it is fsynced again.
func TestEventsDurableEverySecond(t *testing.T) {
	svc, st, c, _ := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "durable")
	w := st.DB().Writer
	appendAt := func(i int, wantLazy int64) {
		t.Helper()
		ev := audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("d%02d", i), Status: audit.EventSuccess}}
		if err := svc.Record(ctx, id, ev, audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		if got := w.LazyCommits(); got != wantLazy {
			t.Fatalf("after append %d: %d lazy commits, want %d", i, got, wantLazy)
		}
		var n int
		st.DB().Read.QueryRow(`SELECT COUNT(*) FROM action_events WHERE event_id = ?`, ev.EventID).Scan(&n)
		if n != 1 {
			t.Fatalf("append %d not readable after it returned", i)
		}
	}
	base := w.LazyCommits()
	appendAt(0, base) // first: durable
	c.add(auditdb.DurableEvery - time.Millisecond)
	appendAt(1, base+1) // within the bound: lazy
	appendAt(2, base+2)
	c.add(time.Millisecond)
	appendAt(3, base+2) // DurableEvery after the durable one: durable
	appendAt(4, base+3)
}
