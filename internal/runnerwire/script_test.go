package runnerwire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// A start carrying a script and stdin at their bounds, with a plausible
// argv, environment and sandbox, still fits one frame; one byte more of
// script is refused by the runner's validation.
func TestScriptBoundFitsAFrame(t *testing.T) {
	s := runner.Spec{Argv: []string{"python3", "arg"}, Dir: "/home/me/src/" + strings.Repeat("d", 200), Env: map[string]string{"A": strings.Repeat("v", 1000)},
		Stdin: []byte(strings.Repeat("<", MaxStdinBytes)), Script: []byte(strings.Repeat(">", MaxScriptBytes)),
		Sandbox: runner.Sandbox{Mode: runner.WorkspaceWrite, Project: "/home/me/src"}, RunID: "job_" + strings.Repeat("x", 60)}
	ps := FromSpec(s)
	if err := ps.Validate(); err != nil {
		t.Fatalf("a start at the bounds: %v", err)
	}
	args, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(KindRequest, 1, "rq_"+strings.Repeat("f", 32), Request{Op: OpProcStart, Project: "demo", Args: args})
	if err != nil {
		t.Fatalf("a start at the bounds does not fit a frame: %v", err)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var req Request
	var back ProcStart
	if err := json.Unmarshal(f.Body, &req); err != nil || Strict(req.Args, &back) != nil || string(back.Spec("/home/me/src").Script) != string(s.Script) {
		t.Fatalf("the script does not come back whole: %v", err)
	}
	ps.Script = append(ps.Script, 'x')
	if err := ps.Validate(); !errors.Is(err, ErrFrame) {
		t.Fatalf("a script over the bound: %v", err)
	}
	ps.Script, ps.SSH = []byte("x"), &ProcSSH{Resource: "db", Session: "s"}
	if err := ps.Validate(); !errors.Is(err, ErrFrame) {
		t.Fatalf("a script on an SSH resource: %v", err)
	}
}

// The report stream round-trips; a start's collect must name a plain file
// of its private directory.
func TestReportStreamAndCollect(t *testing.T) {
	b, err := EncodeBinary(Binary{Type: BinOutput, Gen: 3, ID: "rq_1", Stream: Report, Offset: 5, Data: []byte("<x/>")})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeBinary(b); err != nil || m.Stream != Report || m.Offset != 5 || string(m.Data) != "<x/>" {
		t.Fatalf("round trip: %v %+v", err, m)
	}
	ps := FromSpec(runner.Spec{Argv: []string{"pytest"}, RunID: "wc_job_1", Private: true, Collect: "junit.xml"})
	if err := ps.Validate(); err != nil || !ps.Spec("/p").Private || ps.Spec("/p").Collect != "junit.xml" {
		t.Fatalf("a collecting start: %v %+v", err, ps)
	}
	for name, bad := range map[string]ProcStart{
		"no private dir": {Argv: []string{"x"}, RunID: "wc_job_1", Collect: "junit.xml"},
		"a path":         {Argv: []string{"x"}, RunID: "wc_job_1", Private: true, Collect: "../junit.xml"},
		"over ssh":       {Argv: []string{"x"}, RunID: "wc_job_1", Private: true, SSH: &ProcSSH{Resource: "db", Session: "s"}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
