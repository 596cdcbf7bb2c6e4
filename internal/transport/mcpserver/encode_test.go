package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// sdkEncode encodes v the way the SDK's JSON-RPC layer encodes a result: a
// json.Encoder without HTML escaping, newline trimmed.
func sdkEncode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// withResultType returns an empty CallToolResult whose unexported result
// type is rt, as the SDK sets it for a 2026-07-28 client.
func withResultType(t *testing.T, rt string) *mcp.CallToolResult {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"`+rt+`"}`), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestEncodedResultIsTheSDKEncoding holds encodedResult to the bytes the
// SDK's own CallToolResult encoding gives, for the transport's results
// (content with HTML-significant characters, U+2028, non-ASCII, a sidecar,
// failures, the modern resultType) and for shapes it leaves to the SDK.
func TestEncodedResultIsTheSDKEncoding(t *testing.T) {
	tricky := "if a < b && c > d {\n\t// \u2028 line sep, \u2029 para sep, é, 日本, \"quotes\", \\ back\n}\n"
	ok := kernel.Result{Success: true, Output: map[string]any{"files": []any{map[string]any{"path": "a.go", "content": tricky}}}}
	ok.Body = []byte(`{"success":true,"output":{"files":[{"content":` + string(mustJSON(t, tricky)) + `,"path":"a.go"}]}}`)
	warned := ok
	warned.Warnings = []kernel.Warning{{Kind: failure.EvidenceGap, Message: "gap <here> & there"}}
	failedRes := kernel.Failure(failure.New(failure.InvalidArguments, "bad <path> & more"))

	cases := map[string]func() *mcp.CallToolResult{
		"success": func() *mcp.CallToolResult { return result(ok, nil) },
		"sidecar": func() *mcp.CallToolResult { return result(warned, nil) },
		"failure": func() *mcp.CallToolResult { return result(failedRes, nil) },
		"context": func() *mcp.CallToolResult { return result(ok, map[string]Material{"k": {}}) },
		"resultType": func() *mcp.CallToolResult {
			r := withResultType(t, "complete")
			*r = patch(*r, result(warned, nil))
			return r
		},
		"meta (sdk path)": func() *mcp.CallToolResult { r := result(ok, nil); r.Meta = mcp.Meta{"x": "<y>"}; return r },
		"any structured": func() *mcp.CallToolResult {
			r := result(ok, nil)
			r.StructuredContent = map[string]any{"a": "<b>"}
			return r
		},
		"annotated text": func() *mcp.CallToolResult {
			r := result(ok, nil)
			r.Content = append(r.Content, &mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}})
			return r
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			want := sdkEncode(t, mk())
			if name == "resultType" && !bytes.Contains(want, []byte(`"resultType":"complete"`)) {
				t.Fatalf("the case lacks its result type: %s", want)
			}
			got := sdkEncode(t, encodedResult{mk()})
			if !bytes.Equal(got, want) {
				t.Fatalf("encodedResult differs from the SDK's encoding:\n got %s\nwant %s", got, want)
			}
			direct, err := encodeCallResult(mk())
			if err != nil || !bytes.Equal(direct, want) {
				t.Fatalf("encodeCallResult = %s, %v; want %s", direct, err, want)
			}
		})
	}
}

// patch sets the content members of base (which carries a result type)
// from r.
func patch(base mcp.CallToolResult, r *mcp.CallToolResult) mcp.CallToolResult {
	base.Content, base.StructuredContent, base.IsError = r.Content, r.StructuredContent, r.IsError
	return base
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeLineIsEncodeMessage holds the stdio framing to the bytes of
// jsonrpc.EncodeMessage plus a newline, for framed responses (number and
// string ids, HTML-significant characters) and for the messages it leaves
// to the SDK.
func TestEncodeLineIsEncodeMessage(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"a \u003c b & \"c\""}],"structuredContent":{"x":"\u2028<"}}`)
	msgs := map[string]jsonrpc.Message{
		"number id":    &jsonrpc.Response{ID: id(float64(7)), Result: result},
		"zero id":      &jsonrpc.Response{ID: id(float64(0)), Result: result},
		"string id":    &jsonrpc.Response{ID: id("a<b>&\"c\"\u2028é"), Result: result},
		"error":        &jsonrpc.Response{ID: id(float64(3)), Error: &jsonrpc.Error{Code: -32602, Message: "bad <x>"}},
		"request":      &jsonrpc.Request{ID: id(float64(9)), Method: "roots/list", Params: json.RawMessage(`{}`)},
		"notification": &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)},
	}
	for name, msg := range msgs {
		t.Run(name, func(t *testing.T) {
			want, err := jsonrpc.EncodeMessage(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeLine(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append(want, '\n')) {
				t.Fatalf("encodeLine differs from EncodeMessage:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// BenchmarkResultEncoding compares, alternated (benchpair), the encoding of
// a 4 KiB read_files answer as the SDK did it (CallToolResult.MarshalJSON
// under the JSON-RPC encoder, then jsonrpc.EncodeMessage) with the
// transport's (encodedResult, then encodeLine).
func BenchmarkResultEncoding(b *testing.B) {
	content := bytes.Repeat([]byte("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n"), 64)
	out := map[string]any{"files": []any{map[string]any{"path": "small.go", "content": string(content), "sha256": "0123"}}}
	body, err := json.Marshal(map[string]any{"success": true, "output": out})
	if err != nil {
		b.Fatal(err)
	}
	res := kernel.Result{Success: true, Output: out, Body: body}
	id, _ := jsonrpc.MakeID(float64(42))
	encode := func(r mcp.Result, frame func(jsonrpc.Message) ([]byte, error)) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			b.Fatal(err)
		}
		if _, err := frame(&jsonrpc.Response{ID: id, Result: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}); err != nil {
			b.Fatal(err)
		}
	}
	benchpair.Run(b, "sdk", func() { encode(result(res, nil), jsonrpc.EncodeMessage) },
		"once", func() { encode(encodedResult{result(res, nil)}, encodeLine) })
}

// FuzzDecodeRequestIsDecodeMessage holds the stdio transport's request
// decoding to jsonrpc.DecodeMessage on every valid line it decodes itself.
func FuzzDecodeRequestIsDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_files","arguments":{"files":[{"path":"a"}]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
		`{"jsonrpc":"2.0","id":-42,"method":"","params":{}}`,
		`{ "id" : 7 , "method" : "x" , "jsonrpc" : "2.0" , "params" : { "a" : [ 1 , "}" ] } }`,
		`{"json\u0072pc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"pong"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"JSONRPC":"2.0","id":1,"Method":"ping"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) {
			return
		}
		fast, ok := decodeRequest(line)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("%s: decoded as %+v; DecodeMessage refuses it: %v", line, fast, err)
		}
		want, isReq := msg.(*jsonrpc.Request)
		if !isReq || want.Method != fast.Method || want.ID != fast.ID || !bytes.Equal(want.Params, fast.Params) {
			t.Fatalf("%s: decoded as %+v; DecodeMessage gives %+v", line, fast, msg)
		}
	})
}

// TestDecodeRequestTakesTheCommonShape checks the fast path is taken for
// the lines clients send, so the fuzz target above compares something.
func TestDecodeRequestTakesTheCommonShape(t *testing.T) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_files","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a-1","method":"ping"}`,
	} {
		if _, ok := decodeRequest([]byte(s)); !ok {
			t.Errorf("%s: left to DecodeMessage", s)
		}
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"pong"}`,
		`{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":[` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `]}`,
	} {
		if req, ok := decodeRequest([]byte(s)); ok {
			t.Errorf("%s: decoded as %+v, want it left to DecodeMessage", s, req)
		}
	}
}

// BenchmarkDecodeRequest compares, alternated, jsonrpc.DecodeMessage with
// decodeRequest on a write_project_file request line with 4 KiB of content.
func BenchmarkDecodeRequest(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n", 64))
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"write_project_file","arguments":{"project":"agent:local:bench","path":"small.go","content":` + string(content) + `}}}`)
	benchpair.Run(b, "sdk", func() {
		if _, err := jsonrpc.DecodeMessage(line); err != nil {
			b.Fatal(err)
		}
	}, "members", func() {
		if _, ok := decodeRequest(line); !ok {
			b.Fatal("not decoded")
		}
	})
}

// TestStructuredContentJoinsBodyAndSidecar: the structuredContent of a
// call with a sidecar, built from the Body's bytes and the sidecar's, is
// byte for byte the ToolResult encoded whole, for successes and failures,
// with warnings, context and projections, and text that JSON escapes.
func TestStructuredContentJoinsBodyAndSidecar(t *testing.T) {
	tricky := "a < b && c > d \u2028 é \"q\" \\"
	body := func(res kernel.Result) kernel.Result {
		res.Body = sdkEncode(t, struct {
			Success bool              `json:"success"`
			Output  any               `json:"output"`
			Error   *kernel.ErrorBody `json:"error,omitempty"`
		}{res.Success, res.Output, res.Error})
		return res
	}
	ok := body(kernel.Result{Success: true, Output: map[string]any{"files": []any{map[string]any{"path": "a.go", "content": tricky}}}})
	warn := []kernel.Warning{{Kind: failure.EvidenceGap, Message: "gap <" + tricky + ">"}}
	attention := kernel.Projections{SessionAttention: &workflow.Attention{SessionID: "wc_sess_x", AckAccepted: []string{"wc_msg_1"}}}
	cases := map[string]struct {
		res       kernel.Result
		materials map[string]Material
	}{
		"warnings":  {func() kernel.Result { r := ok; r.Warnings = warn; return r }(), nil},
		"context":   {ok, map[string]Material{"webcodex.workflow": {Status: "ok", Content: tricky}}},
		"attention": {func() kernel.Result { r := ok; r.Projections = attention; return r }(), nil},
		"failure, warnings": {func() kernel.Result {
			r := kernel.Failure(failure.New(failure.NotFound, "%s", tricky))
			r.Warnings = warn
			return r
		}(), nil},
		"all": {func() kernel.Result {
			r := ok
			r.Warnings, r.Projections = warn, attention
			return r
		}(), map[string]Material{"k": {Status: "unavailable", Reason: "no"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := result(c.res, c.materials)
			got, isRaw := r.StructuredContent.(json.RawMessage)
			if !isRaw || len(r.Content) != 2 {
				t.Fatalf("structuredContent %T, %d content blocks; want raw bytes and a sidecar block", r.StructuredContent, len(r.Content))
			}
			want := sdkEncode(t, ToolResult{Success: c.res.Success, Output: c.res.Output, Error: c.res.Error, Warnings: c.res.Warnings,
				Context: c.materials, Projections: c.res.Projections})
			if !bytes.Equal(got, want) {
				t.Fatalf("structuredContent differs from the ToolResult's encoding:\n got %s\nwant %s", got, want)
			}
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
		})
	}
	for _, c := range []struct{ a, b, want string }{
		{`{"x":1}`, `{}`, `{"x":1}`}, {`{}`, `{"y":2}`, `{"y":2}`}, {`{"x":1}`, `{"y":2}`, `{"x":1,"y":2}`},
	} {
		if got, ok := joinObjects([]byte(c.a), []byte(c.b)); !ok || string(got) != c.want {
			t.Errorf("joinObjects(%s, %s) = %s, %v; want %s", c.a, c.b, got, ok, c.want)
		}
	}
	for _, c := range [][2]string{{`[1]`, `{}`}, {`{"x":1}`, `null`}, {``, `{}`}} {
		if _, ok := joinObjects([]byte(c[0]), []byte(c[1])); ok {
			t.Errorf("joinObjects(%s, %s) joined what is not two objects", c[0], c[1])
		}
	}
}
