package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the webcodex binary: a child started
// with WEBCODEX_TEST_CHILD_ARGS runs the CLI with those arguments. Tests use
// it to run real server processes (and kill them) without a separate build.
func TestMain(m *testing.M) {
	if args := os.Getenv("WEBCODEX_TEST_CHILD_ARGS"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			fmt.Fprintln(os.Stderr, "bad child args:", err)
			os.Exit(3)
		}
		os.Args = append([]string{"webcodex"}, argv...)
		main()
		os.Exit(0)
	}
	// Started through a link named webcodex (as a documented hook command
	// starts it from $PATH), the test binary is the CLI with its own
	// arguments.
	if filepath.Base(os.Args[0]) == "webcodex" {
		main()
		os.Exit(0)
	}
	// In-process runs of serve (run(t, "serve", ...)) must not re-execute
	// the test binary: exec would replace this process mid-test (re-running
	// every test and leaking their temporary directories). They keep the
	// test's environment and skip making this process non-dumpable; the
	// children above run the real secureServerProcess.
	secureProcess = func() (func(string) string, error) { return os.Getenv, nil }
	os.Exit(m.Run())
}

// testToken is the bootstrap credential children accept.
const testToken = "test-bootstrap-token-0123456789"

// child is a running `webcodex serve` process.
type child struct {
	cmd  *exec.Cmd
	base string
	out  *bytes.Buffer
	// stderr is complete once done has received.
	stderr *bytes.Buffer
	done   chan error
}

// stopServe ends a served child with SIGTERM and returns its output.
func stopServe(t *testing.T, srv *child) string {
	t.Helper()
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.done:
	case <-time.After(60 * time.Second):
		t.Fatal("server did not stop")
	}
	return srv.out.String()
}

// startServe starts `webcodex serve` in a child process and waits for it to
// print its address.
func startServe(t *testing.T, args ...string) *child {
	t.Helper()
	return startServeCmd(t, nil, args...)
}

// startServeCmd is startServe with setup, when not nil, adjusting the
// command (environment, credentials) before it starts.
func startServeCmd(t *testing.T, setup func(*exec.Cmd), args ...string) *child {
	t.Helper()
	return startChild(t, setup, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
}

// startChild starts the CLI with args in a child process and waits for it
// to print the address it listens on (serve, share).
func startChild(t *testing.T, setup func(*exec.Cmd), args ...string) *child {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv), "WEBCODEX_TOKEN="+testToken)
	if setup != nil {
		setup(cmd)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, out: &bytes.Buffer{}, stderr: &stderr, done: make(chan error, 1)}
	addrRE := regexp.MustCompile(`listening on (http://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			c.out.WriteString(line + "\n")
			if m := addrRE.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
		c.done <- cmd.Wait()
	}()
	select {
	case c.base = <-found:
	case err := <-c.done:
		t.Fatalf("server exited early: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("server did not start\n%s", stderr.String())
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// toolResult is the ToolResult envelope as a client sees it.
type toolResult struct {
	Success bool            `json:"success"`
	Output  json.RawMessage `json:"output"`
	Error   *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func callTool(ctx context.Context, base, tool string, args any, recorder string) (toolResult, error) {
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": args, "recording_session_id": recorder})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return toolResult{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return toolResult{}, err
	}
	if resp.StatusCode != 200 {
		return toolResult{}, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(data)))
	}
	var r toolResult
	return r, json.Unmarshal(data, &r)
}
