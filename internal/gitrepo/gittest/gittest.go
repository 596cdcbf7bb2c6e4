// Package gittest runs the real git for tests that build repositories.
package gittest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// identity makes commits work on a machine without git configuration and
// keeps them unsigned, with main as the first branch.
var identity = []string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}

// Need skips t when git is not on PATH.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
}

// Run runs git with args in dir and returns its standard output, trimmed;
// a failure fails t with git's standard error.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append(append([]string(nil), identity...), args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
