package run_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/tools/run"
	"github.com/webcodex/webcodex/internal/workflow"
)

// lastFinished reads the session's ledger back from its SQLite store and
// returns the last tool_call_finished event.
func (e *env) lastFinished(sid string) workflow.Event {
	e.T.Helper()
	evs, err := e.svc.Store().Events(context.Background(), sid, 0)
	if err != nil {
		e.T.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == workflow.EventToolCallFinished {
			return evs[i]
		}
	}
	e.T.Fatal("no tool_call_finished event")
	return workflow.Event{}
}

// TestExpectationNeverRewritesTheResult reproduces issue 11 item 6: exit
// 0 with result_expectation failure is success:true with the expectation
// not matched, exit 1 with failure is success:false command_failed with
// the expectation matched, and accepted_exit_codes likewise; the ledger
// records the real outcome and classifies it by the expectation.
func TestExpectationNeverRewritesTheResult(t *testing.T) {
	for _, withJobs := range []bool{true, false} {
		t.Run("jobs="+strconv.FormatBool(withJobs), func(t *testing.T) {
			e := newEnvWith(t, withJobs, jobs.Options{})
			sid := e.session("", nil)
			cases := []struct {
				name     string
				tool     string
				args     map[string]any
				code     int
				success  bool
				matched  bool
				declared command.Expectation
				class    workflow.FailureClass
			}{
				{"Exit0Failure", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "result_expectation": "failure"},
					0, true, false, command.ExpectFailure, workflow.FailureActionable},
				{"Exit1Failure", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 1"}, "result_expectation": "failure"},
					1, false, true, command.ExpectFailure, workflow.FailureNonActionable},
				{"Exit1Accepted", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 1"}, "accepted_exit_codes": []int{0, 1}},
					1, false, true, command.ExpectSuccess, workflow.FailureNonActionable},
				{"Exit0NotAccepted", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "accepted_exit_codes": []int{1}},
					0, true, false, command.ExpectSuccess, workflow.FailureActionable},
				{"Exit1Observe", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 1"}, "result_expectation": "observe"},
					1, false, true, command.ExpectObserve, workflow.FailureNonActionable},
				{"Exit0Observe", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 0"}, "result_expectation": "observe"},
					0, true, true, command.ExpectObserve, workflow.NoFailure},
				{"Exit1Success", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 1"}},
					1, false, false, command.ExpectSuccess, workflow.FailureActionable},
				{"Exit0Success", "run_process", map[string]any{"argv": []string{"sh", "-c", "exit 0"}},
					0, true, true, command.ExpectSuccess, workflow.NoFailure},
				{"ShellExit0Failure", "run_shell", map[string]any{"command": "exit 0", "result_expectation": "failure"},
					0, true, false, command.ExpectFailure, workflow.FailureActionable},
				{"ShellExit1Failure", "run_shell", map[string]any{"command": "exit 1", "result_expectation": "failure"},
					1, false, true, command.ExpectFailure, workflow.FailureNonActionable},
				{"ScriptExit0Failure", "run_script", map[string]any{"interpreter": "sh", "script": "exit 0\n", "result_expectation": "failure"},
					0, true, false, command.ExpectFailure, workflow.FailureActionable},
				{"ScriptExit1Failure", "run_script", map[string]any{"interpreter": "sh", "script": "exit 1\n", "result_expectation": "failure"},
					1, false, true, command.ExpectFailure, workflow.FailureNonActionable},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					tc.args["session_id"] = sid
					res := e.Call(tc.tool, tc.args)
					var out run.Output
					if tc.success {
						out = kerneltest.OK[run.Output](t, res)
						if out.State != jobs.Succeeded {
							t.Fatalf("state %s, want succeeded", out.State)
						}
					} else {
						kerneltest.Fails(t, res, failure.CommandFailed)
						out = failedExecution(t, res)
						if out.State != jobs.Failed {
							t.Fatalf("state %s, want failed", out.State)
						}
					}
					if out.ExitCode != tc.code || out.Ending != runner.Exited ||
						out.Expectation != (run.ExpectationResult{Declared: tc.declared, Matched: tc.matched}) {
						t.Fatalf("result %+v, want exit %d expectation {%s %v}", out, tc.code, tc.declared, tc.matched)
					}
					ev := e.lastFinished(sid)
					wantOutcome, wantKind := workflow.OutcomeOK, ""
					if !tc.success {
						wantOutcome, wantKind = workflow.OutcomeFailed, string(failure.CommandFailed)
					}
					if ev.Tool != tc.tool || ev.Outcome != wantOutcome || ev.ErrorKind != wantKind ||
						ev.Facts["exit_code"] != strconv.Itoa(tc.code) || ev.Facts["expectation"] != string(tc.declared) ||
						ev.Facts["expectation_matched"] != strconv.FormatBool(tc.matched) {
						t.Fatalf("ledger event %s %s %s %v", ev.Tool, ev.Outcome, ev.ErrorKind, ev.Facts)
					}
					if got := workflow.ClassifyFailure(ev); got != tc.class {
						t.Fatalf("ledger classification %q, want %q", got, tc.class)
					}
				})
			}
			// A timeout never matches, even observe, and is fail-closed.
			res := e.Call("run_process", map[string]any{"session_id": sid, "argv": []string{"sleep", "5"}, "timeout_seconds": 1, "result_expectation": "observe"})
			kerneltest.Fails(t, res, failure.TimedOut)
			if ex := failedExecution(t, res); ex.State != jobs.TimedOut || ex.Expectation.Matched {
				t.Fatalf("timeout %+v", ex)
			}
			if got := workflow.ClassifyFailure(e.lastFinished(sid)); got != workflow.FailureUnexpected {
				t.Fatalf("timeout classification %q", got)
			}
		})
	}
}
