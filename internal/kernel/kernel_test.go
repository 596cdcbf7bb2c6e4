package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/tools/sessions"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

type projects map[string]project.Project

func (p projects) Get(_ context.Context, id string) (project.Project, error) {
	if pr, ok := p[id]; ok {
		return pr, nil
	}
	return project.Project{}, failure.New(failure.UnknownProject, "no project %s", id)
}

type env struct {
	k       *kernel.Kernel
	svc     *workflow.Service
	store   *workflowdb.Store
	root    string
	records []kernel.Record
	sinkErr error // what the evidence sink returns
	mu      sync.Mutex
	release chan struct{}
	// entered receives once each time a blocking call's handler runs.
	entered chan struct{}
}

const projA, projB = "agent:local:a", "agent:local:b"

// echoIn is the input of the test tools.
type echoIn struct {
	kernel.ProjectRef
	kernel.SessionRef
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := workflowdb.Open(context.Background(), filepath.Join(dir, "workflow.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{svc: workflow.NewService(st, nil), store: st, root: dir, release: make(chan struct{}), entered: make(chan struct{}, 8)}
	reg := kernel.NewRegistry()
	sessions.Register(reg, &sessions.Tools{Sessions: e.svc})
	kernel.Register(reg, kernel.Spec[echoIn, echoOut]{
		Name: "echo", Description: "read-only echo", Scopes: []auth.Scope{auth.ScopeProjectRead},
		Session: kernel.SessionOptional,
		Handler: func(_ context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
			inv.Observe("seen.go")
			return echoOut{Text: in.Text}, nil
		},
	})
	kernel.Register(reg, kernel.Spec[echoIn, echoOut]{
		Name: "write_echo", Description: "a writing tool", Scopes: []auth.Scope{auth.ScopeProjectWrite},
		Mutates: true, Writes: true, Session: kernel.SessionOptional,
		Handler: func(ctx context.Context, inv *kernel.Invocation, in echoIn) (echoOut, error) {
			if in.Text == "block" {
				e.entered <- struct{}{}
				select {
				case <-e.release:
				case <-ctx.Done():
					return echoOut{}, ctx.Err()
				}
			}
			if in.Text == "fail" {
				return echoOut{}, failure.New(failure.EditConflict, "conflict")
			}
			inv.Change("out.txt")
			return echoOut{Text: in.Text}, nil
		},
	})
	e.k = kernel.New(kernel.Options{
		Registry: reg,
		Projects: projects{projA: {ID: projA, Name: "a", Root: dir}, projB: {ID: projB, Name: "b", Root: dir}},
		Sessions: e.svc,
		Evidence: func(_ context.Context, r kernel.Record) (kernel.Appended, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.records = append(e.records, r)
			return kernel.Appended{}, e.sinkErr
		},
	})
	return e
}

func (e *env) call(t *testing.T, p auth.Principal, tool, args, recorder string) kernel.Result {
	t.Helper()
	return e.k.Dispatch(context.Background(), kernel.Call{Tool: tool, Arguments: json.RawMessage(args), RecordingSessionID: recorder, Principal: p, Source: kernel.SourceInternal})
}

func (e *env) start(t *testing.T, mode string) string {
	t.Helper()
	args := `{"project":"` + projA + `","instruction":"do the thing"`
	if mode != "" {
		args += `,"mode":"` + mode + `"`
	}
	res := e.call(t, auth.LocalUser(), "work_on_project", args+"}", "")
	if !res.Success {
		t.Fatalf("work_on_project: %+v", res.Error)
	}
	return res.Output.(sessions.WorkOutput).SessionID
}

func (e *env) events(t *testing.T, id string) []workflow.Event {
	t.Helper()
	evs, err := e.store.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func kindsOf(evs []workflow.Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, string(e.Kind)+":"+string(e.Role))
	}
	return strings.Join(ks, ",")
}

var mallory = auth.Principal{Kind: auth.KindAPIToken, ID: "tok_m", Owner: "mallory", Scopes: []auth.Scope{auth.ScopeAdmin}}

func TestWorkOnProjectRecordsAdoptedPair(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	got := kindsOf(e.events(t, id))
	want := "session_created:,task_instruction:,tool_call_started:business,tool_call_finished:business"
	if got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}

func TestRecorderVerified(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	before := len(e.events(t, id))
	res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","text":"hi"}`, id)
	if !res.Success {
		t.Fatalf("echo: %+v", res.Error)
	}
	evs := e.events(t, id)[before:]
	if kindsOf(evs) != "tool_call_started:recorder,tool_call_finished:recorder" {
		t.Fatalf("recorded %s", kindsOf(evs))
	}
	if evs[0].CallID != evs[1].CallID || evs[0].InvocationID == "" || evs[1].ObservedPaths[0] != "seen.go" {
		t.Fatalf("pair not correlated or workset missing: %+v", evs)
	}
	r := e.records[len(e.records)-1]
	if r.Binding.State != evidence.BindingVerified || r.Binding.Verified.SessionID != id || r.Binding.Reasons[0] != "runtime_session_store_match" {
		t.Fatalf("binding %+v", r.Binding)
	}
	if r.InvocationID != evs[0].InvocationID {
		t.Fatalf("evidence invocation %s != ledger %s", r.InvocationID, evs[0].InvocationID)
	}
}

func TestSessionlessBinding(t *testing.T) {
	e := newEnv(t)
	res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","text":"hi"}`, "")
	if !res.Success {
		t.Fatal(res.Error)
	}
	r := e.records[0]
	if r.Binding.State != evidence.BindingSessionless || r.Binding.Reasons[0] != evidence.ReasonNoRecorderRequested || r.Outcome != evidence.OutcomeOK {
		t.Fatalf("record %+v", r)
	}
}

func TestInvalidRecorderClaimWritesNothing(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	closed := e.start(t, "")
	e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+closed+`"}`, "")
	cases := []struct {
		name     string
		p        auth.Principal
		project  string
		recorder string
		kind     failure.Kind
		reasons  string
	}{
		{"ErrMalformed", auth.LocalUser(), projA, "wc_sess_nope", failure.InvalidSessionID, "malformed_session_id"},
		{"ErrUnknown", auth.LocalUser(), projA, workflow.NewSessionID(), failure.UnknownSessionID, "not_registered"},
		{"ErrClosed", auth.LocalUser(), projA, closed, failure.SessionClosed, "session_closed"},
		{"ErrForeign", mallory, projA, id, failure.SessionAuthorityDenied, "authority_mismatch"},
		{"ErrProject", auth.LocalUser(), projB, id, failure.SessionProjectMismatch, "project_mismatch"},
		{"ErrForeignOtherProject", mallory, projB, id, failure.SessionAuthorityDenied, "authority_mismatch,project_mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			beforeA, beforeC := len(e.events(t, id)), len(e.events(t, closed))
			statsBefore := e.k.Stats()
			res := e.call(t, tc.p, "write_echo", `{"project":"`+tc.project+`","text":"x"}`, tc.recorder)
			if res.Success || res.Error.Kind != tc.kind {
				t.Fatalf("got %+v, want %s", res.Error, tc.kind)
			}
			if len(e.events(t, id)) != beforeA || len(e.events(t, closed)) != beforeC {
				t.Fatal("an invalid claim wrote into a session")
			}
			r := e.records[len(e.records)-1]
			if r.Binding.State != evidence.BindingInvalidClaim || join(r.Binding.Reasons) != tc.reasons || r.Outcome != evidence.OutcomeRefused {
				t.Fatalf("binding %+v outcome %s", r.Binding, r.Outcome)
			}
			if e.k.Stats().InvalidClaims != statsBefore.InvalidClaims+1 {
				t.Fatal("invalid claim not counted")
			}
			if _, err := os.Stat(filepath.Join(e.root, "out.txt")); err == nil {
				t.Fatal("tool ran")
			}
		})
	}
}

func TestReadOnlyGuardRecordsDenial(t *testing.T) {
	e := newEnv(t)
	ro := e.start(t, "read_only")
	before := len(e.events(t, ro))
	res := e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","session_id":"`+ro+`","text":"x"}`, "")
	if res.Success || res.Error.Kind != failure.SessionGuardDenied {
		t.Fatalf("got %+v", res)
	}
	evs := e.events(t, ro)[before:]
	if len(evs) != 1 || evs[0].Kind != workflow.EventGuardDenied || evs[0].Tool != "write_echo" {
		t.Fatalf("denial not recorded: %+v", evs)
	}
	// Reads are fine in a read_only session.
	if res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","session_id":"`+ro+`","text":"x"}`, ""); !res.Success {
		t.Fatalf("read in read_only session: %+v", res.Error)
	}
}

func TestBusinessSessionChecks(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	closed := e.start(t, "")
	e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+closed+`"}`, "")
	cases := []struct {
		name string
		p    auth.Principal
		tool string
		args string
		want failure.Kind
	}{
		{"ErrUnknownTool", auth.LocalUser(), "nope", `{}`, failure.UnknownTool},
		{"ErrMalformedJSON", auth.LocalUser(), "echo", `{"project":`, failure.InvalidArguments},
		{"ErrUnknownField", auth.LocalUser(), "echo", `{"project":"` + projA + `","text":"x","extra":1}`, failure.InvalidArguments},
		{"ErrCaseVariantField", auth.LocalUser(), "echo", `{"Project":"` + projA + `","text":"x"}`, failure.InvalidArguments},
		{"ErrDuplicateKey", auth.LocalUser(), "echo", `{"project":"` + projA + `","text":"x","text":"y"}`, failure.InvalidArguments},
		{"ErrWrongType", auth.LocalUser(), "echo", `{"project":"` + projA + `","text":5}`, failure.InvalidArguments},
		{"ErrNotObject", auth.LocalUser(), "echo", `[1]`, failure.InvalidArguments},
		{"ErrUnknownProject", auth.LocalUser(), "echo", `{"project":"agent:local:zzz","text":"x"}`, failure.UnknownProject},
		{"ErrScope", auth.Principal{Kind: auth.KindAPIToken, ID: "t", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}, "write_echo", `{"project":"` + projA + `","text":"x"}`, failure.InsufficientScope},
		{"ErrClosedMutation", auth.LocalUser(), "write_echo", `{"project":"` + projA + `","session_id":"` + closed + `","text":"x"}`, failure.SessionClosed},
		{"ErrForeign", mallory, "session_summary", `{"session_id":"` + id + `"}`, failure.SessionAuthorityDenied},
		{"ErrProjectMismatch", auth.LocalUser(), "echo", `{"project":"` + projB + `","session_id":"` + id + `","text":"x"}`, failure.SessionProjectMismatch},
		{"ErrMalformedSession", auth.LocalUser(), "session_summary", `{"session_id":"abc"}`, failure.InvalidSessionID},
		{"ErrUnknownSession", auth.LocalUser(), "session_summary", `{"session_id":"` + workflow.NewSessionID() + `"}`, failure.UnknownSessionID},
		{"ErrInstructionEmpty", auth.LocalUser(), "work_on_project", `{"project":"` + projA + `","instruction":"  "}`, failure.InvalidCodingInstruction},
		{"ErrInstructionLong", auth.LocalUser(), "work_on_project", `{"project":"` + projA + `","instruction":"` + strings.Repeat("é", workflow.InstructionMaxChars+1) + `"}`, failure.InvalidCodingInstruction},
		{"ErrBadCwd", auth.LocalUser(), "update_session_context", `{"session_id":"` + id + `","default_cwd":"../up"}`, failure.InvalidExecutionContext},
		{"ErrBadShell", auth.LocalUser(), "update_session_context", `{"session_id":"` + id + `","default_shell":"zsh"}`, failure.InvalidExecutionContext},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.events(t, id)
			hdr, _ := e.svc.Get(context.Background(), id)
			res := e.call(t, tc.p, tc.tool, tc.args, "")
			if res.Success || res.Error.Kind != tc.want {
				t.Fatalf("got %+v, want %s", res.Error, tc.want)
			}
			out := res.Output.(map[string]any)
			if out["state_changed"] != false {
				t.Fatalf("state_changed = %v", out["state_changed"])
			}
			after := e.events(t, id)
			if tc.name != "ErrBadCwd" && tc.name != "ErrBadShell" && len(after) != len(before) {
				t.Fatalf("session changed: %d -> %d events", len(before), len(after))
			}
			hdr2, _ := e.svc.Get(context.Background(), id)
			if hdr2.ExecutionContext != hdr.ExecutionContext || hdr2.Lifecycle != hdr.Lifecycle {
				t.Fatal("session header changed")
			}
		})
	}
}

func TestCloseIsIdempotentAndRecorded(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	res := e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+id+`"}`, "")
	if !res.Success || !res.Output.(sessions.CloseOutput).Changed {
		t.Fatalf("close: %+v", res)
	}
	evs := e.events(t, id)
	tail := kindsOf(evs[len(evs)-3:])
	if tail != "session_closed:,tool_call_started:business,tool_call_finished:business" {
		t.Fatalf("tail %s", tail)
	}
	n := len(evs)
	res = e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+id+`"}`, "")
	if !res.Success || res.Output.(sessions.CloseOutput).Changed {
		t.Fatalf("second close: %+v", res)
	}
	if len(e.events(t, id)) != n {
		t.Fatal("second close appended events")
	}
}

func TestDrainRecordsInterrupted(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	done := make(chan kernel.Result)
	go func() {
		done <- e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","text":"block"}`, id)
	}()
	<-e.entered // the handler runs: the claims were checked
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e.k.Drain(ctx)
	res := <-done
	if res.Success || res.Error.Kind != failure.Interrupted {
		t.Fatalf("got %+v", res)
	}
	evs := e.events(t, id)
	last := evs[len(evs)-1]
	if last.Kind != workflow.EventToolCallFinished || last.Outcome != workflow.OutcomeInterrupted {
		t.Fatalf("last event %+v", last)
	}
	// New calls are refused after drain.
	if res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","text":"x"}`, ""); res.Error == nil || res.Error.Kind != failure.Unavailable {
		t.Fatalf("after drain: %+v", res)
	}
}

func TestConcurrentRecordedCalls(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool := "echo"
			if i%2 == 0 {
				tool = "write_echo"
			}
			if res := e.call(t, auth.LocalUser(), tool, `{"project":"`+projA+`","text":"x"}`, id); !res.Success {
				t.Error(res.Error)
			}
		}()
	}
	wg.Wait()
	evs := e.events(t, id)
	started, finished := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		switch ev.Kind {
		case workflow.EventToolCallStarted:
			started[ev.CallID]++
		case workflow.EventToolCallFinished:
			finished[ev.CallID]++
		}
	}
	// 24 calls plus work_on_project's own pair.
	if len(started) != 25 || len(finished) != 25 {
		t.Fatalf("started %d finished %d, want 25 each", len(started), len(finished))
	}
	for id, n := range started {
		if n != 1 || finished[id] != 1 {
			t.Fatalf("call %s has %d started %d finished", id, n, finished[id])
		}
	}
}

func TestCancelledCallIsNeverSuccess(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan kernel.Result)
	go func() {
		done <- e.k.Dispatch(ctx, kernel.Call{Tool: "write_echo", Arguments: json.RawMessage(`{"project":"` + projA + `","text":"block"}`),
			RecordingSessionID: id, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
	}()
	<-e.entered // the handler runs: the claims were checked
	cancel()
	res := <-done
	if res.Success || res.Error.Kind != failure.Cancelled || res.Output.(map[string]any)["failure_kind"] != "outcome_unknown" {
		t.Fatalf("got %+v", res)
	}
	evs := e.events(t, id)
	last := evs[len(evs)-1]
	if last.Kind != workflow.EventToolCallFinished || last.Outcome != workflow.OutcomeCancelled {
		t.Fatalf("last event %+v", last)
	}
	if r := e.records[len(e.records)-1]; r.Outcome != evidence.OutcomeUnknown {
		t.Fatalf("evidence outcome %s, want unknown", r.Outcome)
	}
}

// TestRecorderCheckKeys: every record states which keys were compared with
// the session store, which were not, and the digest of the session as read.
func TestRecorderCheckKeys(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "")
	closed := e.start(t, "")
	e.call(t, auth.LocalUser(), "close_session", `{"session_id":"`+closed+`"}`, "")
	all := "registration,authority,lifecycle,project|guard"
	cases := []struct {
		name, recorder, project, keys string
		p                             auth.Principal
		digest                        bool
	}{
		{"verified", id, projA, all, auth.LocalUser(), true},
		{"malformed", "wc_sess_nope", projA, "|registration,authority,project,lifecycle,guard", auth.LocalUser(), false},
		{"unregistered", workflow.NewSessionID(), projA, "registration|authority,project,lifecycle,guard", auth.LocalUser(), false},
		{"closed", closed, projA, all, auth.LocalUser(), true},
		{"foreign", id, projA, all, mallory, true},
		{"no claim", "", projA, "|", auth.LocalUser(), false},
	}
	for _, c := range cases {
		args := `{"project":"` + c.project + `","text":"x"}`
		e.call(t, c.p, "echo", args, c.recorder)
		r := e.records[len(e.records)-1]
		got := join(r.Binding.CheckedKeys) + "|" + join(r.Binding.SkippedKeys)
		if got != c.keys || (r.Binding.SessionDigest != "") != c.digest {
			t.Errorf("%s: keys %s (want %s), digest %q", c.name, got, c.keys, r.Binding.SessionDigest)
		}
	}
	r := e.records[len(e.records)-6] // the verified one
	if r.Binding.Verified.Authority != auth.LocalUser().AuthorityFingerprint() || r.Binding.Verified.Lifecycle != "active" {
		t.Fatalf("verified values: %+v", r.Binding)
	}
	// The business session id is part of the claim.
	e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","session_id":"`+id+`","text":"x"}`, "")
	if r := e.records[len(e.records)-1]; r.BusinessSessionID != id || r.Mutates {
		t.Fatalf("business claim: %+v", r)
	}
}

// TestEvidenceGapIsReported: when the journal cannot take a mutating
// call's record, the result says so; the tool's own result stands.
func TestEvidenceGapIsReported(t *testing.T) {
	e := newEnv(t)
	e.sinkErr = errors.New("journal unavailable")
	res := e.call(t, auth.LocalUser(), "write_echo", `{"project":"`+projA+`","text":"x"}`, "")
	if !res.Success || len(res.Warnings) != 1 || res.Warnings[0].Kind != failure.EvidenceGap ||
		!strings.Contains(res.Warnings[0].Message, e.records[len(e.records)-1].InvocationID) {
		t.Fatalf("mutating call with an evidence gap: %+v", res)
	}
	if res := e.call(t, auth.LocalUser(), "echo", `{"project":"`+projA+`","text":"x"}`, ""); !res.Success || len(res.Warnings) != 0 {
		t.Fatalf("read-only call: %+v", res)
	}
	if n := e.k.Stats().EvidenceGaps; n != 2 {
		t.Fatalf("evidence gaps counted: %d, want 2", n)
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"warnings":[{"kind":"evidence_gap"`) {
		t.Fatalf("wire form: %s", b)
	}
}

// join renders a list of string-valued vocabulary items as a,b,c.
func join[T ~string](xs []T) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return strings.Join(out, ",")
}
