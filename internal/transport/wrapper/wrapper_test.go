package wrapper

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/failure"
)

var mcpMembers = []string{"recording_session_id", "ack_session_message_ids", "context_request"}

func TestSplitRefusesDuplicatesWithOrWithoutWrapperMembers(t *testing.T) {
	for _, raw := range []string{
		`{"a":1,"a":2}`,
		`{"a":1,"a":2,"context_request":["webcodex.workflow"]}`,
		`{"context_request":["webcodex.workflow"],"a":1,"a":2}`,
		`{"recording_session_id":"x","recording_session_id":"y"}`,
		`{"files":[{"path":"a","path":"b"}],"context_request":[]}`,
		`{"x":{"y":{"z":1,"z":2}}}`,
		`{"x":[[{"k":1}],{"k":1,"k":2}],"recording_session_id":"s"}`,
	} {
		rest, members, err := Split([]byte(raw), mcpMembers...)
		if failure.KindOf(err) != failure.InvalidArguments || rest != nil || members != nil {
			t.Errorf("%s: rest %q members %v err %v, want invalid_arguments", raw, rest, members, err)
		}
	}
}

func TestSplitKeepsTheRestByteForByte(t *testing.T) {
	for _, c := range []struct{ raw, rest, recorder, context string }{
		{`{"a":1}`, `{"a":1}`, "", ""},
		{` { "b" : "x\u003cy" , "recording_session_id" : "wc_sess_1" } `, `{"b":"x\u003cy"}`, `"wc_sess_1"`, ""},
		{`{"n":1.50e3,"context_request":["k"],"o":{"k":[1,{"a":null}]},"s":"é"}`, `{"n":1.50e3,"o":{"k":[1,{"a":null}]},"s":"é"}`, "", `["k"]`},
		{`{"recording_session_id":"r"}`, `{}`, `"r"`, ""},
		// Case variants are not wrapper members: they stay for the schema.
		{`{"Recording_Session_ID":"r"}`, `{"Recording_Session_ID":"r"}`, "", ""},
	} {
		rest, members, err := Split([]byte(c.raw), mcpMembers...)
		if err != nil || string(rest) != c.rest || string(members["recording_session_id"]) != c.recorder ||
			string(members["context_request"]) != c.context {
			t.Errorf("%s: rest %s members %v err %v", c.raw, rest, members, err)
		}
	}
}

func TestSplitOnlyTheNamedMembers(t *testing.T) {
	raw := `{"project":"p","context_request":["k"],"recording_session_id":"r"}`
	rest, members, err := Split([]byte(raw), "recording_session_id")
	if err != nil || string(rest) != `{"project":"p","context_request":["k"]}` || len(members) != 1 {
		t.Fatalf("rest %s members %v err %v", rest, members, err)
	}
}

func TestSplitLeavesNonObjectsToTheKernel(t *testing.T) {
	for _, raw := range []string{``, `  `, `[1,2]`, `"s"`, `{"a":`, `{"a":1}{"b":2}`, `{"a":1,}`, `{"a":1} x`} {
		rest, members, err := Split([]byte(raw), mcpMembers...)
		if err != nil || string(rest) != raw || members != nil {
			t.Errorf("%q: rest %q members %v err %v, want it unchanged", raw, rest, members, err)
		}
	}
}

// FuzzSplitAgreesWithTheTokenWalk holds Split (one pass over the bytes of
// valid JSON) to splitTokens (the token walk it took before) on every input.
func FuzzSplitAgreesWithTheTokenWalk(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a":1,"a":2}`, `{"recording_session_id":"r","x":[{"k":1,"k":2}]}`,
		` { "b" : "x\u003cy" , "recording_session_id" : "wc_sess_1" } `,
		`{"recording\u005fsession_id":"r","a":{"b":[1,2,"]"]}}`,
		`{"context_request":["k"],"o":{"k":[1,{"a":null}]},"n":-1.5e3,"t":true}`,
		`{"a":1} x`, `{"a":`, `[]`, `{"a":1,"a":2,`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rest, members, err := Split(raw, mcpMembers...)
		wRest, wMembers, wErr := splitTokens(raw, mcpMembers)
		if string(rest) != string(wRest) || (err == nil) != (wErr == nil) || len(members) != len(wMembers) {
			t.Fatalf("%q: Split = %q %v %v; the token walk %q %v %v", raw, rest, members, err, wRest, wMembers, wErr)
		}
		if err != nil && err.Error() != wErr.Error() {
			t.Fatalf("%q: Split error %v; the token walk's %v", raw, err, wErr)
		}
		for k, v := range wMembers {
			if string(members[k]) != string(v) {
				t.Fatalf("%q: member %s = %s; the token walk's %s", raw, k, members[k], v)
			}
		}
	})
}

// BenchmarkSplit compares, alternated, the token walk with Split on
// write_project_file arguments carrying 4 KiB of content and a recorder.
func BenchmarkSplit(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n", 64))
	raw := []byte(`{"project":"agent:local:bench","path":"small.go","content":` + string(content) +
		`,"expected_sha256":"` + strings.Repeat("ab", 32) + `","recording_session_id":"wc_sess_0123"}`)
	benchpair.Run(b, "tokens", func() { splitTokens(raw, mcpMembers) }, "bytes", func() { Split(raw, mcpMembers...) })
}
