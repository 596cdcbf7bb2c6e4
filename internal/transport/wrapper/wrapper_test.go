package wrapper

import (
	"testing"

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
