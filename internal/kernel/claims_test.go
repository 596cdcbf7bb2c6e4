package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TestBusinessClaimIsVerified: a session_id is a claim like
// recording_session_id: verified with its checked keys when it matches
// the store, invalid_claim with every failing reason when it does not, and
// sessionless only when no session was named at all.
func TestBusinessClaimIsVerified(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	closed := e.start(t, "")
	e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+closed+`"}`, "")

	res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","session_id":"`+id+`","text":"hi"}`, "")
	r := e.records[len(e.records)-1]
	if !res.Success || r.Binding.State != evidence.BindingVerified || r.Binding.Verified.SessionID != id ||
		join(r.Binding.Reasons) != "runtime_session_store_match" || r.BusinessSessionID != id || r.Binding.ClaimedSessionID != "" {
		t.Fatalf("business-only call: %+v / %+v", res, r.Binding)
	}
	if got := join(r.Binding.CheckedKeys) + "|" + join(r.Binding.SkippedKeys); got != "registration,authority,project|lifecycle,guard" {
		t.Fatalf("read-only business check keys %s", got)
	}

	cases := []struct {
		name, session, project, tool string
		p                            auth.Principal
		kind                         failure.Kind
		reasons                      string
	}{
		{"unknown", "wc_sess_" + strings.Repeat("0", 32), projA, "echo", auth.LocalUser(), failure.UnknownSessionID, "not_registered"},
		{"malformed", "wc_sess_nope", projA, "echo", auth.LocalUser(), failure.InvalidSessionID, "malformed_session_id"},
		{"closed", closed, projA, "write_echo", auth.LocalUser(), failure.SessionClosed, "session_closed"},
		{"other authority", id, projA, "echo", mallory, failure.SessionAuthorityDenied, "authority_mismatch"},
		{"other project", id, projB, "echo", auth.LocalUser(), failure.SessionProjectMismatch, "project_mismatch"},
		{"every failing reason", closed, projB, "write_echo", mallory, failure.SessionAuthorityDenied, "session_closed,authority_mismatch,project_mismatch"},
	}
	for _, c := range cases {
		before := len(e.events(t, id)) + len(e.events(t, closed))
		res := e.call(t, c.p, c.tool, `{"project":"`+c.project+`","session_id":"`+c.session+`","text":"x"}`, "")
		r := e.records[len(e.records)-1]
		if res.Success || res.Error.Kind != c.kind || !res.Refused {
			t.Errorf("%s: result %+v", c.name, res)
		}
		if r.Binding.State != evidence.BindingInvalidClaim || join(r.Binding.Reasons) != c.reasons || r.Outcome != evidence.OutcomeRefused {
			t.Errorf("%s: binding %+v outcome %s", c.name, r.Binding, r.Outcome)
		}
		if after := len(e.events(t, id)) + len(e.events(t, closed)); after != before {
			t.Errorf("%s: %d events written", c.name, after-before)
		}
	}

	// The reproduction: work_on_project continuing a session that does not
	// exist fails, and its record says the claim was invalid.
	res = e.call(t, auth.LocalUser(), "work_on_project",
		`{"project":"`+projA+`","instruction":"continue the task","session_id":"wc_sess_`+strings.Repeat("0", 32)+`"}`, "")
	r = e.records[len(e.records)-1]
	if res.Success || res.Error.Kind != failure.UnknownSessionID ||
		r.Binding.State != evidence.BindingInvalidClaim || join(r.Binding.Reasons) != "not_registered" {
		t.Fatalf("work_on_project unknown session: %+v / %+v", res.Error, r.Binding)
	}

	// No session named at all: sessionless.
	e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","text":"x"}`, "")
	if r := e.records[len(e.records)-1]; r.Binding.State != evidence.BindingSessionless || join(r.Binding.Reasons) != "no_recorder_requested" {
		t.Fatalf("no session: %+v", r.Binding)
	}
	// Refused before any claim could be read (arguments do not decode):
	// unknown, not sessionless.
	e.call(t, auth.LocalUser(), "echo", `{"project":1}`, "")
	if r := e.records[len(e.records)-1]; r.Binding.State != evidence.BindingUnknown || join(r.Binding.Reasons) != "not_checked" {
		t.Fatalf("undecodable call: %+v", r.Binding)
	}
}

// TestSameSessionCountsOnce: when the recorder and the business session
// are the same session, a call is one invocation there: one event pair,
// one tool call and one failure in its counters.
func TestSameSessionCountsOnce(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	get := func() workflow.Session {
		s, err := e.svc.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, evsBefore := get().Counters, len(e.events(t, id))
	res := e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","session_id":"`+id+`","text":"fail"}`, id)
	if res.Success {
		t.Fatal("the failing tool succeeded")
	}
	after := get().Counters
	if after.ToolCalls-before.ToolCalls != 1 || after.ToolFailures-before.ToolFailures != 1 {
		t.Fatalf("counters before %+v after %+v", before, after)
	}
	evs := e.events(t, id)[evsBefore:]
	if got := kindsOf(evs); got != "tool_call_started:business,tool_call_finished:business" {
		t.Fatalf("events %s", got)
	}
	r := e.records[len(e.records)-1]
	if r.Binding.State != evidence.BindingVerified || r.Binding.ClaimedSessionID != id || r.BusinessSessionID != id {
		t.Fatalf("binding %+v", r.Binding)
	}

	// Different recorder and business sessions each keep their own pair.
	other := e.start(t, "")
	e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","session_id":"`+id+`","text":"ok"}`, other)
	if got := kindsOf(e.events(t, other)[len(e.events(t, other))-2:]); got != "tool_call_started:recorder,tool_call_finished:recorder" {
		t.Fatalf("recorder session events %s", got)
	}
	if got := kindsOf(e.events(t, id)[len(e.events(t, id))-2:]); got != "tool_call_started:business,tool_call_finished:business" {
		t.Fatalf("business session events %s", got)
	}
}

// countingStore counts the session reads the kernel makes.
type countingStore struct {
	workflow.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingStore) Get(ctx context.Context, id string) (workflow.Session, error) {
	c.mu.Lock()
	c.reads[id]++
	c.mu.Unlock()
	return c.Store.Get(ctx, id)
}

// TestEachNamedSessionIsReadOnce: a call naming one session as business
// session and recorder reads its row once; naming two reads each once.
func TestEachNamedSessionIsReadOnce(t *testing.T) {
	e := newEnv(t)
	id, other := e.start(t, ""), e.start(t, "")
	cs := &countingStore{Store: e.store, reads: map[string]int{}}
	k := kernel.New(kernel.Options{Registry: e.k.Registry(), Projects: projects{projA: {ID: projA, Name: "a", Root: e.root}},
		Sessions: workflow.NewService(cs, nil)})
	call := func(business, recorder string) {
		t.Helper()
		res := k.Dispatch(context.Background(), kernel.Call{Tool: "echo", Principal: auth.LocalUser(), Source: kernel.SourceInternal,
			Arguments:          json.RawMessage(`{"project":"` + projA + `","session_id":"` + business + `","text":"x"}`),
			RecordingSessionID: recorder})
		if !res.Success {
			t.Fatalf("call: %+v", res.Error)
		}
	}
	call(id, id)
	if cs.reads[id] != 1 {
		t.Fatalf("same session read %d times", cs.reads[id])
	}
	call(id, other)
	if cs.reads[id] != 2 || cs.reads[other] != 1 {
		t.Fatalf("reads %v", cs.reads)
	}
}

// TestClaimsAreRedactedBeforeLogAndJournal: a credential pasted as a
// recording_session_id or as a tool name never reaches the server log or
// the evidence record in the clear.
func TestClaimsAreRedactedBeforeLogAndJournal(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	k := kernel.New(kernel.Options{Registry: e.k.Registry(), Projects: projects{projA: {ID: projA, Name: "a", Root: e.root}},
		Sessions: e.svc, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Evidence: func(_ context.Context, r kernel.Record) (kernel.Appended, error) {
			e.records = append(e.records, r)
			return kernel.Appended{}, nil
		}})
	pat := "wc_pat_" + strings.Repeat("Q", 40)
	xoxb := "xoxb-" + strings.Repeat("1", 12) + "-" + strings.Repeat("2", 12) + "-" + strings.Repeat("a", 24)
	res := k.Dispatch(context.Background(), kernel.Call{Tool: "echo", Principal: auth.LocalUser(), Source: kernel.SourceREST,
		Arguments: json.RawMessage(`{"project":"` + projA + `","text":"x"}`), RecordingSessionID: pat})
	if res.Success || res.Error.Kind != failure.InvalidSessionID {
		t.Fatalf("pasted credential as recorder: %+v", res.Error)
	}
	r := e.records[len(e.records)-1]
	if strings.Contains(r.Binding.ClaimedSessionID, pat) || !strings.Contains(r.Binding.ClaimedSessionID, redact.Marker) {
		t.Fatalf("claim kept as %q", r.Binding.ClaimedSessionID)
	}
	k.Dispatch(context.Background(), kernel.Call{Tool: xoxb, Principal: auth.LocalUser(), Source: kernel.SourceREST,
		Arguments: json.RawMessage(`{}`)})
	r = e.records[len(e.records)-1]
	if strings.Contains(r.Tool, xoxb) || !strings.Contains(r.Tool, redact.Marker) {
		t.Fatalf("tool name kept as %q", r.Tool)
	}
	k.Dispatch(context.Background(), kernel.Call{Tool: "echo", Principal: auth.LocalUser(), Source: kernel.SourceREST,
		Arguments: json.RawMessage(`{"project":"` + projA + `","session_id":"` + pat + `","text":"x"}`)})
	if r := e.records[len(e.records)-1]; strings.Contains(r.BusinessSessionID, pat) {
		t.Fatalf("business claim kept as %q", r.BusinessSessionID)
	}
	if strings.Contains(logs.String(), pat) || strings.Contains(logs.String(), xoxb) {
		t.Fatalf("the log holds a credential:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "invalid recorder claim") {
		t.Fatalf("the refused claim was not logged:\n%s", logs.String())
	}
}

// TestCancelDuringClaimReadIsNotAnInvalidClaim: a caller that goes away
// before its claims are read is refused as not started, and the record
// leaves the claim unchecked instead of calling it invalid.
func TestCancelDuringClaimReadIsNotAnInvalidClaim(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	before := len(e.events(t, id))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.k.Dispatch(ctx, kernel.Call{Tool: "write_echo", Principal: auth.LocalUser(), Source: kernel.SourceInternal,
		Arguments: json.RawMessage(`{"project":"` + projA + `","text":"x"}`), RecordingSessionID: id})
	r := e.records[len(e.records)-1]
	if res.Success || res.Error.Kind != failure.NotStarted || !res.Refused || res.FailureKind != failure.ClassNotStarted {
		t.Fatalf("result %+v", res)
	}
	if r.Binding.State != evidence.BindingUnknown || r.Binding.ClaimedSessionID != id || r.Outcome != evidence.OutcomeRefused {
		t.Fatalf("binding %+v outcome %s", r.Binding, r.Outcome)
	}
	if got := len(e.events(t, id)); got != before {
		t.Fatalf("%d events written", got-before)
	}
}

// TestResultFacts: the typed facts of a Result agree with its wire shape,
// and Body is the exact JSON the result digest covers.
func TestResultFacts(t *testing.T) {
	e := newEnv(t)
	res := e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","text":"fail"}`, "")
	var wire struct {
		Success bool `json:"success"`
		Output  struct {
			FailureKind  string `json:"failure_kind"`
			RecoveryKind string `json:"recovery_kind"`
			StateChanged bool   `json:"state_changed"`
		} `json:"output"`
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	if err := json.Unmarshal(res.Body, &wire); err != nil {
		t.Fatal(err)
	}
	if wire.Success || res.FailureKind != wire.Output.FailureKind || res.RecoveryKind != wire.Output.RecoveryKind ||
		res.StateChanged != wire.Output.StateChanged || wire.Error.Kind != string(failure.EditConflict) ||
		res.Tool != "write_echo" || res.Project != projA || res.Refused {
		t.Fatalf("facts %+v, wire %+v", res, wire)
	}
	r := e.records[len(e.records)-1]
	if r.ResultSHA256 != evidence.Digest(res.Body) {
		t.Fatal("the result digest does not cover Body")
	}
	ok := e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","text":"a<b && c>d"}`, "")
	if !bytes.Contains(ok.Body, []byte(`"a<b && c>d"`)) || strings.Join(ok.ChangedPaths, ",") != "out.txt" {
		t.Fatalf("body %s changed %v", ok.Body, ok.ChangedPaths)
	}
	unknown := e.call(t, auth.LocalUser(), "no_such_tool", `{}`, "")
	if unknown.Tool != "" || !unknown.Refused || unknown.FailureKind != failure.ClassInvalidArguments {
		t.Fatalf("unknown tool facts %+v", unknown)
	}
}

// TestTransportRefusalIsJournaled: an envelope the transport refused is
// refused by the kernel, which runs nothing, writes no session event and
// journals the refusal with the claim it carried, unchecked.
func TestTransportRefusalIsJournaled(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	before := len(e.events(t, id))
	refusal := failure.New(failure.InvalidArguments, "duplicate key \"a\" in arguments")
	res := e.k.Dispatch(context.Background(), kernel.Call{Tool: "write_echo", Principal: auth.LocalUser(), Source: kernel.SourceMCP,
		Arguments: json.RawMessage(`{"project":"` + projA + `","text":"x"}`), RecordingSessionID: id, Refusal: refusal})
	r := e.records[len(e.records)-1]
	if res.Success || !res.Refused || res.Error.Kind != failure.InvalidArguments || res.Tool != "write_echo" {
		t.Fatalf("result %+v", res)
	}
	if r.Outcome != evidence.OutcomeRefused || r.Binding.State != evidence.BindingUnknown || r.Binding.ClaimedSessionID != id ||
		!r.Mutates || r.Tool != "write_echo" || r.ErrorKind != string(failure.InvalidArguments) {
		t.Fatalf("record %+v", r)
	}
	if got := len(e.events(t, id)); got != before {
		t.Fatalf("%d events written", got-before)
	}
}
