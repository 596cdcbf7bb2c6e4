package kernel

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/webcodex/webcodex/internal/failure"
)

type fuzzIn struct {
	ProjectRef
	Files []struct {
		Path  string `json:"path"`
		Start int    `json:"start,omitempty"`
	} `json:"files"`
	Flag bool `json:"flag,omitempty"`
}

func FuzzDecodeStrict(f *testing.F) {
	schema, err := jsonschema.For[fuzzIn](nil)
	if err != nil {
		f.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"project":"p","files":[{"path":"a"}]}`,
		`{"project":"p","files":[],"flag":true}`,
		`{"project":"p","project":"q","files":[]}`,
		`{"Project":"p","files":[]}`,
		`{"project":"p","files":[{"path":"a","path":"b"}]}`,
		`{"project":"p","files":[{"path":"a","start":1.5}]}`,
		`{"project":"p","files":[]} {}`,
		`[]`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var v fuzzIn
		err := decodeStrict(raw, resolved, &v)
		if err != nil {
			if k := failure.KindOf(err); k != failure.InvalidArguments && k != failure.RequestTooLarge {
				t.Fatalf("error kind %q", k)
			}
			return
		}
		// Whatever was accepted is a single object whose members are all
		// known, with no duplicates: re-encoding the decoded value and
		// decoding the original loosely must agree.
		var loose fuzzIn
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &loose); err != nil {
				t.Fatalf("accepted input a plain decoder rejects: %v", err)
			}
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(loose)
		if string(a) != string(b) {
			t.Fatalf("strict and plain decoding disagree: %s vs %s", a, b)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) == nil {
			for k := range members {
				if k != "project" && k != "files" && k != "flag" {
					t.Fatalf("accepted unknown member %q", k)
				}
			}
		}
	})
}
