package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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
			result = []map[string]any{{"name": "F", "kind": 12,
				"range":          lspRange{End: lspPosition{Line: 0, Character: 3}},
				"selectionRange": lspRange{End: lspPosition{Line: 0, Character: 3}}}}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		writeMessage(os.Stdout, b)
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
	m.mu.Lock()
	var s *server
	for _, e := range m.servers {
		s = e.s
	}
	m.mu.Unlock()
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
