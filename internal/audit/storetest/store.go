package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditrow"
	"github.com/webcodex/webcodex/internal/failure"
)

func affinityRules(t *testing.T, open func(*testing.T) Backend) {
	svc, _, c := newService(t, open)
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
	c.Add(audit.IdleReuse - time.Second)
	if b, _, _ := svc.Affinity(ctx, owner, ""); b != a {
		t.Fatalf("1799 s idle: got new session %q", b)
	}
	if err := svc.Record(ctx, a, audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{}); err != nil {
		t.Fatal(err)
	}
	c.Add(audit.IdleReuse - time.Second) // activity refreshed by the event
	if b, _, _ := svc.Affinity(ctx, owner, ""); b != a {
		t.Fatalf("event did not refresh activity: %q", b)
	}
	c.Add(time.Second) // exactly 1800 s idle: no reuse
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

func concurrentFirstRequestsCreateOneSession(t *testing.T, open func(*testing.T) Backend) {
	svc, st, _ := newService(t, open)
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
	if count := len(sessionRows(t, st)); count != 1 {
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

// SecretsEvent is an event full of planted secrets, command text and
// output, and the planted strings, none of which may be stored: its
// attribution is Attribution.
func SecretsEvent() (ev audit.Event, planted []string) {
	ev = audit.Event{EventView: audit.EventView{
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
	return ev, []string{"planted.bearer", "PLANTEDpat", pw, "PLANTEDPEMBODY", "PLANTED-command-body", stdout, "eyJhbGci"}
}

// Attribution is the attribution SecretsEvent is recorded with.
var Attribution = audit.Attribution{PrincipalKind: "api_token", PrincipalUserID: "u1"}

func sanitizerLeavesNoSecretStored(t *testing.T, open func(*testing.T) Backend) {
	svc, st, _ := newService(t, open)
	id, _, _ := svc.Affinity(ctx, owner, "")
	ev, planted := SecretsEvent()
	if err := svc.Record(ctx, id, ev, Attribution); err != nil {
		t.Fatal(err)
	}
	dump, err := st.Raw.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, "run_process") {
		t.Fatalf("the dump does not show the stored event: %s", dump)
	}
	for _, p := range planted {
		if strings.Contains(dump, p) {
			t.Errorf("the stored rows contain planted %q", p)
		}
	}
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
}

func countersAndTrimming(t *testing.T, open func(*testing.T) Backend) {
	svc, st, c := newService(t, open)
	id, _, _ := svc.Affinity(ctx, owner, "trim")
	statuses := []string{audit.EventSuccess, audit.EventFailed, audit.EventTimeoutOrUnknown, audit.EventWarning, "other"}
	// Trimming is batched (decision 0041): the session holds every event
	// up to MaxEventsPerSession, the next one trims it to its newest
	// MaxEventsPerSession-TrimSlack, and it grows again from there.
	limit := audit.MaxEventsPerSession
	keep := audit.MaxEventsPerSession - auditrow.TrimSlack(audit.MaxEventsPerSession)
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
		c.Add(time.Second)
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

func closeIdempotentAndList(t *testing.T, open func(*testing.T) Backend) {
	svc, _, c := newService(t, open)
	for i := range 3 {
		c.Add(time.Second)
		svc.Affinity(ctx, owner, fmt.Sprintf("s%d", i))
	}
	if _, err := svc.CloseSession(ctx, "nope"); !failure.Is(err, failure.NotFound) {
		t.Fatalf("close unknown: %v", err)
	}
	first, err := svc.CloseSession(ctx, "s1")
	if err != nil || first.Status != audit.StatusClosed || first.ClosedAt == nil {
		t.Fatalf("%+v %v", first, err)
	}
	c.Add(time.Minute)
	again, err := svc.CloseSession(ctx, "s1")
	if err != nil || *again.ClosedAt != *first.ClosedAt {
		t.Fatalf("not idempotent: %+v %v", again, err)
	}
	all, _ := svc.ListSessions(ctx, "", 0)
	opened, _ := svc.ListSessions(ctx, audit.StatusOpen, 0)
	closed, _ := svc.ListSessions(ctx, audit.StatusClosed, 0)
	if len(all) != 3 || all[0].SessionID != "s2" || len(opened) != 2 || len(closed) != 1 {
		t.Fatalf("list all=%d open=%d closed=%d", len(all), len(opened), len(closed))
	}
	if _, err := svc.ListSessions(ctx, "weird", 0); !failure.Is(err, failure.InvalidArguments) {
		t.Fatal(err)
	}
	if _, _, err := svc.SessionWithEvents(ctx, "missing", 0); !failure.Is(err, failure.NotFound) {
		t.Fatal(err)
	}
}

func limitsClamping(t *testing.T, open func(*testing.T) Backend) {
	svc, _, c := newService(t, open)
	for i := range audit.MaxSessionsLimit + 5 {
		c.Add(time.Second)
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

func statsCoverageAndAttribution(t *testing.T, open func(*testing.T) Backend) {
	svc, _, c := newService(t, open)
	attrs := []audit.Attribution{
		{PrincipalKind: "oauth2", PrincipalUserID: "u1", OAuthClientID: "client-a"},
		{PrincipalKind: "oauth2", OAuthClientID: "client-b"},
		{PrincipalKind: "api_token", PrincipalUserID: "u2"},
		{},
	}
	n := audit.MaxStatsEventsPerSession + 10
	for i := range n {
		c.Add(time.Second)
		ev := audit.Event{EventView: audit.EventView{Endpoint: "/api/x", Project: "p" + fmt.Sprint(i%2), Status: audit.EventSuccess,
			ChangedFiles: []string{"f" + fmt.Sprint(i%3)}, IDs: map[string]string{"job_id": "j" + fmt.Sprint(i%4)}}}
		if err := svc.Record(ctx, "big", ev, attrs[i%4]); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(time.Second)
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

func attributionStoredButNotInViews(t *testing.T, open func(*testing.T) Backend) {
	svc, st, _ := newService(t, open)
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{EventID: "attributed", Status: audit.EventSuccess}},
		audit.Attribution{PrincipalKind: "oauth2", PrincipalUserID: "user-7", OAuthClientID: "cli-9"})
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{EventID: "unattributed", Status: audit.EventSuccess}}, audit.Attribution{})
	stored, err := st.Raw.Attribution(ctx, "attributed")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := st.Raw.Attribution(ctx, "unattributed")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %s %s", deref(stored[0]), deref(stored[1]), deref(stored[2])); got != "oauth2 user-7 cli-9" || legacy[0] != nil {
		t.Fatalf("stored attribution %s / an empty kind stored as %v, want NULL", got, legacy[0])
	}
	_, views, _ := svc.SessionWithEvents(ctx, "s", 0)
	b, _ := json.Marshal(views)
	if strings.Contains(string(b), "user-7") || strings.Contains(string(b), "cli-9") || strings.Contains(string(b), "principal") {
		t.Fatalf("view leaks attribution: %s", b)
	}
}

// requestIDRoundTrips: an event's request id is stored and read back in
// its view; an event without one reads back without one.
func requestIDRoundTrips(t *testing.T, open func(*testing.T) Backend) {
	svc, _, _ := newService(t, open)
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{EventID: "with", Status: audit.EventSuccess, RequestID: "req_0123"}}, audit.Attribution{})
	svc.Record(ctx, "s", audit.Event{EventView: audit.EventView{EventID: "without", Status: audit.EventSuccess}}, audit.Attribution{})
	_, views, err := svc.SessionWithEvents(ctx, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range views {
		got[v.EventID] = v.RequestID
	}
	if len(got) != 2 || got["with"] != "req_0123" || got["without"] != "" {
		t.Fatalf("request ids read back: %v", got)
	}
}

func recordOnClosedStoreFails(t *testing.T, open func(*testing.T) Backend) {
	svc, st, c := newService(t, open)
	id, _, _ := svc.Affinity(ctx, owner, "")
	st.Close()
	c.Add(audit.AffinityCacheTTL) // past the cached answer
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

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
