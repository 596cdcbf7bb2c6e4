package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// fakeGit puts a shell script named git first on PATH.
func fakeGit(t *testing.T, script string) git {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	g, err := newGit(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if g.path != filepath.Join(bin, "git") {
		t.Fatalf("git is %s", g.path)
	}
	return g
}

// TestEnvironmentIsScrubbed pins git's whole environment: the runner's
// scrubbed base of a server environment full of credentials and git
// variables, plus the variables this package sets.
func TestEnvironmentIsScrubbed(t *testing.T) {
	g := fakeGit(t, `env; echo "ARGS $*"`)
	server := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": "/home/tester", "TZ": "UTC", "LANG": "de_DE.UTF-8",
		"WEBCODEX_TOKEN": "wc_pat_secret", "GITHUB_TOKEN": "ghp_secret", "GIT_DIR": "/elsewhere",
		"GIT_CONFIG_PARAMETERS": "'status.showuntrackedfiles'='no'", "XDG_CONFIG_HOME": "/elsewhere",
		"GIT_INDEX_FILE": "/elsewhere/index",
	}
	g.host = &runner.Local{Getenv: func(k string) string { return server[k] }}
	want := []string{
		"GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0",
		"HOME=/home/tester", "LANG=C", "LC_ALL=C", "NO_COLOR=1", "PAGER=cat", "PATH=" + server["PATH"], "TERM=dumb", "TZ=UTC",
		"WC_GIT_EMPTY=", "WC_GIT_FALSE=false",
	}
	environ := func(g git) []string {
		t.Helper()
		out, truncated, err := g.run(context.Background(), 1<<20, "status")
		if err != nil || truncated {
			t.Fatalf("run: %v %v", err, truncated)
		}
		var env []string
		var args string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "ARGS ") {
				args = l
				continue
			}
			switch k, _, _ := strings.Cut(l, "="); k {
			case "PWD", "SHLVL", "_", "OLDPWD":
				continue // set by the shell itself
			case runner.MarkerEnv:
				continue // the runner's containment marker (a run id)
			}
			env = append(env, l)
		}
		if want := "ARGS " + strings.Join(append(slices.Clone(globalArgs), "status"), " "); args != want {
			t.Fatalf("argv = %q, want %q", args, want)
		}
		slices.Sort(env)
		return env
	}
	if got := environ(g); !slices.Equal(got, want) {
		t.Fatalf("environment = %q, want %q", got, want)
	}
	// A private index is the only addition.
	g.index = "/tmp/private-index"
	want = append(want, "GIT_INDEX_FILE=/tmp/private-index")
	slices.Sort(want)
	if got := environ(g); !slices.Equal(got, want) {
		t.Fatalf("environment with a private index = %q, want %q", got, want)
	}
}

func TestRunBoundsOutput(t *testing.T) {
	r := fakeGit(t, `yes 0123456789`)
	start := time.Now()
	out, truncated, err := r.run(context.Background(), 1000, "status")
	if err != nil || !truncated || len(out) != 1000 || !strings.HasPrefix(string(out), "0123456789\n") {
		t.Fatalf("run: err %v truncated %v len %d", err, truncated, len(out))
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("an endless producer was not stopped")
	}
	// A producer that ignores the closed pipe is stopped too.
	r = fakeGit(t, `trap '' PIPE; while :; do echo 0123456789 2>/dev/null; done`)
	out, truncated, err = r.run(context.Background(), 1000, "status")
	if err != nil || !truncated || len(out) != 1000 {
		t.Fatalf("run ignoring SIGPIPE: err %v truncated %v len %d", err, truncated, len(out))
	}
	// Exactly the bound is not truncated.
	r = fakeGit(t, `printf 0123456789`)
	out, truncated, err = r.run(context.Background(), 10, "status")
	if err != nil || truncated || string(out) != "0123456789" {
		t.Fatalf("run at the bound: %v %v %q", err, truncated, out)
	}
}

func TestRunTimeout(t *testing.T) {
	// The child keeps stdout open after git is killed; WaitDelay ends the
	// wait.
	r := fakeGit(t, `sleep 30 & sleep 30`)
	ctx, cancel := withTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := r.run(ctx, 1000, "status")
	if !failure.Is(err, failure.OperationFailed) || failure.DetailOf(err)["timeout"] != true {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestRunCancelled(t *testing.T) {
	r := fakeGit(t, `exec sleep 30`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, _, err := r.run(ctx, 1000, "status"); !failure.Is(err, failure.Interrupted) {
		t.Fatalf("err = %v", err)
	}
}

func TestRunFailureKeepsBoundedDiagnostics(t *testing.T) {
	r := fakeGit(t, `yes "fatal: something went wrong" | head -c 100000 >&2; exit 3`)
	_, _, err := r.run(context.Background(), 1000, "status")
	ee, ok := err.(*exitError)
	if !ok || ee.code != 3 || len(ee.stderr) != MaxStderrBytes {
		t.Fatalf("err = %#v", err)
	}
	f := asFailure(err, "status")
	if !failure.Is(f, failure.OperationFailed) || failure.MessageOf(f) != "git status failed: fatal: something went wrong" ||
		failure.DetailOf(f)["git_exit_code"] != 3 {
		t.Fatalf("failure = %v", f)
	}
}
