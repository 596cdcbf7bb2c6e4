package kernel

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/webcodex/webcodex/internal/failure"
)

type messageIn struct {
	Project string `json:"project"`
	Files   []struct {
		Path  string `json:"path"`
		Start int    `json:"start,omitempty"`
		Small int8   `json:"small,omitempty"`
	} `json:"files"`
	Env   map[string]string `json:"env,omitempty"`
	Limit *int              `json:"limit,omitempty"`
}

// TestDecodeMessagesArePlain: every wrong input is invalid_arguments with a
// message that names the JSON path and what was expected, and shows no Go
// internals. `"project": null` reproduces the former
// `type: <invalid reflect.Value> has type "null"`.
func TestDecodeMessagesArePlain(t *testing.T) {
	schema, err := jsonschema.For[messageIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{`{"project":null,"files":[]}`, "at arguments.project: got null, want string"},
		{`{"project":1,"files":[]}`, "at arguments.project: got number, want string"},
		{`{"project":"p","files":[{"path":null}]}`, "at arguments.files[0].path: got null, want string"},
		{`{"project":"p","files":[{"path":"a"},{}]}`, "at arguments.files[1]: missing property 'path'"},
		{`{"project":"p","files":[{"path":"a","start":1.5}]}`, "at arguments.files[0].start: got number, want integer"},
		{`{"project":"p","files":[{"path":"a","bogus":1}]}`, "at arguments.files[0]: additional properties 'bogus' not allowed"},
		{`{"project":"p","files":"x"}`, "at arguments.files: got string, want null or array"},
		{`{"project":"p","files":[],"env":{"A":1}}`, "at arguments.env.A: got number, want string"},
		{`{"project":"p","files":[],"env":{"a b":null}}`, `at arguments.env["a b"]: got null, want string`},
		{`{"files":[]}`, "at arguments: missing property 'project'"},
		{`{"project":"p","files":[],"limit":"3"}`, "at arguments.limit: got string, want null or integer"},
		{`{"project":"p","files":[{"path":"a","start":1e30}]}`, "at arguments.files.start: got number 1e30, want an integer between"},
		{`{"project":"p","files":[{"path":"a","small":300}]}`, "at arguments.files[0].small: maximum: got 300, want 127"},
	}
	for _, c := range cases {
		var v messageIn
		err := decodeStrict([]byte(c.in), resolved, &v)
		if failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("%s: kind %q (%v), want invalid_arguments", c.in, failure.KindOf(err), err)
			continue
		}
		msg := failure.MessageOf(err)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s:\n got  %s\n want %s", c.in, msg, c.want)
		}
		for _, internal := range []string{"reflect", "<", "interface {}", "map[", "[]struct", "kernel.", "Go struct", "int8", "float64", "validating /properties"} {
			if strings.Contains(msg, internal) {
				t.Errorf("%s: message shows %q: %s", c.in, internal, msg)
			}
		}
	}
}
