package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/transport/mcpserver"
)

// pipeAnswer is one line `webcodex mcp` wrote to stdout.
type pipeAnswer struct {
	ID     any `json:"id"`
	Result *struct {
		ProtocolVersion   string `json:"protocolVersion"`
		IsError           bool   `json:"isError"`
		StructuredContent struct {
			Success bool `json:"success"`
			Output  struct {
				Files []struct {
					Path    string `json:"path"`
					Content string `json:"content"`
				} `json:"files"`
			} `json:"output"`
		} `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
	raw string
}

// pipeMCP runs `webcodex mcp` as a child process with input as its whole
// stdin (closed after it, as `printf … | webcodex mcp` does) and returns
// the answers by id (a null id under "null"), its stderr and its exit.
func pipeMCP(t *testing.T, data, proj, input string) (map[string]pipeAnswer, string, error) {
	t.Helper()
	return pipeMCPEnv(t, nil, data, proj, input)
}

// pipeMCPEnv is pipeMCP with env (NAME=VALUE) added to the child's
// environment.
func pipeMCPEnv(t *testing.T, env []string, data, proj, input string) (map[string]pipeAnswer, string, error) {
	t.Helper()
	argv, _ := json.Marshal([]string{"mcp", "--data-dir", data, "--project", "demo=" + proj})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv)), env...)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	answers := map[string]pipeAnswer{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var a pipeAnswer
		if jerr := json.Unmarshal(sc.Bytes(), &a); jerr != nil {
			t.Fatalf("stdout line is not JSON: %q\nstderr:\n%s", sc.Text(), stderr.String())
		}
		a.raw = sc.Text()
		key := fmt.Sprint(a.ID)
		if a.ID == nil {
			key = "null"
		}
		if _, dup := answers[key]; dup {
			t.Fatalf("two answers with id %s: %s", key, a.raw)
		}
		answers[key] = a
	}
	return answers, stderr.String(), err
}

func pipeProject(t *testing.T) (data, proj string) {
	data, proj = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return data, proj
}

const (
	pipeInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
	pipeInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	pipeReadFiles   = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_files","arguments":{"project":"agent:local:demo","files":[{"path":"main.go"}]}%s}}`
	// pipeModernMeta is the 2026-07-28 per-request envelope (no initialize).
	pipeModernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"pipe","version":"1"}}`
)

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

// wantReadFiles checks that answer a is read_files' successful result.
func wantReadFiles(t *testing.T, a pipeAnswer, stderr string) {
	t.Helper()
	if a.Result == nil || a.Result.IsError || !a.Result.StructuredContent.Success ||
		len(a.Result.StructuredContent.Output.Files) != 1 || a.Result.StructuredContent.Output.Files[0].Content != "package main\n" {
		t.Fatalf("read_files answer: %.500s\nstderr:\n%s", a.raw, stderr)
	}
}

// TestMCPStdioPipeAnswersEveryRequest is the reproduction of issue 11
// item 9: initialize, notifications/initialized and one tools/call piped
// on stdin, stdin closed; both requests are answered and the process exits
// 0, in each of 20 runs (the loss was a race with end of input). The same
// for a 2026-07-28 client, which sends no initialize.
func TestMCPStdioPipeAnswersEveryRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data, proj := pipeProject(t)
	for run := range 20 {
		answers, stderr, err := pipeMCP(t, data, proj, lines(pipeInitialize, pipeInitialized, fmt.Sprintf(pipeReadFiles, 2, "")))
		if err != nil {
			t.Fatalf("run %d (legacy): exit %v\n%s", run, err, stderr)
		}
		if len(answers) != 2 || answers["1"].Result == nil || answers["1"].Result.ProtocolVersion != "2025-11-25" {
			t.Fatalf("run %d (legacy): answers %v\nstderr:\n%s", run, answers, stderr)
		}
		wantReadFiles(t, answers["2"], stderr)

		answers, stderr, err = pipeMCP(t, data, proj, lines(fmt.Sprintf(pipeReadFiles, 7, pipeModernMeta)))
		if err != nil {
			t.Fatalf("run %d (modern): exit %v\n%s", run, err, stderr)
		}
		if len(answers) != 1 {
			t.Fatalf("run %d (modern): answers %v\nstderr:\n%s", run, answers, stderr)
		}
		wantReadFiles(t, answers["7"], stderr)
	}
}

// TestMCPStdioPipeMalformedLine: a line that is not JSON between two
// requests gets a parse error (-32700, id null) and the session goes on,
// in both eras.
func TestMCPStdioPipeMalformedLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data, proj := pipeProject(t)
	for _, tc := range []struct {
		era   string
		input string
		want  []string
	}{
		{"legacy", lines(pipeInitialize, pipeInitialized, `{"jsonrpc":"2.0","id":5,"method":`, fmt.Sprintf(pipeReadFiles, 2, "")), []string{"1", "2"}},
		{"modern", lines(`not json at all`, fmt.Sprintf(pipeReadFiles, 2, pipeModernMeta)), []string{"2"}},
	} {
		t.Run(tc.era, func(t *testing.T) {
			answers, stderr, err := pipeMCP(t, data, proj, tc.input)
			if err != nil {
				t.Fatalf("exit %v\n%s", err, stderr)
			}
			bad := answers["null"]
			if bad.Error == nil || bad.Error.Code != -32700 || !strings.Contains(bad.raw, `"id":null`) {
				t.Fatalf("malformed line answered %q; answers %v", bad.raw, answers)
			}
			if len(answers) != len(tc.want)+1 {
				t.Fatalf("answers %v, want %v and the parse error", answers, tc.want)
			}
			wantReadFiles(t, answers["2"], stderr)
			if !strings.Contains(stderr, "stdio message refused") {
				t.Fatalf("the refusal was not logged:\n%s", stderr)
			}
		})
	}
}

// TestMCPStdioPipeOversizedLine: a tools/call line over the bound gets an
// invalid-request error naming the bound, with its id, is skipped, and the
// next request is answered; the process exits 0.
func TestMCPStdioPipeOversizedLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data, proj := pipeProject(t)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_files","arguments":{"project":"agent:local:demo","files":[{"path":"` +
		strings.Repeat("a", mcpserver.MaxLineBytes) + `"}]}}}`
	for _, tc := range []struct{ era, input string }{
		{"legacy", lines(pipeInitialize, pipeInitialized, huge, fmt.Sprintf(pipeReadFiles, 3, ""))},
		{"modern", lines(huge, fmt.Sprintf(pipeReadFiles, 3, pipeModernMeta))},
	} {
		t.Run(tc.era, func(t *testing.T) {
			answers, stderr, err := pipeMCP(t, data, proj, tc.input)
			if err != nil {
				t.Fatalf("exit %v\n%s", err, stderr)
			}
			big := answers["2"]
			if big.Error == nil || big.Error.Code != -32600 || big.Error.Data["max_bytes"] != float64(mcpserver.MaxLineBytes) {
				t.Fatalf("oversized line answered %.300s", big.raw)
			}
			wantReadFiles(t, answers["3"], stderr)
			if !strings.Contains(stderr, "too long") {
				t.Fatalf("the refusal was not logged:\n%s", stderr)
			}
		})
	}
}

// TestMCPHelpNamesTheLineBound keeps `webcodex mcp --help` true to the bound.
func TestMCPHelpNamesTheLineBound(t *testing.T) {
	long := newMCPCmd(&globals{}).Long
	if want := fmt.Sprintf("at most %d MiB", mcpserver.MaxLineBytes>>20); !strings.Contains(long, want) {
		t.Fatalf("help does not say %q:\n%s", want, long)
	}
}
