package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
)

// runnerChild is a running `webcodex runner` process.
type runnerChild struct {
	cmd       *exec.Cmd
	mu        sync.Mutex
	log       bytes.Buffer
	connected chan struct{} // one value per "runner: connected" line
	done      chan error
}

func (r *runnerChild) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// startRunner starts `webcodex runner` against base with the config at
// toml, the token in the environment and the extra flags, and waits for
// its first welcome.
func startRunner(t *testing.T, base, toml, token string, extra ...string) *runnerChild {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"runner", "--server", base, "--config", toml}, extra...))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv), RunnerTokenEnv+"="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &runnerChild{cmd: cmd, connected: make(chan struct{}, 16), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.log.WriteString(line + "\n")
			r.mu.Unlock()
			if strings.Contains(line, "runner: connected") {
				select {
				case r.connected <- struct{}{}:
				default:
				}
			}
		}
		r.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-r.done
		}
	})
	r.waitConnected(t)
	return r
}

func (r *runnerChild) waitConnected(t *testing.T) {
	t.Helper()
	select {
	case <-r.connected:
	case err := <-r.done:
		t.Fatalf("runner exited: %v\n%s", err, r.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("runner did not connect\n%s", r.output())
	}
}

// runnerFixture is a server with a runner token for client "box", and a
// project directory with runner.toml serving it as "demo".
type runnerFixture struct {
	srv   *child
	data  string
	token string
	toml  string
	dir   string
}

func newRunnerFixture(t *testing.T) *runnerFixture {
	t.Helper()
	data, dir, cfgDir := t.TempDir(), t.TempDir(), t.TempDir()
	out := mustRun(t, "--data-dir", data, "runner", "token", "create", "--client-id", "box", "--json")
	var created struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Token, "wc_runner_") {
		t.Fatalf("runner token create: %v %q", err, out)
	}
	for name, body := range map[string]string{"main.go": "package main\n\nfunc main() {}\n", "notes/todo.txt": "remote line one\nneedle here\n"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A skill of the runner's own, outside the project (runner.toml
	// [skills] roots).
	runnerSkill := filepath.Join(cfgDir, "skills", "runner-help", "SKILL.md")
	os.MkdirAll(filepath.Dir(runnerSkill), 0o755)
	if err := os.WriteFile(runnerSkill, []byte("---\nname: runner-help\ndescription: The runner's own.\n---\nRunner skill body.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(cfgDir, "runner.toml")
	cfg := fmt.Sprintf("client_id = \"box\"\n\n[projects]\ndemo = %q\n\n[skills]\nroots = [\"skills\"]\n", dir)
	if err := os.WriteFile(toml, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return &runnerFixture{srv: startServe(t, "--data-dir", data), data: data, token: created.Token, toml: toml, dir: dir}
}

const remoteProject = "agent:box:demo"

func TestRunnerServesAProjectEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerServesAProjectEndToEnd)
}

func runnerServesAProjectEndToEnd(t *testing.T, transport string) {
	f := newRunnerFixture(t)
	r := startRunner(t, f.srv.base, f.toml, f.token, "--transport", transport)

	var list struct {
		Runners []struct {
			ClientID  string   `json:"client_id"`
			Connected bool     `json:"connected"`
			Projects  []string `json:"projects"`
			Sandbox   string   `json:"sandbox"`
		} `json:"runners"`
	}
	call(t, f.srv.base, "list_runners", map[string]any{}, &list)
	if len(list.Runners) != 1 || !list.Runners[0].Connected || list.Runners[0].ClientID != "box" ||
		len(list.Runners[0].Projects) != 1 || list.Runners[0].Projects[0] != remoteProject || list.Runners[0].Sandbox != "workspace-write" {
		t.Fatalf("list_runners: %+v", list)
	}

	// webcodex runner list asks the running server.
	t.Setenv("WEBCODEX_TOKEN", testToken)
	if out := mustRun(t, "runner", "list", "--server", f.srv.base); !strings.Contains(out, "box") || !strings.Contains(out, "true") ||
		!strings.Contains(out, "workspace-write") {
		t.Fatalf("webcodex runner list:\n%s", out)
	}
	if out := mustRun(t, "--data-dir", f.data, "token", "list"); !strings.Contains(out, "(runner channel only)") {
		t.Fatalf("webcodex token list does not mark the runner token:\n%s", out)
	}

	// A skill on the runner's machine: listed, read and in the extension
	// catalog through the runner (the server cannot see the file).
	skillFile := filepath.Join(f.dir, ".agents/skills/remote-help/SKILL.md")
	os.MkdirAll(filepath.Dir(skillFile), 0o755)
	if err := os.WriteFile(skillFile, []byte("---\nname: remote-help\ndescription: Helps remotely.\n---\nRemote skill body.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var start struct {
		SessionID    string `json:"session_id"`
		Instructions struct {
			Status string `json:"status"`
		} `json:"instructions"`
		Extensions struct {
			Skills struct {
				Status string `json:"status"`
				Skills []struct {
					Name, Status string
				} `json:"skills"`
			} `json:"skills"`
		} `json:"extensions"`
	}
	call(t, f.srv.base, "work_on_project", map[string]any{"project": remoteProject, "instruction": "look at the remote project"}, &start)
	if sk := start.Extensions.Skills; sk.Status != "available" || len(sk.Skills) != 2 || sk.Skills[0].Name != "remote-help" || sk.Skills[0].Status != "valid" ||
		sk.Skills[1].Name != "runner-help" || sk.Skills[1].Status != "valid" {
		t.Fatalf("extension catalog through the runner: %+v", start.Extensions)
	}
	var skillRead struct {
		Instructions string `json:"instructions"`
		Source       string `json:"source"`
	}
	call(t, f.srv.base, "skill_read", map[string]any{"project": remoteProject, "name": "remote-help"}, &skillRead)
	if skillRead.Instructions != "Remote skill body.\n" || skillRead.Source != "agents" {
		t.Fatalf("skill_read through the runner: %+v", skillRead)
	}
	call(t, f.srv.base, "skill_read", map[string]any{"project": remoteProject, "name": "runner-help"}, &skillRead)
	if skillRead.Instructions != "Runner skill body.\n" || skillRead.Source != "runner" {
		t.Fatalf("skill_read of the runner's own skill: %+v", skillRead)
	}
	if err := os.RemoveAll(filepath.Join(f.dir, ".agents")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read, err := callTool(ctx, f.srv.base, "read_files", map[string]any{"project": remoteProject,
		"files": []any{map[string]any{"path": "notes/todo.txt"}}}, start.SessionID)
	if err != nil || !read.Success || !strings.Contains(string(read.Output), "needle here") {
		t.Fatalf("read_files through the runner: %v %s %+v", err, read.Output, read.Error)
	}
	// A result larger than a frame comes back in parts, whole.
	big := strings.Repeat("0123456789abcdef\n", 12000) // 204,000 bytes
	if err := os.WriteFile(filepath.Join(f.dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	var bigRead struct {
		Files []struct {
			Content string `json:"content"`
		} `json:"files"`
	}
	call(t, f.srv.base, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "big.txt", "max_bytes": 262144}}}, &bigRead)
	if len(bigRead.Files) != 1 || bigRead.Files[0].Content != big {
		t.Fatalf("a 204 KB read through the runner came back with %d files", len(bigRead.Files))
	}
	var found struct {
		Matches []struct {
			Path string `json:"path"`
		} `json:"matches"`
	}
	call(t, f.srv.base, "search_project_texts", map[string]any{"project": remoteProject, "queries": []any{map[string]any{"query": "needle"}}}, &found)
	if len(found.Matches) != 1 || found.Matches[0].Path != "notes/todo.txt" {
		t.Fatalf("search through the runner: %+v", found)
	}
	var listed struct {
		Entries []struct {
			Path string `json:"path"`
		} `json:"entries"`
	}
	call(t, f.srv.base, "list_project_files", map[string]any{"project": remoteProject}, &listed)
	if len(listed.Entries) == 0 {
		t.Fatalf("list_project_files through the runner: %+v", listed)
	}
	// The process runs on the runner, in the project, sandboxed there.
	run, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "command": "pwd; echo from-runner >&2"}, start.SessionID)
	if err != nil || !run.Success || !strings.Contains(string(run.Output), f.dir) || !strings.Contains(string(run.Output), "from-runner") ||
		!strings.Contains(string(run.Output), `"sandbox":"workspace-write"`) {
		t.Fatalf("run_shell through the runner: %v %s %+v", err, run.Output, run.Error)
	}
	// git runs on the runner, confined there as on a server.
	gittest.Need(t)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "seed"}} {
		gittest.Run(t, f.dir, args...)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "main.go"), []byte("package main\n\nfunc main() { println(1) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var status struct {
		IsGitRepo bool `json:"is_git_repo"`
		Entries   []struct {
			Path string `json:"path"`
		} `json:"entries"`
	}
	call(t, f.srv.base, "git_status", map[string]any{"project": remoteProject}, &status)
	if !status.IsGitRepo || len(status.Entries) != 1 || status.Entries[0].Path != "main.go" {
		t.Fatalf("git_status through the runner: %+v", status)
	}
	gd, err := callTool(ctx, f.srv.base, "git_diff", map[string]any{"project": remoteProject}, "")
	if err != nil || !gd.Success || !strings.Contains(string(gd.Output), "println(1)") {
		t.Fatalf("git_diff through the runner: %v %+v %s", err, gd.Error, gd.Output)
	}

	// A fenced edit through the runner, recorded in the session; a stale
	// fence changes nothing.
	var rd struct {
		Files []struct {
			ReadRevision string `json:"read_revision"`
		} `json:"files"`
	}
	call(t, f.srv.base, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "notes/todo.txt"}}}, &rd)
	edit := func(rev string) toolResult {
		r, err := callTool(ctx, f.srv.base, "apply_text_edits", map[string]any{"project": remoteProject, "session_id": start.SessionID,
			"changes": []any{map[string]any{"path": "notes/todo.txt", "op": "replace", "expected_read_revision": rev,
				"edits": []any{map[string]any{"old_text": "needle here", "new_text": "needle moved"}}}}}, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := edit(rd.Files[0].ReadRevision); !r.Success {
		t.Fatalf("a fenced edit through the runner: %+v", r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes/todo.txt")); string(b) != "remote line one\nneedle moved\n" {
		t.Fatalf("the runner's file after the edit: %q", b)
	}
	if r := edit(rd.Files[0].ReadRevision); r.Success || r.Error.Kind != "edit_conflict" {
		t.Fatalf("a stale fence: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "notes/todo.txt")); string(b) != "remote line one\nneedle moved\n" {
		t.Fatalf("a refused edit changed the file: %q", b)
	}
	var wrote struct {
		Created bool `json:"created"`
	}
	call(t, f.srv.base, "write_project_file", map[string]any{"project": remoteProject, "path": "new/made.txt", "content": "x\n"}, &wrote)
	if b, err := os.ReadFile(filepath.Join(f.dir, "new/made.txt")); err != nil || string(b) != "x\n" || !wrote.Created {
		t.Fatalf("write_project_file through the runner: %v %q %+v", err, b, wrote)
	}
	// The session's ledger records the read, the edit and its diff, as for
	// a local project.
	sum, err := callTool(ctx, f.srv.base, "session_summary", map[string]any{"session_id": start.SessionID}, "")
	if err != nil || !sum.Success {
		t.Fatalf("session_summary: %v %+v", err, sum.Error)
	}
	for _, want := range []string{`"apply_text_edits"`, `"read_files"`, "notes/todo.txt", "needle moved"} {
		if !strings.Contains(string(sum.Output), want) {
			t.Errorf("the session's summary does not hold %s: %s", want, sum.Output)
		}
	}

	// The handoff reads the runner's git state.
	ho, err := callTool(ctx, f.srv.base, "session_handoff_summary", map[string]any{"session_id": start.SessionID, "project": remoteProject, "include_workspace": true}, "")
	if err != nil || !ho.Success || !strings.Contains(string(ho.Output), `"dirty":true`) {
		t.Fatalf("session_handoff_summary on a runner project: %v %+v %s", err, ho.Error, ho.Output)
	}

	// A background job on the runner: its output streams back.
	var job struct {
		Job struct {
			JobID string `json:"job_id"`
		} `json:"job"`
	}
	call(t, f.srv.base, "run_job", map[string]any{"project": remoteProject, "command": "echo started; exec sleep 60"}, &job)
	var seen observed
	call(t, f.srv.base, "observe_jobs", map[string]any{"project": remoteProject, "job_ids": []string{job.Job.JobID}}, &seen)
	if len(seen.Jobs) != 1 || seen.Jobs[0].Job.State != "running" {
		t.Fatalf("the runner's job: %+v", seen)
	}

	// kill -9 of the runner: the next call fails runner_unavailable,
	// nothing sent; a new runner process reconnects and serves, and the
	// job the killed one ran is lost with it (never a success).
	r.cmd.Process.Kill()
	<-r.done
	waitRunnerState(t, f.srv.base, false)
	gone, err := callTool(ctx, f.srv.base, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "main.go"}}}, "")
	if err != nil || gone.Success || gone.Error.Kind != "runner_unavailable" {
		t.Fatalf("read_files with the runner gone: %v %+v", err, gone)
	}
	startRunner(t, f.srv.base, f.toml, f.token, "--transport", transport)
	var lost observed
	call(t, f.srv.base, "observe_jobs", map[string]any{"project": remoteProject, "job_ids": []string{job.Job.JobID},
		"wait_seconds": 30, "wake_on": "terminal"}, &lost)
	if len(lost.Jobs) != 1 || lost.Jobs[0].Job.State != "lost" || lost.Jobs[0].Job.Reason != "runner_restart" {
		t.Fatalf("the job of a killed runner: %+v", lost)
	}
	again, err := callTool(ctx, f.srv.base, "read_files", map[string]any{"project": remoteProject, "files": []any{map[string]any{"path": "main.go"}}}, "")
	if err != nil || !again.Success {
		t.Fatalf("read_files after the runner came back: %v %+v", err, again)
	}
}

// observed is the part of an observe_jobs result these tests read.
type observed struct {
	Jobs []struct {
		Job struct {
			State  string `json:"state"`
			Reason string `json:"reason"`
		} `json:"job"`
		Stdout struct {
			Text string `json:"text"`
		} `json:"stdout"`
	} `json:"jobs"`
}

// waitRunnerState waits until list_runners says runner box is connected
// (or not). The server learns of a killed runner from its closed
// connection, which it reads concurrently with this test.
func waitRunnerState(t *testing.T, base string, connected bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Runners []struct {
				Connected bool `json:"connected"`
			} `json:"runners"`
		}
		call(t, base, "list_runners", map[string]any{}, &list)
		if len(list.Runners) == 1 && list.Runners[0].Connected == connected {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner never became connected=%t: %+v", connected, list)
		}
	}
}

// cutProxy forwards loopback TCP connections to target. The first
// connection whose server-to-runner bytes contain cut is closed, both ways,
// right after those bytes are forwarded (tear: right before them, so the
// message carrying them arrives torn); later connections pass untouched.
type cutProxy struct {
	ln     net.Listener
	target string
	cut    []byte
	tear   bool
	once   sync.Once
}

func startCutProxy(t *testing.T, target, cut string, tear bool) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cut: []byte(cut), tear: tear}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(down net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		down.Close()
		return
	}
	var cutting atomic.Bool // set before the cut bytes go down: nothing after them comes up
	closeBoth := func() { down.Close(); up.Close() }
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := down.Read(buf)
			if cutting.Load() || err != nil {
				break
			}
			if _, err := up.Write(buf[:n]); err != nil {
				break
			}
		}
		closeBoth()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			last := false
			if bytes.Contains(buf[:n], p.cut) {
				p.once.Do(func() { last = true })
			}
			if last {
				cutting.Store(true)
				if p.tear {
					n = bytes.Index(buf[:n], p.cut)
				}
			}
			if _, werr := down.Write(buf[:n]); werr != nil || last {
				break
			}
		}
		if err != nil {
			break
		}
	}
	closeBoth()
}

// TestRunnerConnectionCutMidRequest: the connection to the runner is cut
// right after a process start was sent: the call ends outcome_unknown, the
// runner reconnects, and the command ran at most once (nothing is re-sent).
// Over long-poll a TCP connection is not the link (an answer that arrived
// whole is delivered), so there the cut tears the answer carrying the
// start.
func TestRunnerConnectionCutMidRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerConnectionCutMidRequest)
}

func runnerConnectionCutMidRequest(t *testing.T, transport string) {
	f := newRunnerFixture(t)
	proxy := startCutProxy(t, strings.TrimPrefix(f.srv.base, "http://"), `"op":"proc.start"`, transport == "longpoll")
	r := startRunner(t, "http://"+proxy.ln.Addr().String(), f.toml, f.token, "--transport", transport)
	ctx := context.Background()
	res, err := callTool(ctx, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "command": "echo ran >> marker.txt; sleep 2"}, "")
	if err != nil || res.Success || res.Error.Kind != "outcome_unknown" {
		t.Fatalf("a start whose connection was cut: %v %+v", err, res)
	}
	r.waitConnected(t) // the runner is back, through the proxy
	var cat struct {
		Stdout struct {
			Text string `json:"text"`
		} `json:"stdout"`
	}
	call(t, f.srv.base, "run_shell", map[string]any{"project": remoteProject, "command": "cat marker.txt 2>/dev/null; true"}, &cat)
	if n := strings.Count(cat.Stdout.Text, "ran"); n > 1 {
		t.Fatalf("the cut command ran %d times", n)
	}
}

// TestRunnerStopsOnAnAuthenticationFailure: a runner whose token the server
// refuses exits non-zero at once with a message naming the cause, instead
// of retrying forever.
func TestRunnerStopsOnAnAuthenticationFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server and runner processes")
	}
	overTransports(t, runnerStopsOnAnAuthenticationFailure)
}

func runnerStopsOnAnAuthenticationFailure(t *testing.T, transport string) {
	f := newRunnerFixture(t)
	argv, _ := json.Marshal([]string{"runner", "--server", f.srv.base, "--config", f.toml, "--transport", transport})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv), RunnerTokenEnv+"=wc_runner_"+strings.Repeat("A", 43))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "refused the runner token") {
		t.Fatalf("a runner with an unknown token: %v\n%s", err, out)
	}
}
