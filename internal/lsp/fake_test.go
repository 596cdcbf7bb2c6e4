package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// fakeModeEnv makes the test binary a fake language server (see
// TestMain): "ok" answers, "hang" never answers after initialize,
// "crash" exits at its first request unless $TMPDIR/crashed exists
// (which it creates first).
const fakeModeEnv = "LSP_FAKE_MODE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		fakeServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeServer(mode string) {
	r := bufio.NewReader(os.Stdin)
	for {
		body, err := readMessage(r)
		if err != nil {
			return
		}
		var m message
		json.Unmarshal(body, &m)
		if m.ID == nil {
			continue
		}
		var result any
		switch m.Method {
		case "initialize":
			result = map[string]any{"capabilities": map[string]any{"positionEncoding": UTF32}}
		default:
			switch mode {
			case "hang":
				continue
			case "crash":
				marker := filepath.Join(os.Getenv("TMPDIR"), "crashed")
				if _, err := os.Stat(marker); err != nil {
					os.WriteFile(marker, nil, 0o600)
					os.Exit(3)
				}
			}
			if mode == "many" {
				result = manyResult(m.Method)
				break
			}
			if mode == "escape" {
				result = escapeResult(m.Params)
				break
			}
			result = []map[string]any{{"name": "F", "kind": 12,
				"range":          lspRange{End: lspPosition{Line: 0, Character: 3}},
				"selectionRange": lspRange{End: lspPosition{Line: 0, Character: 3}}}}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		writeMessage(os.Stdout, b)
	}
}

// manyResult answers past every bound: MaxResults+5 symbols, hover text
// of MaxHoverBytes+10 bytes.
func manyResult(method string) any {
	if method == "textDocument/hover" {
		return map[string]any{"contents": map[string]string{"kind": "plaintext", "value": strings.Repeat("é", MaxHoverBytes/2+5)}}
	}
	var list []map[string]any
	for range MaxResults + 5 {
		list = append(list, map[string]any{"name": "F", "kind": 12, "range": lspRange{}, "selectionRange": lspRange{}})
	}
	return list
}

// escapeResult names link/secret.fake next to the requested document:
// the test makes link a symlink out of the project.
func escapeResult(params json.RawMessage) any {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}
	json.Unmarshal(params, &p)
	dir := p.TextDocument.URI[:strings.LastIndex(p.TextDocument.URI, "/")]
	return []map[string]any{{"uri": dir + "/link/secret.fake", "range": lspRange{End: lspPosition{Character: 3}}}}
}

// A location the server names inside the project that is a symlink out
// of it is external: its target's contents are never read.
func TestLocationThroughSymlinkOutIsExternal(t *testing.T) {
	p := writeFixture(t, map[string]string{"x.fake": "abc\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.fake"), []byte("SECRET LINE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p.Root, "link")); err != nil {
		t.Fatal(err)
	}
	m := fakeManager(t, "escape", Options{})
	res, err := m.Navigate(context.Background(), p, Request{Op: OpDefinition, Path: "x.fake", Line: 1, Column: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Locations) != 1 {
		t.Fatalf("locations: %+v", res.Locations)
	}
	if l := res.Locations[0]; !l.External || l.Path != "" || l.Snippet != "" || l.Hint != HintSymlinkOut || l.StartColumn != 0 {
		t.Fatalf("location through a symlink out: %+v", l)
	}
	// A file swapped for a symlink out after it was named is refused too.
	if err := os.Symlink(filepath.Join(outside, "secret.fake"), filepath.Join(p.Root, "y.fake")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Navigate(context.Background(), p, Request{Op: OpDefinition, Path: "y.fake", Line: 1, Column: 1}); failure.KindOf(err) != failure.PermissionDenied {
		t.Fatalf("a request on a symlink out: %v", err)
	}
}

// fakeManager serves *.fake files with the test binary in mode.
func fakeManager(t *testing.T, mode string, opt Options) *Manager {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opt.Languages = []Language{{Name: "fake", ID: "fake", Server: exe, Extensions: []string{".fake"},
		Install: "nothing", Env: map[string]string{fakeModeEnv: mode}}}
	opt.Sandbox = &runner.Policy{}
	m := NewManager(opt)
	t.Cleanup(m.Close)
	return m
}

func TestHungServerIsKilled(t *testing.T) {
	p := writeFixture(t, map[string]string{"x.fake": "abc\n"})
	m := fakeManager(t, "hang", Options{RequestTimeout: time.Second})
	_, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"})
	if failure.KindOf(err) != failure.TimedOut || failure.DetailOf(err)["outcome"] != "server_killed" {
		t.Fatalf("got %v (%v)", err, failure.DetailOf(err))
	}
	// The killed server is replaced by a new one on the next call.
	m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"})
	if m.Started() != 2 {
		t.Errorf("%d starts, want 2", m.Started())
	}
}

func TestCrashedServerRestarts(t *testing.T) {
	p := writeFixture(t, map[string]string{"x.fake": "abc\n"})
	m := fakeManager(t, "crash", Options{CacheRoot: t.TempDir()})
	_, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"})
	if failure.KindOf(err) != failure.OperationFailed || failure.DetailOf(err)["outcome"] != "server_exited" {
		t.Fatalf("got %v (%v)", err, failure.DetailOf(err))
	}
	r, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Started() != 2 || len(r.Symbols) != 1 || r.Symbols[0].Name != "F" {
		t.Errorf("starts %d, result %+v", m.Started(), r)
	}
	// UTF-32 was negotiated: character 3 is column 4.
	if s := r.Symbols[0]; s.StartColumn != 1 || s.EndColumn != 4 || s.Snippet != "abc" {
		t.Errorf("symbol %+v", s)
	}
}

func TestIdleServerStops(t *testing.T) {
	p := writeFixture(t, map[string]string{"x.fake": "abc\n"})
	m := fakeManager(t, "ok", Options{IdleTimeout: time.Millisecond})
	if _, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"}); err != nil {
		t.Fatal(err)
	}
	var s *server
	m.pool.Each(func(v *server) { s = v })
	if s == nil {
		t.Fatal("no server slot after a call")
	}
	<-s.exited // the idle timer stops it
	if _, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"}); err != nil {
		t.Fatal(err)
	}
	if m.Started() != 2 {
		t.Errorf("%d starts, want 2", m.Started())
	}
}

func TestResultBounds(t *testing.T) {
	long := strings.Repeat("x", MaxSnippetBytes+50)
	p := writeFixture(t, map[string]string{"x.fake": long + "\n"})
	m := fakeManager(t, "many", Options{})
	r, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total != MaxResults+5 || r.Returned != MaxResults || len(r.Symbols) != MaxResults || !r.Truncated {
		t.Errorf("total %d returned %d truncated %v", r.Total, r.Returned, r.Truncated)
	}
	if len(r.Symbols[0].Snippet) != MaxSnippetBytes {
		t.Errorf("snippet of %d bytes", len(r.Symbols[0].Snippet))
	}
	h, err := m.Navigate(context.Background(), p, Request{Op: OpHover, Path: "x.fake", Line: 1, Column: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Hover) > MaxHoverBytes || len(h.Hover) < MaxHoverBytes-1 || !h.Truncated || !utf8.ValidString(h.Hover) {
		t.Errorf("hover of %d bytes, truncated %v", len(h.Hover), h.Truncated)
	}
}

func TestMaxServers(t *testing.T) {
	m := fakeManager(t, "ok", Options{})
	for range MaxServers + 2 {
		p := writeFixture(t, map[string]string{"x.fake": "abc\n"})
		if _, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: "x.fake"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Running(); n != MaxServers {
		t.Errorf("%d servers running, want at most %d", n, MaxServers)
	}
}

func TestMaxOpenDocuments(t *testing.T) {
	files := map[string]string{}
	for i := range MaxOpenDocuments + 1 {
		files[fmt.Sprintf("f%d.fake", i)] = "abc\n"
	}
	p := writeFixture(t, files)
	m := fakeManager(t, "ok", Options{})
	for name := range files {
		if _, err := m.Navigate(context.Background(), p, Request{Op: OpDocumentSymbols, Path: name}); err != nil {
			t.Fatal(err)
		}
	}
	m.pool.Each(func(s *server) {
		if n := len(s.docs); n < 1 || n > MaxOpenDocuments {
			t.Errorf("%d documents open", n)
		}
	})
}

func TestRequestBounds(t *testing.T) {
	p := writeFixture(t, map[string]string{"big.go": "package a\n//" + strings.Repeat("x", MaxFileBytes) + "\n", "a.go": "package a\n"})
	tree, err := p.OpenTree()
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	for _, req := range []Request{
		{Op: OpDocumentSymbols, Path: "big.go"},
		{Op: OpWorkspaceSymbols, Path: "a.go", Query: strings.Repeat("q", MaxQueryBytes+1)},
	} {
		if _, err := validate(Languages, p, tree, req); failure.KindOf(err) != failure.InvalidArguments {
			t.Errorf("%+v: %v", req.Op, err)
		}
	}
	if _, err := validate(Languages, p, tree, Request{Op: OpWorkspaceSymbols, Path: "a.go", Query: strings.Repeat("q", MaxQueryBytes)}); err != nil {
		t.Errorf("a query of MaxQueryBytes: %v", err)
	}
}

func TestHint(t *testing.T) {
	for abs, want := range map[string]string{
		"/usr/local/go/src/fmt/print.go":                     "std: fmt",
		"/home/u/go/pkg/mod/example.com/m@v1.2.3/sub/x.go":   "example.com/m@v1.2.3/sub",
		"/opt/other/lib/thing.py":                            "lib",
		"C:\\Users\\u\\go\\pkg\\mod\\golang.org\\x@v1\\y.go": "golang.org/x@v1",
	} {
		if got := hint(abs); got != want {
			t.Errorf("hint(%q) = %q, want %q", abs, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	m := NewManager(Options{})
	defer m.Close()
	if m.opt.IdleTimeout != DefaultIdleTimeout || m.opt.RequestTimeout != DefaultRequestTimeout || len(m.opt.Languages) != len(Languages) {
		t.Errorf("%+v", m.opt)
	}
}
