package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/runner"
)

func run(t *testing.T, s runner.Spec) runner.Result {
	t.Helper()
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	l := &runner.Local{Getenv: func(k string) string {
		switch k {
		case "PATH":
			return os.Getenv("PATH")
		case "WEBCODEX_TOKEN", "GITHUB_TOKEN":
			return "server-secret"
		}
		return ""
	}}
	res, err := runner.Run(context.Background(), l, s)
	if err != nil {
		t.Fatalf("run %v: %v", s.Argv, err)
	}
	return res
}

func TestExitCodesAndOutput(t *testing.T) {
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if res.ExitCode != 3 || res.Ending != runner.Exited || res.Stdout.Text != "out\n" || res.Stderr.Text != "err\n" || res.Stdout.TotalBytes != 4 {
		t.Fatalf("result %+v", res)
	}
	res = run(t, runner.Spec{Argv: []string{"cat"}, Stdin: []byte("piped")})
	if res.ExitCode != 0 || res.Stdout.Text != "piped" {
		t.Fatalf("stdin: %+v", res)
	}
}

func TestScrubbedEnvironment(t *testing.T) {
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", "env"}, Env: map[string]string{"MY_FLAG": "1"}})
	if strings.Contains(res.Stdout.Text, "server-secret") || strings.Contains(res.Stdout.Text, "WEBCODEX_TOKEN") {
		t.Fatalf("server credentials leaked into the child:\n%s", res.Stdout.Text)
	}
	if !strings.Contains(res.Stdout.Text, "MY_FLAG=1") || !strings.Contains(res.Stdout.Text, "PATH=") {
		t.Fatalf("additions or PATH missing:\n%s", res.Stdout.Text)
	}
	if err := runner.ValidateEnv(map[string]string{"WEBCODEX_TOKEN": "x"}); err == nil {
		t.Fatal("reserved name accepted")
	}
	if err := runner.ValidateEnv(map[string]string{"A B": "x"}); err == nil {
		t.Fatal("bad name accepted")
	}
}

func TestNotStarted(t *testing.T) {
	l := &runner.Local{}
	for name, s := range map[string]runner.Spec{
		"EmptyArgv":  {Dir: t.TempDir()},
		"Missing":    {Argv: []string{"no-such-binary-xyz"}, Dir: t.TempDir()},
		"MissingAbs": {Argv: []string{"/nonexistent/bin"}, Dir: t.TempDir()},
		"BadDir":     {Argv: []string{"true"}, Dir: filepath.Join(t.TempDir(), "gone")},
		"Timeout":    {Argv: []string{"true"}, Dir: t.TempDir(), Timeout: runner.MaxTimeout + time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := l.Start(context.Background(), s); !errors.Is(err, runner.ErrNotStarted) {
				t.Fatalf("got %v, want ErrNotStarted", err)
			}
		})
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	// The child ignores SIGTERM and leaves a grandchild behind.
	script := "trap '' TERM; (sleep 60; echo survived > " + filepath.Join(dir, "mark") + ") & sleep 60"
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Timeout: 300 * time.Millisecond})
	if res.Ending != runner.TimedOut || !res.KilledGroup || res.Signal == "" {
		t.Fatalf("result %+v", res)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "mark")); err == nil {
		t.Fatal("a grandchild survived the group kill")
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := (&runner.Local{}).Start(ctx, runner.Spec{Argv: []string{"sleep", "30"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, _ := p.Wait(context.Background())
	if res.Ending != runner.Cancelled || !res.KilledGroup {
		t.Fatalf("result %+v", res)
	}
}

func TestEndlessOutputIsBounded(t *testing.T) {
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", "yes 0123456789 | head -c 20000000"}, TailBytes: 4096})
	if !res.Stdout.Truncated || len(res.Stdout.Text) > 4096 || res.Stdout.TotalBytes != 20000000 {
		t.Fatalf("stdout %d bytes kept, total %d, truncated %v", len(res.Stdout.Text), res.Stdout.TotalBytes, res.Stdout.Truncated)
	}
}

func TestClosedStdoutAndBackgroundHolder(t *testing.T) {
	// The child closes stdout early; a background process holds stderr
	// open after the leader exits: Run must still return promptly.
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", "exec 1>&-; (sleep 30 >&2 &) ; exit 0"}})
	if res.ExitCode != 0 || res.Duration > 10*time.Second {
		t.Fatalf("result %+v", res)
	}
}

func TestProcessLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns many processes")
	}
	// A bounded spawner stands in for a fork bomb: it would create twice
	// the limit; the guard must kill the group first.
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do sleep 30 & i=$((i+1)); done; wait", 2*runner.MaxProcesses)
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", script}, Timeout: 60 * time.Second})
	if res.Ending != runner.ProcessLimit || !res.KilledGroup {
		t.Fatalf("result %+v", res)
	}
}

func TestTail(t *testing.T) {
	tl := runner.NewTail(5)
	for _, s := range []string{"ab", "cdef", "g"} {
		tl.Write([]byte(s))
	}
	o := tl.Snapshot()
	if o.Text != "cdefg" || !o.Truncated || o.TotalBytes != 7 {
		t.Fatalf("tail %+v", o)
	}
	tl = runner.NewTail(4)
	tl.Write([]byte("xé€")) // é is 2 bytes, € is 3: the cut lands inside é
	if o := tl.Snapshot(); o.Text != "€" {
		t.Fatalf("tail cut inside a rune: %q", o.Text)
	}
}
