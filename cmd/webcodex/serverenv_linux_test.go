package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// createToken creates an API token with scopes in data and returns it.
func createToken(t *testing.T, data, name, scopes string) string {
	t.Helper()
	var created struct{ Token string }
	out := mustRun(t, "--data-dir", data, "token", "create", "--name", name, "--scopes", scopes, "--json")
	if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Token, "wc_pat_") {
		t.Fatalf("token create: %v %s", err, out)
	}
	return created.Token
}

// runOutput is the part of an execution tool's output these tests read.
type runOutput struct {
	ExitCode int `json:"exit_code"`
	Stdout   struct {
		Text string `json:"text"`
	} `json:"stdout"`
	Stderr struct {
		Text string `json:"text"`
	} `json:"stderr"`
}

// runProcessAs calls run_process with argv in project as token and returns
// the result and the run's output (on failure, the result's execution).
func runProcessAs(t *testing.T, base, token, project string, argv ...string) (toolResult, runOutput) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tool": "run_process", "arguments": map[string]any{"project": project, "argv": argv}})
	req, _ := http.NewRequest("POST", base+"/api/tools/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("run_process %v: status %d: %s", argv, resp.StatusCode, data)
	}
	var r toolResult
	var out runOutput
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("run_process %v: %v: %s", argv, err, data)
	}
	if r.Success {
		json.Unmarshal(r.Output, &out)
	} else { // a failed run's result carries it as execution
		var f struct{ Execution runOutput }
		json.Unmarshal(r.Output, &f)
		out = f.Execution
	}
	return r, out
}

// statusCode is the status of GET /api/status as token.
func statusCode(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeEnvironHoldsNoCredential reproduces the attack of issue 12: a
// token with only job:run runs `cat /proc/<server pid>/environ`. The server
// was started with WEBCODEX_TOKEN and other credentials in its environment
// (as a user's shell hands them over); the environment a child reads holds
// none of them, and no wc_pat_ token at all, while the server still accepts
// the WEBCODEX_TOKEN it was given and keeps its WEBCODEX_* configuration.
func TestServeEnvironHoldsNoCredential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server process")
	}
	data, proj := t.TempDir(), t.TempDir()
	runToken := createToken(t, data, "runner", "job:run")
	mcpToken := createToken(t, data, "mcp-client", "admin")
	planted := map[string]string{
		"WEBCODEX_MCP_TOKEN":    mcpToken, // README: exported for Codex's --bearer-token-env-var
		"GITHUB_TOKEN":          "ghp_plantedgithubtoken0123456789",
		"AWS_SECRET_ACCESS_KEY": "planted/aws/secret/key/0123456789",
		"DATABASE_URL":          "postgres://user:plantedpassword@db/x",
		"WEBCODEX_LOG_LEVEL":    "info",
	}
	srv := startServeCmd(t, func(c *exec.Cmd) {
		for k, v := range planted {
			c.Env = append(c.Env, k+"="+v)
		}
	}, "--data-dir", data, "--project", "p="+proj)
	pid := srv.cmd.Process.Pid

	res, out := runProcessAs(t, srv.base, runToken, "agent:local:p", "cat", fmt.Sprintf("/proc/%d/environ", pid))
	if !res.Success || out.ExitCode != 0 {
		t.Fatalf("cat environ as root must succeed (root may read a non-dumpable process's environ): %+v %+v", res.Error, out)
	}
	env := strings.Split(strings.TrimRight(out.Stdout.Text, "\x00"), "\x00")
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "WEBCODEX_TEST_CHILD_ARGS=") }) ||
		!slices.Contains(env, "WEBCODEX_LOG_LEVEL=info") || !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Fatalf("environ read is not the server's, or lost its configuration: %q", env)
	}
	for _, secret := range []string{testToken, mcpToken, runToken, "wc_pat_", "WEBCODEX_TOKEN=", "WEBCODEX_MCP_TOKEN=",
		planted["GITHUB_TOKEN"], planted["AWS_SECRET_ACCESS_KEY"], "plantedpassword"} {
		if strings.Contains(out.Stdout.Text, secret) {
			t.Errorf("the server's environ holds %q: %q", secret, env)
		}
	}
	if got := statusCode(t, srv.base, testToken); got != 200 {
		t.Errorf("the WEBCODEX_TOKEN the server was given: status %d, want 200", got)
	}
	if got := statusCode(t, srv.base, testToken+"x"); got != 401 {
		t.Errorf("a wrong token: status %d, want 401", got)
	}
}

// TestServeIsNonDumpable: a real server, run as a non-root user (nobody when
// the test runs as root), is non-dumpable — the kernel then owns its /proc
// files as root — so a process a tool starts, which runs as the same user,
// can read neither its environ nor its memory, while it can read those of
// another process of that user.
func TestServeIsNonDumpable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real server process")
	}
	const nobody = 65534
	uid := os.Getuid()
	base, err := os.MkdirTemp("", "webcodex-dumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data, proj := filepath.Join(base, "data"), filepath.Join(base, "proj")
	for _, d := range []string{data, proj} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	runToken := createToken(t, data, "runner", "job:run")
	exe := os.Args[0]
	if uid == 0 {
		uid = nobody
		// The server runs as nobody: it needs an executable and
		// directories that user can reach.
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(base, "webcodex.test")
		b, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{data, proj} {
			filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, nobody, nobody)
			})
		}
	}
	srv := startServeCmd(t, func(c *exec.Cmd) {
		c.Path, c.Args[0] = exe, exe
		c.Env = append(c.Env, "TMPDIR="+proj)
		if os.Getuid() == 0 {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
		}
	}, "--data-dir", data, "--project", "p="+proj)
	pid := srv.cmd.Process.Pid

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t"+strconv.Itoa(uid)+"\t") {
		t.Fatalf("the server does not run as uid %d:\n%s", uid, status)
	}
	fi, err := os.Stat(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if owner := fi.Sys().(*syscall.Stat_t).Uid; owner != 0 {
		t.Errorf("/proc/%d/environ is owned by uid %d, want 0 (the kernel's mark of a non-dumpable process)", pid, owner)
	}

	for _, file := range []string{"environ", "mem"} {
		res, out := runProcessAs(t, srv.base, runToken, "agent:local:p", "cat", fmt.Sprintf("/proc/%d/%s", pid, file))
		if res.Success || res.Error == nil || res.Error.Kind != "command_failed" || out.ExitCode == 0 ||
			!strings.Contains(out.Stderr.Text, "Permission denied") || out.Stdout.Text != "" {
			t.Errorf("a child read /proc/<server>/%s: %+v %+v", file, res.Error, out)
		}
	}
	// The same child may read a dumpable process of its own user, so the
	// refusal above is the server's non-dumpability.
	res, out := runProcessAs(t, srv.base, runToken, "agent:local:p", "sh", "-c",
		`sleep 30 & p=$!; cat /proc/$p/environ >/dev/null && echo readable; kill $p`)
	if !res.Success || out.Stdout.Text != "readable\n" {
		t.Errorf("control: a child cannot read a same-user process's environ: %+v %+v", res.Error, out)
	}
}

// TestMCPEnvironHoldsNoCredential: `webcodex mcp`, started by an MCP client
// whose environment holds WEBCODEX_TOKEN and a GitHub token, runs
// run_process `cat /proc/$PPID/environ` (its own environ, as root may read
// it); the output holds neither.
func TestMCPEnvironHoldsNoCredential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if os.Getuid() != 0 {
		t.Skip("only root may read a non-dumpable process's environ")
	}
	data, proj := pipeProject(t)
	const github = "ghp_plantedgithubtoken0123456789"
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_process","arguments":{"project":"agent:local:demo","argv":["sh","-c","cat /proc/$PPID/environ"]}}}`
	answers, stderr, err := pipeMCPEnv(t, []string{"WEBCODEX_TOKEN=" + testToken, "GITHUB_TOKEN=" + github},
		data, proj, lines(pipeInitialize, pipeInitialized, call))
	if err != nil {
		t.Fatalf("webcodex mcp: %v\n%s", err, stderr)
	}
	var res struct {
		Result struct {
			StructuredContent struct {
				Success bool `json:"success"`
				Output  struct {
					Stdout struct {
						Text string `json:"text"`
					} `json:"stdout"`
				} `json:"output"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answers["2"].raw), &res); err != nil || !res.Result.StructuredContent.Success {
		t.Fatalf("run_process: %v %.800s\n%s", err, answers["2"].raw, stderr)
	}
	environ := res.Result.StructuredContent.Output.Stdout.Text
	if !strings.Contains(environ, "WEBCODEX_TEST_CHILD_ARGS=") {
		t.Fatalf("not the server's environ: %q", environ)
	}
	for _, secret := range []string{testToken, github, "WEBCODEX_TOKEN=", "GITHUB_TOKEN="} {
		if strings.Contains(environ, secret) {
			t.Errorf("the mcp server's environ holds %q: %q", secret, environ)
		}
	}
}

// TestServerEnvKeepsOnlyWhatTheServerReads: serverEnv keeps what children
// may inherit, XDG_DATA_HOME, Go runtime settings and WEBCODEX_*
// configuration; it carries WEBCODEX_TOKEN and drops every other
// credential and unknown variable.
func TestServerEnvKeepsOnlyWhatTheServerReads(t *testing.T) {
	keep, creds := serverEnv([]string{
		"PATH=/bin", "HOME=/home/u", "GOCACHE=/c", "XDG_DATA_HOME=/x", "GOMAXPROCS=2",
		"WEBCODEX_DATA=/d", "WEBCODEX_LISTEN=127.0.0.1:1",
		"WEBCODEX_TOKEN=0123456789abcdef", "WEBCODEX_MCP_TOKEN=wc_pat_x", "WEBCODEX_API_SECRET=s",
		"GITHUB_TOKEN=ghp_x", "SSH_AUTH_SOCK=/tmp/agent", "DATABASE_URL=postgres://u:p@h/d", "SHELL=/bin/bash",
		"malformed", "=nameless",
	})
	wantKeep := []string{"PATH=/bin", "HOME=/home/u", "GOCACHE=/c", "XDG_DATA_HOME=/x", "GOMAXPROCS=2",
		"WEBCODEX_DATA=/d", "WEBCODEX_LISTEN=127.0.0.1:1"}
	if !slices.Equal(keep, wantKeep) {
		t.Errorf("kept %q, want %q", keep, wantKeep)
	}
	if !slices.Equal(creds, []string{"WEBCODEX_TOKEN=0123456789abcdef"}) {
		t.Errorf("carried %q, want only WEBCODEX_TOKEN", creds)
	}
}

// TestCredentialPipeRoundTrip: what credentialPipe writes, readCredentials
// reads back, and the descriptor is closed after it.
func TestCredentialPipeRoundTrip(t *testing.T) {
	fd, err := credentialPipe([]string{"WEBCODEX_TOKEN=0123456789abcdef=x"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readCredentials(strconv.Itoa(fd))
	if err != nil || len(got) != 1 || got["WEBCODEX_TOKEN"] != "0123456789abcdef=x" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("descriptor %d still open after reading: %v", fd, err)
	}
	if _, err := credentialPipe([]string{"WEBCODEX_TOKEN=" + strings.Repeat("x", maxCredentialBytes)}); err == nil ||
		strings.Contains(err.Error(), "xxxx") {
		t.Errorf("an over-long credential: %v, want an error without its value", err)
	}
}

// TestReadCredentialsRefusesBadDescriptors: WEBCODEX_BOOTSTRAP_FD naming
// no descriptor, standard input, a regular file, or a pipe holding an
// unaccepted name is refused, and nothing is read from a file.
func TestReadCredentialsRefusesBadDescriptors(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("WEBCODEX_TOKEN=0123456789abcdef")
	defer f.Close()
	other, err := credentialPipe([]string{"GITHUB_TOKEN=ghp_x"})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"NotANumber": "three", "Stdin": "0", "Closed": "987654", "RegularFile": strconv.Itoa(int(f.Fd())),
		"UnacceptedName": strconv.Itoa(other),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readCredentials(v)
			if err == nil || got != nil || !strings.Contains(err.Error(), credentialsFDVar) {
				t.Errorf("readCredentials(%q) = %q, %v; want an error naming %s", v, got, err, credentialsFDVar)
			}
		})
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len("WEBCODEX_TOKEN=0123456789abcdef")) {
		t.Errorf("the regular file was read from: offset %d", off)
	}
}
