package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
)

// BenchmarkStdioPeer compares `webcodex mcp` with the official Node
// filesystem server (@modelcontextprotocol/server-filesystem) on the
// smallest calls, both run as child processes over stdio and driven by the
// same raw JSON-RPC line client, alternated call by call (benchpair): a
// read of a 4 KiB file (read_files / read_text_file) and an overwrite of it
// (write_project_file fenced by the current SHA-256 / write_file),
// unrecorded and recorded in a Workflow Session. The peer is not in CI and
// not a dependency of this repository: it runs only when
// WEBCODEX_PEER_FS names the server's dist/index.js (installed with npm
// outside the tree) and node is on PATH. With WEBCODEX_BASE_BIN naming
// another webcodex binary (a build of an earlier commit), that binary is
// the base instead: a before/after comparison of the same calls.
//
//	npm install --prefix /tmp/nodefs @modelcontextprotocol/server-filesystem
//	WEBCODEX_PEER_FS=/tmp/nodefs/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js \
//	  go test ./cmd/webcodex -run '^$' -bench StdioPeer -count 5
func BenchmarkStdioPeer(b *testing.B) {
	node, script, baseBin := peerBase(b)
	for _, c := range []struct {
		name            string
		recorded, write bool
	}{
		{"read_unrecorded", false, false},
		{"write_unrecorded", false, true},
		{"read_recorded", true, false},
		{"write_recorded", true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			wcDir := peerProject(b)
			cmd := selfCommand("mcp", "--data-dir", b.TempDir(), "--project", "bench="+wcDir)
			subject := startPeer(b, cmd, wcDir).calls(b, c.recorded, c.write)
			baseDir := peerProject(b)
			baseName, base := "node", func() {}
			if baseBin != "" {
				baseName = "base"
				base = startPeer(b, exec.Command(baseBin, "mcp", "--data-dir", b.TempDir(), "--project", "bench="+baseDir), baseDir).calls(b, c.recorded, c.write)
			} else {
				peer := startPeer(b, exec.Command(node, script, baseDir), baseDir)
				if c.write {
					base = peer.writes(b, func(v int) string {
						return fmt.Sprintf(`{"name":"write_file","arguments":{"path":%q,"content":%s}}`,
							filepath.Join(baseDir, peerFile), peerJSON(peerContent(1-v)))
					})
				} else {
					base = peer.reads(b, fmt.Sprintf(`{"name":"read_text_file","arguments":{"path":%q}}`, filepath.Join(baseDir, peerFile)))
				}
			}
			benchpair.Run(b, baseName, base, "webcodex", subject)
		})
	}
}

// peerBase returns what the peer benchmarks compare webcodex with: node
// and the Node filesystem server's script (WEBCODEX_PEER_FS), or another
// webcodex binary (WEBCODEX_BASE_BIN), which wins. It skips b when
// neither is there.
func peerBase(b *testing.B) (node, script, baseBin string) {
	script = os.Getenv("WEBCODEX_PEER_FS")
	node, err := exec.LookPath("node")
	baseBin = os.Getenv("WEBCODEX_BASE_BIN")
	if baseBin == "" && (script == "" || err != nil) {
		b.Skip("set WEBCODEX_PEER_FS to the Node filesystem server's dist/index.js (and have node on PATH), or WEBCODEX_BASE_BIN to another webcodex binary")
	}
	return node, script, baseBin
}

// selfCommand returns a command that runs the test binary as webcodex
// with args (see TestMain).
func selfCommand(args ...string) *exec.Cmd {
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv))
	return cmd
}

// calls returns the read or write call of a webcodex server, recorded in
// a new Workflow Session when asked.
func (c *stdioChild) calls(b *testing.B, recorded, write bool) func() {
	recorder := ""
	if recorded {
		recorder = c.session(b)
	}
	if write {
		return c.writes(b, func(v int) string {
			sum := sha256.Sum256(peerContent(v))
			return `{"name":"write_project_file","arguments":{"project":"agent:local:bench","path":"` + peerFile +
				`","content":` + peerJSON(peerContent(1-v)) + `,"expected_sha256":"` + hex.EncodeToString(sum[:]) + `"` + recorderMember(recorder) + `}}`
		})
	}
	return c.reads(b, `{"name":"read_files","arguments":{"project":"agent:local:bench","files":[{"path":"`+peerFile+`"}]`+recorderMember(recorder)+`}}`)
}

const peerFile = "small.go"

// peerContent is a 4 KiB source-like file; v = 0 or 1 picks one of two
// contents of the same size.
func peerContent(v int) []byte {
	c := []byte(strings.Repeat("\tfmt.Println(\"a typical line of source code, about sixty bytes\")\n", 64))
	c[1] = 'a' + byte(v)
	return c
}

func peerJSON(b []byte) string {
	j, _ := json.Marshal(string(b))
	return string(j)
}

func recorderMember(id string) string {
	if id == "" {
		return ""
	}
	return `,"recording_session_id":"` + id + `"`
}

func peerProject(b *testing.B) string {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, peerFile), peerContent(0), 0o644); err != nil {
		b.Fatal(err)
	}
	// The Node server resolves symbolic links in its allowed directories.
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.Fatal(err)
	}
	return real
}

// stdioChild is a server child process with a raw line client on its
// standard input and output.
type stdioChild struct {
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	dir string
}

// stdioPipes connects cmd's stdin and stdout to pipes and its stderr to
// a buffer, before cmd starts.
func stdioPipes(b *testing.B, cmd *exec.Cmd) (io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	return in, out, stderr
}

func startPeer(b *testing.B, cmd *exec.Cmd, dir string) *stdioChild {
	in, out, stderr := stdioPipes(b, cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &stdioChild{in: in, out: bufio.NewReaderSize(out, 64<<10), dir: dir}
	b.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("%s: %v\n%s", cmd.Path, err, stderr.String())
		}
	})
	c.call(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"webcodex-bench","version":"1"}}`)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return c
}

// call sends one request and returns its answer; a JSON-RPC or tool error
// fails the benchmark.
func (c *stdioChild) call(b *testing.B, method, params string) []byte {
	c.id++
	if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params); err != nil {
		b.Fatal(err)
	}
	ans, err := c.out.ReadBytes('\n')
	if err != nil {
		b.Fatalf("%s: %v", method, err)
	}
	if bytes.Contains(ans, []byte(`"isError":true`)) || !bytes.Contains(ans, []byte(`"result":`)) {
		b.Fatalf("%s: %.400s", method, ans)
	}
	return ans
}

func (c *stdioChild) session(b *testing.B) string {
	ans := c.call(b, "tools/call", `{"name":"work_on_project","arguments":{"project":"agent:local:bench","instruction":"benchmark small calls"}}`)
	var r struct {
		Result struct {
			StructuredContent struct {
				Output struct {
					SessionID string `json:"session_id"`
				} `json:"output"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ans, &r); err != nil || r.Result.StructuredContent.Output.SessionID == "" {
		b.Fatalf("work_on_project: %.400s", ans)
	}
	return r.Result.StructuredContent.Output.SessionID
}

// reads checks one read returns the file's content and returns the call.
func (c *stdioChild) reads(b *testing.B, params string) func() {
	want, _ := json.Marshal(string(peerContent(0)))
	// The content appears escaped once (structuredContent) or twice (text).
	if ans := c.call(b, "tools/call", params); !bytes.Contains(ans, want[1:len(want)-1]) && !bytes.Contains(ans, bytes.ReplaceAll(want[1:len(want)-1], []byte(`\`), []byte(`\\`))) {
		b.Fatalf("read: answer lacks the content: %.400s", ans)
	}
	return func() { c.call(b, "tools/call", params) }
}

// writes returns a call that overwrites the file, alternating between the
// two contents (params(v) replaces content v by content 1-v); it checks the
// first write reached the file.
func (c *stdioChild) writes(b *testing.B, params func(v int) string) func() {
	ps := [2]string{params(0), params(1)}
	v := 0
	call := func() {
		c.call(b, "tools/call", ps[v])
		v = 1 - v
	}
	call()
	if got, err := os.ReadFile(filepath.Join(c.dir, peerFile)); err != nil || !bytes.Equal(got, peerContent(1)) {
		b.Fatalf("write did not reach the file: %v", err)
	}
	return call
}
