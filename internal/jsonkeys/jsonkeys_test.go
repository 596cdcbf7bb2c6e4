package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
)

// tokenDuplicate is the token-stream walk FirstDuplicate replaces (the
// kernel's and the wrapper splitter's before it): the reference it must
// agree with on every valid document.
func tokenDuplicate(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.keys != nil {
					top.wantKey = true
				}
				f := &frame{}
				if t == '{' {
					f = &frame{keys: map[string]bool{}, wantKey: true}
				}
				stack = append(stack, f)
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.keys != nil && top.wantKey {
				if top.keys[t] {
					return t, true
				}
				top.keys[t] = true
				top.wantKey = false
				continue
			}
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
		default:
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
		}
	}
}

var cases = []string{
	`{}`, `[]`, `"a"`, `1`, `null`,
	`{"a":1,"b":2}`,
	`{"a":1,"a":2}`,
	`{"a":1,"\u0061":2}`,
	`{"a\"b":1,"a\"b":2}`,
	`{"x":{"a":1,"b":{"a":2}},"y":[{"a":1},{"a":1}]}`,
	`{"x":{"a":1,"b":{"c":2,"c":3}}}`,
	`{"x":[{"k":"v","k":"w"}]}`,
	`{"s":"a,\"b\":{\"c\"","s2":"\\","t":"{\"a\":1,\"a\":2}"}`,
	`{"a":[1,2,{"b":[{"c":1}]}],"b":1,"a":0}`,
	`{"k":"\ud800","k2":"\udc00"}`,
	"{\"\xff\":1,\"\xfe\":2}", // both keys decode to U+FFFD
	`{ "a" : 1 , "b" : [ { "a" : 1 , "a" : 2 } ] }`,
	`[{"a":1},{"a":2},{"b":1,"b":2}]`,
	`{"e":{},"e2":[],"e":[]}`,
}

func TestFirstDuplicateAgreesWithTheTokenWalk(t *testing.T) {
	many := &strings.Builder{}
	many.WriteString(`{`)
	for i := range 40 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	withMany := many.String()
	all := append(append([]string{}, cases...), withMany+`}`, withMany+`,"kxxxxxxxxxxxxxxxxxxxx":2}`, withMany+`,"k":2}`)
	for _, c := range all {
		if !json.Valid([]byte(c)) {
			t.Fatalf("case is not valid JSON: %s", c)
		}
		wantKey, want := tokenDuplicate([]byte(c))
		gotKey, got := FirstDuplicate([]byte(c))
		if got != want || gotKey != wantKey {
			t.Errorf("%s: FirstDuplicate = %q, %v; the token walk says %q, %v", c, gotKey, got, wantKey, want)
		}
	}
}

// TestFirstDuplicateFindsTheRepeats checks the cases that must be found,
// so that agreement above is not agreement on "none".
func TestFirstDuplicateFindsTheRepeats(t *testing.T) {
	for c, want := range map[string]string{
		`{"a":1,"a":2}`:                       "a",
		`{"a":1,"\u0061":2}`:                  "a",
		`{"x":{"a":1,"b":{"c":2,"c":3}}}`:     "c",
		`[{"a":1},{"a":2},{"b":1,"b":2}]`:     "b",
		"{\"\xff\":1,\"\xfe\":2}":             "\ufffd",
		`{"a":[1,{"b":1}],"c":{"b":2},"a":0}`: "a",
	} {
		if got, ok := FirstDuplicate([]byte(c)); !ok || got != want {
			t.Errorf("%s: got %q, %v; want %q", c, got, ok, want)
		}
	}
	if k, ok := FirstDuplicate([]byte(`{"s":"{\"a\":1,\"a\":2}","a":[{"a":1}]}`)); ok {
		t.Errorf("found %q inside a string or across objects", k)
	}
}

// FuzzFirstDuplicate holds FirstDuplicate to the token walk on every valid
// document and to returning at all on every other input.
func FuzzFirstDuplicate(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"a":"\`))
	f.Add([]byte(`{"a`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		gotKey, got := FirstDuplicate(raw)
		if !json.Valid(raw) {
			return
		}
		if wantKey, want := tokenDuplicate(raw); got != want || gotKey != wantKey {
			t.Fatalf("%q: FirstDuplicate = %q, %v; the token walk says %q, %v", raw, gotKey, got, wantKey, want)
		}
	})
}

// BenchmarkFirstDuplicate compares, alternated, the token walk with
// FirstDuplicate on write_project_file arguments carrying 4 KiB of content.
func BenchmarkFirstDuplicate(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n", 64))
	raw := []byte(`{"project":"agent:local:bench","path":"small.go","content":` + string(content) + `,"expected_sha256":"` + strings.Repeat("ab", 32) + `"}`)
	benchpair.Run(b, "tokens", func() { tokenDuplicate(raw) }, "bytes", func() { FirstDuplicate(raw) })
}
