package handoff_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/handoff"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const scopeA = "validation_scope:v1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// ledger builds a session the way a store does: Apply assigns seqs,
// sanitizes, counts and enforces the tail limit.
type ledger struct {
	s   workflow.Session
	evs []workflow.Event
}

func newLedger(instruction string) *ledger {
	l := &ledger{s: workflow.Session{
		ID: "wc_sess_0123456789abcdef0123456789abcdef", Project: "agent:local:demo", Title: "t",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, OwnerFingerprint: "fp", CreatedAt: t0,
	}}
	l.add(workflow.Event{Kind: workflow.EventSessionCreated}, instr(instruction))
	return l
}

func (l *ledger) add(es ...workflow.Event) *ledger {
	out, drop := workflow.Apply(&l.s, es, t0, len(l.evs))
	l.evs = append(l.evs, out...)[drop:]
	return l
}

func (l *ledger) close() *ledger {
	l.s.Lifecycle = workflow.Closed
	return l.add(workflow.Event{Kind: workflow.EventSessionClosed})
}

func instr(text string) workflow.Event {
	return workflow.Event{Kind: workflow.EventTaskInstruction, Text: text}
}

func finished(tool string, outcome workflow.Outcome, kind string) workflow.Event {
	return workflow.Event{Kind: workflow.EventToolCallFinished, Tool: tool, Role: workflow.RoleBusiness, Outcome: outcome, ErrorKind: kind}
}

func read(paths ...string) workflow.Event {
	e := finished("read_files", workflow.OutcomeOK, "")
	e.ObservedPaths = paths
	return e
}

func search(paths ...string) workflow.Event {
	e := finished("search_project_texts", workflow.OutcomeOK, "")
	e.ObservedPaths = paths
	return e
}

func write(paths ...string) workflow.Event {
	e := finished("apply_text_edits", workflow.OutcomeOK, "")
	e.ChangedPaths = paths
	return e
}

func goTest(failures ...string) workflow.Event {
	v := &workflow.Validation{Tool: "go_test", ScopeID: scopeA, Parser: "go_test_json/v1", Passed: 3,
		Complete: true, Verdict: workflow.VerdictPassed, Expectation: "success", ExpectationMatched: true}
	if len(failures) > 0 {
		v.Failed, v.Failures, v.FailuresTotal = len(failures), failures, len(failures)
		v.Verdict, v.ExpectationMatched, v.ExitCode = workflow.VerdictFailed, false, 1
	}
	return workflow.Event{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: v}
}

func resolved(e workflow.Event, ids ...string) workflow.Event {
	e.Validation.Resolved = ids
	return e
}

type goldenCase struct {
	name      string
	ledger    func() *ledger
	opts      handoff.FeedbackOptions
	input     func(in *handoff.BriefInput)
	wantState string
	wantCodes []string
}

var idle = &handoff.JobsSnapshot{}

func cases() []goldenCase {
	clean := &handoff.WorkspaceSnapshot{Branch: "main", Head: "0123456789abcdef0123456789abcdef01234567"}
	full := func(in *handoff.BriefInput) {
		in.IncludeWorkspace, in.Workspace = true, clean
		in.Guidance = &handoff.GuidanceSnapshot{}
		in.Evidence = &handoff.BriefEvidence{Verified: 3, Sessionless: 1, InvalidClaim: 1, Checkpoint: &handoff.BriefCheckpoint{
			Origin: "webcodex.local/evidence/j1", Size: 5, RootHash: "n0H0Q2z2B8pcVjXhJ4BDwm8l0vF8hJIZ1p0o9Pp3m4c=", KeyID: "0a1b2c3d",
			Note: "webcodex.local/evidence/j1\n5\nn0H0Q2z2B8pcVjXhJ4BDwm8l0vF8hJIZ1p0o9Pp3m4c=\n\n— webcodex.local/evidence/j1 CgsMDQ==\n"}}
	}
	return []goldenCase{
		{name: "fresh_session", ledger: func() *ledger { return newLedger("Add a --verbose flag to the CLI.") },
			opts: handoff.FeedbackOptions{Jobs: idle}, input: full,
			wantState: handoff.StateReadyToContinue, wantCodes: []string{}},
		{name: "ready_to_continue", ledger: func() *ledger {
			return newLedger("Explain how the parser handles errors.").add(
				read("internal/parse/parse.go", "internal/parse/errors.go"), search("internal/parse/parse.go", "cmd/main.go"),
				finished("session_summary", workflow.OutcomeOK, ""))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, wantState: handoff.StateReadyToContinue,
			wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "needs_validation", ledger: func() *ledger {
			return newLedger("Fix the off-by-one in pagination.").add(
				read("page.go"), write("page.go"), finished("run_shell", workflow.OutcomeFailed, "exit_status"),
				write("page_test.go", "page.go"))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, wantState: handoff.StateNeedsValidation,
			wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "blocked_validation_failure", ledger: func() *ledger {
			return newLedger("Make the calculator tests pass.").add(
				read("calc.go"), write("calc.go"), goTest("example.com/calc.TestAdd", "example.com/calc.TestSub"),
				workflow.Event{Kind: workflow.EventGuardDenied, Tool: "run_shell", Outcome: workflow.OutcomeDenied, ErrorKind: "session_guard_denied"})
		}, opts: handoff.FeedbackOptions{Jobs: idle}, wantState: handoff.StateBlocked,
			wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "blocked_workspace_conflict", ledger: func() *ledger {
			return newLedger("Rebase onto main.").add(read("a.go"))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, input: func(in *handoff.BriefInput) {
			in.IncludeWorkspace = true
			in.Workspace = &handoff.WorkspaceSnapshot{Branch: "topic", Head: "abc", Dirty: true, Conflicted: true, Ahead: 2, Behind: 5}
			in.Guidance = &handoff.GuidanceSnapshot{OpenQuestions: 1}
		}, wantState: handoff.StateBlocked, wantCodes: []string{}},
		{name: "blocked_jobs", ledger: func() *ledger {
			return newLedger("Run the slow integration suite.").add(finished("run_job", workflow.OutcomeOK, ""))
		}, opts: handoff.FeedbackOptions{Jobs: &handoff.JobsSnapshot{Active: 2, Blocking: 1, TerminalPending: 1}},
			wantState: handoff.StateBlocked, wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "closed", ledger: func() *ledger {
			return newLedger("Tidy the README.").add(write("README.md")).close()
		}, wantState: handoff.StateClosed,
			wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisJobSummaryUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "validated_after_changes", ledger: func() *ledger {
			return newLedger("Make the calculator tests pass.").add(
				write("calc.go"), goTest("example.com/calc.TestAdd"), write("calc.go"), resolved(goTest(), "example.com/calc.TestAdd"),
				instr("Now also document Add."), read("calc.go"), write("calc.go"), goTest())
		}, opts: handoff.FeedbackOptions{Jobs: idle}, input: full,
			wantState: handoff.StateReadyToContinue, wantCodes: []string{}},
		{name: "attempt_boundary_evicted", ledger: func() *ledger {
			l := newLedger("A long task.")
			for i := range workflow.TailLimit + 10 {
				l.add(read(fmt.Sprintf("f%04d.go", i)))
			}
			return l
		}, opts: handoff.FeedbackOptions{Jobs: idle, Profile: handoff.ProfileMinimal}, input: full,
			wantState: handoff.StateInsufficientEvidence,
			wantCodes: []string{handoff.BasisAttemptBoundaryEvicted, handoff.BasisValidationUnavailable}},
		{name: "session_changed_during_snapshot", ledger: func() *ledger {
			return newLedger("Review the logging.").add(read("log.go"))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, input: func(in *handoff.BriefInput) {
			full(in)
			in.SessionChanged = true
		}, wantState: handoff.StateInsufficientEvidence, wantCodes: []string{handoff.BasisSessionChangedDuringSnapshot}},
		{name: "validation_not_requested", ledger: func() *ledger {
			return newLedger("Make the calculator tests pass.").add(write("calc.go"), goTest("example.com/calc.TestAdd"))
		}, opts: handoff.FeedbackOptions{Jobs: idle, SkipValidation: true}, input: full,
			wantState: handoff.StateNeedsValidation, wantCodes: []string{handoff.BasisValidationNotRequested}},
		{name: "continuation_unavailable", ledger: func() *ledger {
			return newLedger("Something.")
		}, input: func(in *handoff.BriefInput) {
			full(in)
			in.Feedback = nil
		}, wantState: handoff.StateInsufficientEvidence,
			wantCodes: []string{handoff.BasisContinuationUnavailable, handoff.BasisJobSummaryUnavailable, handoff.BasisValidationUnavailable}},
		{name: "outcome_unknown_after_crash", ledger: func() *ledger {
			// A write that finished, a run_process a crash cut off (recovered
			// at start) and a cancelled read: both unknown outcomes are listed.
			started := workflow.Event{Kind: workflow.EventToolCallStarted, Tool: "run_process", CallID: "call_run", InvocationID: "inv_run", Role: workflow.RoleBusiness}
			recovered := workflow.Event{Kind: workflow.EventToolCallFinished, Tool: "run_process", CallID: "call_run", InvocationID: "inv_run",
				Role: workflow.RoleBusiness, Outcome: workflow.OutcomeUnknown, ErrorKind: "outcome_unknown", At: t0.Add(time.Minute),
				Facts: map[string]string{workflow.FactRecovery: workflow.RecoveryServerStart}}
			return newLedger("Regenerate the fixtures.").add(write("gen.go"), started).add(recovered).
				add(finished("read_files", workflow.OutcomeCancelled, "cancelled"))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, wantState: handoff.StateNeedsValidation,
			wantCodes: []string{handoff.BasisGuidanceUnavailable, handoff.BasisWorkspaceNotRequested}},
		{name: "workspace_unavailable", ledger: func() *ledger {
			return newLedger("Secret-bearing task: token=abcd1234efgh5678 and Bearer abcdefghijklmnop; see C:\\repo\\main.go and `go test ./...`.").
				add(read("main.go"))
		}, opts: handoff.FeedbackOptions{Jobs: idle}, input: func(in *handoff.BriefInput) {
			in.IncludeWorkspace = true
			in.Guidance = &handoff.GuidanceSnapshot{}
		}, wantState: handoff.StateReadyToContinue, wantCodes: []string{handoff.BasisWorkspaceUnavailable}},
	}
}

func build(l *ledger, opts handoff.FeedbackOptions, mod func(*handoff.BriefInput)) (handoff.ContinuationFeedback, handoff.HandoffBrief, []byte) {
	fb := handoff.Feedback(l.s, l.evs, opts)
	in := handoff.BriefInput{Session: l.s, Events: l.evs, Feedback: &fb}
	if mod != nil {
		mod(&in)
	}
	b, raw := handoff.Brief(in)
	return fb, b, raw
}

func TestGolden(t *testing.T) {
	seenStates, seenCodes := map[string]bool{}, map[string]bool{}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			fb, b, raw := build(c.ledger(), c.opts, c.input)
			if b.Progress.State != c.wantState {
				t.Errorf("state %s, want %s", b.Progress.State, c.wantState)
			}
			if !slices.Equal(b.Basis.ReasonCodes, c.wantCodes) || b.Basis.Complete != (len(c.wantCodes) == 0) {
				t.Errorf("basis %+v, want %v", b.Basis, c.wantCodes)
			}
			if len(raw) > handoff.BriefMaxBytes {
				t.Errorf("brief is %d bytes", len(raw))
			}
			seenStates[b.Progress.State] = true
			for _, r := range b.Basis.ReasonCodes {
				seenCodes[r] = true
			}
			fbRaw, _ := json.Marshal(fb)
			var got bytes.Buffer
			got.WriteString(`{"continuation_feedback":`)
			got.Write(fbRaw)
			got.WriteString(`,"handoff_brief":`)
			got.Write(raw)
			got.WriteString("}")
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteString("\n")
			path := filepath.Join("testdata", c.name+".json")
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("%s differs from the golden file (run with -update to accept):\n%s", path, pretty.String())
			}
		})
	}
	for _, s := range []string{handoff.StateClosed, handoff.StateBlocked, handoff.StateNeedsValidation,
		handoff.StateInsufficientEvidence, handoff.StateReadyToContinue} {
		if !seenStates[s] {
			t.Errorf("no golden case reaches progress state %s", s)
		}
	}
	for _, r := range []string{handoff.BasisAttemptBoundaryEvicted, handoff.BasisContinuationUnavailable,
		handoff.BasisGuidanceUnavailable, handoff.BasisJobSummaryUnavailable, handoff.BasisSessionChangedDuringSnapshot,
		handoff.BasisValidationNotRequested, handoff.BasisValidationUnavailable, handoff.BasisWorkspaceNotRequested,
		handoff.BasisWorkspaceUnavailable} {
		if !seenCodes[r] {
			t.Errorf("no golden case reports %s", r)
		}
	}
}

func TestFreshSession(t *testing.T) {
	fb := handoff.Feedback(newLedger("Start.").s, newLedger("Start.").evs, handoff.FeedbackOptions{})
	if fb.Status != handoff.StatusNotApplicable || fb.ReasonCode != handoff.ReasonFreshSession {
		t.Fatalf("fresh: %+v", fb)
	}
	l := newLedger("Start.").add(read("a.go"))
	if fb := handoff.Feedback(l.s, l.evs, handoff.FeedbackOptions{}); fb.Status != handoff.StatusAvailable {
		t.Fatalf("after a read: %+v", fb)
	}
}

func TestEvictedBoundary(t *testing.T) {
	l := newLedger("Old task.")
	for i := range workflow.TailLimit {
		l.add(read(fmt.Sprintf("f%d.go", i)))
	}
	if l.evs[0].Seq == 1 || slices.ContainsFunc(l.evs, func(e workflow.Event) bool { return e.Kind == workflow.EventTaskInstruction }) {
		t.Fatal("instruction still retained")
	}
	fb := handoff.Feedback(l.s, l.evs, handoff.FeedbackOptions{Profile: handoff.ProfileFull})
	a := fb.Attempt
	if a.Boundary.Source != handoff.SourceUnavailable || a.Boundary.ReasonCode != handoff.ReasonAttemptBoundaryEvicted ||
		a.EventRange.Complete || a.Exploration.Complete || a.Instruction.Text != nil {
		t.Fatalf("attempt: %+v", a)
	}
	if a.Exploration.Returned != handoff.ExplorationFull || a.Exploration.Total != workflow.TailLimit || !a.Exploration.Truncated ||
		a.Exploration.Items[0] != fmt.Sprintf("f%d.go", workflow.TailLimit-1) {
		t.Fatalf("exploration: %+v", a.Exploration.PathList.Total)
	}
	_, b, _ := build(l, handoff.FeedbackOptions{}, nil)
	if b.Task.RootInstruction.Text != nil || b.Task.LatestInstruction.Text != nil || b.Basis.Complete {
		t.Fatalf("brief: %+v %+v", b.Task, b.Basis)
	}
	// A later instruction is a retained boundary again; the root stays
	// unknown.
	l.add(instr("New attempt."))
	_, b, _ = build(l, handoff.FeedbackOptions{}, nil)
	if b.Task.RootInstruction.Text != nil || b.Task.LatestInstruction.Text == nil || slices.Contains(b.Basis.ReasonCodes, handoff.BasisAttemptBoundaryEvicted) {
		t.Fatalf("brief after a new instruction: %+v %+v", b.Task, b.Basis)
	}
}

func TestExplorationOnlySuccessfulReads(t *testing.T) {
	failedRead := read("failed.go")
	failedRead.Outcome, failedRead.ErrorKind = workflow.OutcomeFailed, "file_not_found"
	listing := finished("list_project_files", workflow.OutcomeOK, "")
	listing.ObservedPaths = []string{"listed.go"}
	l := newLedger("x").add(read("a.go", "b.go"), failedRead, listing, search("b.go", "c.go"), read("a.go"))
	for _, p := range []handoff.Profile{handoff.ProfileMinimal, handoff.ProfileStandard} {
		fb := handoff.Feedback(l.s, l.evs, handoff.FeedbackOptions{Profile: p})
		want := []string{"a.go", "b.go", "c.go"}
		if !slices.Equal(fb.Attempt.Exploration.Items, want) || fb.Attempt.Exploration.Total != 3 {
			t.Fatalf("%s: %+v", p, fb.Attempt.Exploration)
		}
		if fb.Attempt.Activity.Failures != 1 || fb.Attempt.Activity.FailuresByKind["file_not_found"] != 1 {
			t.Fatalf("activity: %+v", fb.Attempt.Activity)
		}
	}
}

func TestValidationNotRequestedIsNotNotRun(t *testing.T) {
	l := newLedger("x").add(write("a.go"))
	fb := handoff.Feedback(l.s, l.evs, handoff.FeedbackOptions{SkipValidation: true})
	_, b, _ := build(l, handoff.FeedbackOptions{SkipValidation: true}, nil)
	if fb.Validation.Status != handoff.ValidationNotRequested || b.Validation.Status != handoff.ValidationNotRequested ||
		!slices.Contains(b.Basis.ReasonCodes, handoff.BasisValidationNotRequested) {
		t.Fatalf("validation: %+v / %+v", fb.Validation, b.Validation)
	}
	_, b, _ = build(l, handoff.FeedbackOptions{}, nil)
	if b.Validation.Status != handoff.ValidationNotRun || b.Workspace.Status != handoff.WorkspaceNotRequested {
		t.Fatalf("defaults: %+v %+v", b.Validation, b.Workspace)
	}
}

func TestFailingTestFirstAction(t *testing.T) {
	l := newLedger("x").add(write("calc.go"), goTest("example.com/calc.TestZero", "example.com/calc.TestAdd"))
	_, b, _ := build(l, handoff.FeedbackOptions{}, nil)
	if len(b.NextActions) == 0 || !strings.Contains(b.NextActions[0], "example.com/calc.TestAdd") || !strings.Contains(b.NextActions[0], "go_test") {
		t.Fatalf("next actions: %q", b.NextActions)
	}
	if !slices.Equal(b.Validation.OpenFailures.Items, []string{"example.com/calc.TestAdd", "example.com/calc.TestZero"}) {
		t.Fatalf("open failures: %+v", b.Validation.OpenFailures)
	}
}

// secrets are planted in instructions; none may reach the brief.
var secrets = []string{
	"sk-proj0123456789abcdefXYZ", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hunter2hunter2",
	"AKIAABCDEFGHIJKLMNOP", "wc_pat_supersecretvalue123", "topsecretbearervalue",
}

func secretText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch r.IntN(6) {
		case 0:
			b.WriteString(" export OPENAI_KEY=sk-proj0123456789abcdefXYZ ")
		case 1:
			b.WriteString(" Authorization: Bearer topsecretbearervalue ")
		case 2:
			b.WriteString(" password=hunter2hunter2 ghp_abcdefghijklmnopqrstuvwxyz0123456789 AKIAABCDEFGHIJKLMNOP ")
		case 3:
			b.WriteString("\n```go\nfunc main() { x := \"<>&\\u2028\"; token := \"wc_pat_supersecretvalue123\"; _ = x }\n```\n")
		case 4:
			b.WriteString(strings.Repeat("<&>", 20))
		default:
			b.WriteString(" ordinary prose about C:\\work\\repo\\main.go and file:///tmp/x ")
		}
	}
	return b.String()
}

// randomLedger builds 2,000 retained events with 64 maximal paths each.
// Events are built directly (as a store returns them); instructions and
// failure identities pass through workflow.Sanitize like stored ones.
func randomLedger(r *rand.Rand) (workflow.Session, []workflow.Event) {
	pool := make([]string, 256)
	for i := range pool {
		pool[i] = fmt.Sprintf("dir%03d/", i) + strings.Repeat(string(rune('a'+r.IntN(26))), 512-7)
		if r.IntN(4) == 0 {
			pool[i] = fmt.Sprintf("d%03d/", i) + strings.Repeat("<é>", (512-5)/3)
		}
	}
	paths := func() []string {
		ps := make([]string, workflow.MaxEventPaths)
		for i := range ps {
			ps[i] = pool[r.IntN(len(pool))]
		}
		return ps
	}
	s := workflow.Session{ID: "wc_sess_0123456789abcdef0123456789abcdef", Project: "agent:local:demo",
		Mode: workflow.ModeNormal, Lifecycle: workflow.Active, EventsObserved: int64(r.IntN(5000)) + workflow.TailLimit}
	if r.IntN(3) == 0 {
		s.Lifecycle = workflow.Closed
	}
	first := s.EventsObserved - workflow.TailLimit + 1
	if r.IntN(2) == 0 {
		first = 1
		s.EventsObserved = workflow.TailLimit
	}
	s.RetentionTruncated = first > 1
	evs := make([]workflow.Event, workflow.TailLimit)
	for i := range evs {
		var e workflow.Event
		switch k := r.IntN(20); {
		case k == 0:
			e = workflow.Sanitize(instr(secretText(r, workflow.InstructionMaxChars+200)))
		case k == 1:
			ids := make([]string, 8)
			for j := range ids {
				ids[j] = fmt.Sprintf("example.com/pkg%d.Test%s_%d", j, strings.Repeat("X", 480), r.IntN(1000))
			}
			v := goTest(ids...)
			v.Validation.Failures = append(v.Validation.Failures, "password=hunter2hunter2")
			e = workflow.Sanitize(v)
		case k < 10:
			e = read(paths()...)
		case k < 16:
			e = write(paths()...)
		default:
			e = finished("run_shell", workflow.OutcomeFailed, fmt.Sprintf("kind_%d", r.IntN(30)))
		}
		e.Seq = first + int64(i)
		e.At = t0
		evs[i] = e
	}
	s.Counters.Instructions = 3
	return s, evs
}

func TestBriefPropertyBoundedDeterministicRedacted(t *testing.T) {
	n := 4
	if testing.Short() {
		n = 2
	}
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		s, evs := randomLedger(r)
		opts := handoff.FeedbackOptions{Profile: handoff.ProfileFull, Jobs: &handoff.JobsSnapshot{Active: r.IntN(3)}}
		conflicted := r.IntN(2) == 0
		mk := func() []byte {
			fb := handoff.Feedback(s, evs, opts)
			_, raw := handoff.Brief(handoff.BriefInput{Session: s, Events: evs, Feedback: &fb, IncludeWorkspace: true,
				Workspace: &handoff.WorkspaceSnapshot{Branch: strings.Repeat("<b>", 300), Head: strings.Repeat("f", 300), Conflicted: conflicted}})
			return raw
		}
		a, b := mk(), mk()
		if len(a) > handoff.BriefMaxBytes {
			t.Fatalf("seed %d: brief is %d bytes", seed, len(a))
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: second build differs", seed)
		}
		for _, sec := range secrets {
			if bytes.Contains(a, []byte(sec)) {
				t.Fatalf("seed %d: brief leaks %q", seed, sec)
			}
		}
		var br handoff.HandoffBrief
		if err := json.Unmarshal(a, &br); err != nil || br.Version != 1 || !br.Deterministic || br.LLMSummary || br.Progress.State == "" {
			t.Fatalf("seed %d: brief %v %+v", seed, err, br)
		}
	}
}

func TestByteBudgetReductionOrder(t *testing.T) {
	long := func(i int) string { return fmt.Sprintf("p%02d/", i) + strings.Repeat("<", 500) }
	l := newLedger(strings.Repeat("&", 4000))
	for i := range 20 {
		l.add(read(long(i)), write(long(i+50)))
	}
	l.add(goTest(long(1), long(2), long(3), long(4), long(5), long(6)))
	_, b, raw := build(l, handoff.FeedbackOptions{}, nil)
	if len(raw) > handoff.BriefMaxBytes {
		t.Fatalf("brief is %d bytes", len(raw))
	}
	if b.Progress.RecentFiles.Returned != 0 || !b.Progress.RecentFiles.Truncated || b.Progress.RecentFiles.Total != 20 {
		t.Fatalf("recent files not reduced first: %+v", b.Progress.RecentFiles.Returned)
	}
	if b.Progress.State != handoff.StateBlocked || b.Validation.Status != handoff.ValidationFailed || b.Validation.OpenFailures.Total != 6 {
		t.Fatalf("status lost: %s %s", b.Progress.State, b.Validation.Status)
	}
	if !b.Task.RootInstruction.Truncated || b.Task.RootInstruction.Text == nil {
		t.Fatalf("root excerpt: %+v", b.Task.RootInstruction)
	}
}
