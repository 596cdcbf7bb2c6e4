package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the response sections of testdata/mcp/*.txtar from the real server")

// TestMCPTranscripts replays every testdata/mcp/*.txtar transcript against
// the real /mcp endpoint (startApp on 127.0.0.1:0, a fresh data directory
// and the project p of rawProjectDir per file) and compares each normalized
// response with the file. `go test ./internal/app -run TestMCPTranscripts
// -update` rewrites the response sections from what the server answers.
//
// A transcript is a txtar archive: the comment says what it shows, then
// alternating `-- request --` and `-- response --` sections.
//
// A request section is a request line (`POST /mcp`), header lines, a blank
// line and the body, sent byte for byte (the section's final newline
// excepted). Every request carries the admin bearer token, and a POST
// Content-Type: application/json and Accept: application/json,
// text/event-stream, unless the section sets the header (an empty value
// removes it). A placeholder (wc_sess_#N, inv_#N, call_#N) in a request is
// sent as the real value an earlier response was normalized to it from.
//
// A response section is `HTTP <status>`, the headers that matter
// (transcriptHeaders, only when present), a blank line and the body: JSON
// re-encoded with sorted keys and indented; an event stream as its events;
// anything else verbatim. Volatile values are normalized: session,
// invocation and call ids to numbered placeholders in order of appearance
// (wc_sess_#1, inv_#1, ...), the project directory to $PROJECT, times and
// durations by normalize. Two rewrites keep the files readable:
//   - a tools/list result keeps one tool whole (transcriptFullTool) and the
//     others as {"name"} only: the list of names and one complete schema,
//     so a renamed, added or removed tool and a change to the shared
//     schema shape (wrapper members, annotations) are focused diffs, while
//     every tool's wrapper members per era, annotations and agreement with
//     REST and OpenAPI are checked by TestContextRequestOnlyModern,
//     TestMCPToolsListSizeAndShape and TestToolSurfacesAgree;
//   - a text content block whose JSON repeats members of the
//     structuredContent is written as "= structuredContent" or
//     "= structuredContent.{members}" (foldTextBlocks); any other text
//     stays verbatim.
//
// Besides the text, every exchange checks the kernel saw exactly what its
// answer implies: one call for a tools/call answered with a result (a
// refusal is journaled), none for anything else (JSON-RPC and HTTP errors,
// batches, tools/list, ...).
func TestMCPTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "mcp", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			replayTranscript(t, file)
		})
	}
}

// transcriptHeaders are the response headers a transcript shows.
var transcriptHeaders = []string{"Content-Type", "Allow", "Mcp-Session-Id", "WWW-Authenticate"}

// transcriptFullTool is the one tool a tools/list transcript shows whole.
const transcriptFullTool = "read_files"

func replayTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	arch := txtar.Parse(data)
	var requests []txtar.File
	var responses [][]byte
	for _, f := range arch.Files {
		switch f.Name {
		case "request":
			requests = append(requests, f)
		case "response":
			if len(responses) != len(requests)-1 {
				t.Fatalf("a response section without its request (section %d)", len(responses)+1)
			}
			responses = append(responses, f.Data)
		default:
			t.Fatalf("unexpected section %q", f.Name)
		}
	}
	if len(requests) == 0 || (!*update && len(responses) != len(requests)) {
		t.Fatalf("%d requests, %d responses (run with -update to write them)", len(requests), len(responses))
	}

	dir := rawProjectDir(t)
	s := startApp(t, t.TempDir(), "p="+dir)
	defer s.stop(t)
	n := &transcriptNormalizer{project: dir, base: s.base, ids: map[string]string{}, counts: map[string]int{}}

	out := &txtar.Archive{Comment: arch.Comment}
	for i, req := range requests {
		calls := s.a.Kernel.Stats().Calls
		httpReq, rpcMethod := transcriptRequest(t, s, n, req.Data)
		resp := rawDo(t, httpReq)
		got := n.render(t, resp)
		wantCalls := int64(0)
		if rpcMethod == "tools/call" && resp.Msg != nil && len(resp.Msg.Result) > 0 {
			wantCalls = 1
		}
		if delta := s.a.Kernel.Stats().Calls - calls; delta != wantCalls {
			t.Errorf("exchange %d: the kernel dispatched %d calls, want %d for\n%s", i+1, delta, wantCalls, got)
		}
		out.Files = append(out.Files, req, txtar.File{Name: "response", Data: got})
		if !*update {
			if diff := cmp.Diff(string(responses[i]), string(got)); diff != "" {
				t.Errorf("exchange %d: response differs from %s (-want +got):\n%s", i+1, file, diff)
			}
		}
	}
	if *update {
		if err := os.WriteFile(file, txtar.Format(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// transcriptRequest builds the HTTP request of a request section and
// returns it with its JSON-RPC method ("" when the body holds no single
// request).
func transcriptRequest(t *testing.T, s *server, n *transcriptNormalizer, section []byte) (*http.Request, string) {
	t.Helper()
	text := n.substitute(string(section))
	head, body, _ := strings.Cut(text, "\n\n")
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(head + "\n\n")))
	line, err := tp.ReadLine()
	if err != nil {
		t.Fatalf("request line: %v", err)
	}
	verb, path, ok := strings.Cut(line, " ")
	if !ok || path != "/mcp" {
		t.Fatalf("request line %q, want `METHOD /mcp`", line)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("request headers: %v", err)
	}
	set := map[string]string{}
	for k, v := range hdr {
		set[k] = v[0]
	}
	body = strings.TrimSuffix(body, "\n")
	req := rawRequest(t, s, verb, s.token, []byte(body), set)
	if verb != http.MethodPost {
		for _, k := range []string{"Content-Type", "Accept"} {
			if _, ok := set[k]; !ok {
				req.Header.Del(k)
			}
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	var rpc struct{ Method string }
	json.Unmarshal([]byte(body), &rpc)
	return req, rpc.Method
}

// transcriptNormalizer maps a transcript's volatile values to stable
// placeholders, in order of first appearance, and back for requests.
type transcriptNormalizer struct {
	project string
	base    string            // the server's URL, $BASE in headers
	ids     map[string]string // real value -> placeholder
	counts  map[string]int    // placeholder prefix -> placeholders issued
}

var transcriptIDs = []struct {
	re     *regexp.Regexp
	prefix string
}{
	{regexp.MustCompile(`wc_sess_[0-9a-f]{32}`), "wc_sess_#"},
	{regexp.MustCompile(`inv_[0-9a-f]{24}`), "inv_#"},
	{regexp.MustCompile(`call_[0-9a-f]{24}`), "call_#"},
}

var transcriptPlaceholder = regexp.MustCompile(`(wc_sess_|inv_|call_)#[0-9]+`)

func (n *transcriptNormalizer) substitute(s string) string {
	return transcriptPlaceholder.ReplaceAllStringFunc(s, func(p string) string {
		for real, ph := range n.ids {
			if ph == p {
				return real
			}
		}
		return p // an unknown placeholder is sent as written, and refused
	})
}

func (n *transcriptNormalizer) text(s string) string {
	s = strings.ReplaceAll(s, n.project, "$PROJECT")
	for _, id := range transcriptIDs {
		s = id.re.ReplaceAllStringFunc(s, func(real string) string {
			if ph, ok := n.ids[real]; ok {
				return ph
			}
			n.counts[id.prefix]++
			ph := id.prefix + strconv.Itoa(n.counts[id.prefix])
			n.ids[real] = ph
			return ph
		})
	}
	return normalize([]byte(s))
}

// render writes a response as a transcript section.
func (n *transcriptNormalizer) render(t *testing.T, r rawResp) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP %d\n", r.Status)
	for _, k := range transcriptHeaders {
		if v := r.Header.Get(k); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.ReplaceAll(v, n.base, "$BASE"))
		}
	}
	if len(r.Body) == 0 {
		return b.Bytes()
	}
	b.WriteString("\n")
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "application/json" && json.Valid(r.Body):
		b.WriteString(n.json(t, r.Body))
	case mt == "text/event-stream":
		for _, ev := range strings.Split(strings.TrimSpace(strings.ReplaceAll(string(r.Body), "\r\n", "\n")), "\n\n") {
			var data []string
			for line := range strings.SplitSeq(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data:"); ok {
					data = append(data, strings.TrimPrefix(d, " "))
				} else if !strings.HasPrefix(line, "id:") { // event ids are volatile
					b.WriteString(line + "\n")
				}
			}
			b.WriteString(n.json(t, []byte(strings.Join(data, "\n"))))
		}
	default:
		b.WriteString(n.text(string(r.Body)))
		if !bytes.HasSuffix(r.Body, []byte("\n")) {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// json re-encodes one JSON document for a transcript (see
// TestMCPTranscripts).
func (n *transcriptNormalizer) json(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return n.text(string(raw)) + "\n"
	}
	if msg, ok := v.(map[string]any); ok {
		if res, ok := msg["result"].(map[string]any); ok {
			trimTools(res)
			foldTextBlocks(res)
		}
	}
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(n.text(strings.TrimSpace(compact.String()))), "", "  "); err != nil {
		t.Fatalf("normalized JSON: %v", err)
	}
	return out.String() + "\n"
}

// trimTools keeps transcriptFullTool whole and only the name of the other
// tools of a tools/list result.
func trimTools(res map[string]any) {
	tools, ok := res["tools"].([]any)
	if !ok {
		return
	}
	for i, tl := range tools {
		if m, ok := tl.(map[string]any); ok && m["name"] != transcriptFullTool {
			tools[i] = map[string]any{"name": m["name"]}
		}
	}
}

// foldTextBlocks writes a text block whose JSON object repeats members of
// the structuredContent as "= structuredContent" when it repeats all of
// them, else as "= structuredContent.{a,b}" naming those it repeats (the
// envelope block and the context sidecar block). Any other text stays
// verbatim.
func foldTextBlocks(res map[string]any) {
	content, ok := res["content"].([]any)
	sc, isObject := res["structuredContent"].(map[string]any)
	if !ok || !isObject {
		return
	}
	for _, c := range content {
		block, ok := c.(map[string]any)
		text, isText := block["text"].(string)
		if !ok || !isText {
			continue
		}
		var parsed map[string]any
		if json.Unmarshal([]byte(text), &parsed) != nil || len(parsed) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(parsed))
		repeats := true
		for _, k := range keys {
			v, ok := sc[k]
			repeats = repeats && ok && cmp.Equal(parsed[k], v)
		}
		switch {
		case !repeats:
		case len(keys) == len(sc):
			block["text"] = "= structuredContent"
		default:
			block["text"] = "= structuredContent.{" + strings.Join(keys, ",") + "}"
		}
	}
}
