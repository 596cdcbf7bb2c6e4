//go:build unix

package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// scriptDirs lists the script directories left under tmp.
func scriptDirs(t *testing.T, tmp string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "webcodex-script-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestScriptIsAPrivateFileRemovedWhenTheRunEnds(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := run(t, runner.Spec{Argv: []string{"sh", "first"}, Script: []byte(`echo "$0 $1"; ls -ld "$0" "$(dirname "$0")"; cat "$0" >/dev/null`)})
	lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
	if res.ExitCode != 0 || len(lines) != 3 {
		t.Fatalf("result %+v", res)
	}
	file, arg, _ := strings.Cut(lines[0], " ")
	if arg != "first" || filepath.Dir(filepath.Dir(file)) != tmp || filepath.Base(file) != "script" {
		t.Fatalf("the script ran as %q with %q; want a file under %s and the caller's argument after it", file, arg, tmp)
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "-rw------- ") && !strings.HasPrefix(l, "drwx------ ") {
			t.Errorf("not private: %s", l)
		}
	}
	if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the script's directory outlived the run: %v", err)
	}

	// Stopped: removed too.
	p, err := (&runner.Local{}).Start(context.Background(), runner.Spec{Argv: []string{"sh"}, Dir: t.TempDir(), Script: []byte("exec sleep 60")})
	if err != nil {
		t.Fatal(err)
	}
	if len(scriptDirs(t, tmp)) != 1 {
		t.Fatal("no script file while the run goes on")
	}
	p.Stop()
	if r, _ := p.Wait(context.Background()); r.Ending != runner.Stopped {
		t.Fatalf("stopped run: %+v", r)
	}
	if d := scriptDirs(t, tmp); len(d) != 0 {
		t.Fatalf("a stopped run left %v", d)
	}

	// A start that fails after the file was written leaves nothing.
	notExec := filepath.Join(t.TempDir(), "interp")
	os.WriteFile(notExec, []byte("x"), 0o600)
	if _, err := (&runner.Local{}).Start(context.Background(), runner.Spec{Argv: []string{notExec}, Dir: t.TempDir(), Script: []byte("x")}); !errors.Is(err, runner.ErrNotStarted) {
		t.Fatalf("a non-executable interpreter: %v", err)
	}
	if d := scriptDirs(t, tmp); len(d) != 0 {
		t.Fatalf("a failed start left %v", d)
	}
}

func TestScriptBound(t *testing.T) {
	s := runner.Spec{Argv: []string{"sh"}, Dir: "/", Script: make([]byte, runner.MaxScriptBytes)}
	if err := s.Validate(); err != nil {
		t.Fatalf("a script of exactly the bound: %v", err)
	}
	s.Script = append(s.Script, 'x')
	if err := s.Validate(); err == nil {
		t.Fatal("a script over the bound was accepted")
	}
	s.Script = []byte("x")
	s.SSH = &runner.SSH{Resource: "db", Session: "s"}
	if err := s.Validate(); err == nil {
		t.Fatal("a script on an SSH resource was accepted")
	}
}
