//go:build unix

package runner_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// A private directory is made for the run (0700), named in its argv and
// env, and removed when it ends, after its collected file was handed over.
func TestPrivateDirectoryCollectsAFileAndGoes(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var got bytes.Buffer
	res := run(t, runner.Spec{Argv: []string{"sh", "-c", `ls -ld "$1"; echo "$OUT"; printf report > "$1/r.xml"`, "sh", runner.PrivateDirToken},
		Env: map[string]string{"OUT": "dir=" + runner.PrivateDirToken + "/x"}, Private: true, Collect: "r.xml", CollectTo: &got})
	lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
	if res.ExitCode != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "drwx------ ") {
		t.Fatalf("result %+v", res)
	}
	dir := strings.TrimSuffix(strings.TrimPrefix(lines[1], "dir="), "/x")
	if filepath.Dir(dir) != tmp || !strings.HasSuffix(lines[0], " "+dir) {
		t.Fatalf("the private directory %q is not the one in argv (%s) or not under %s", dir, lines[0], tmp)
	}
	if got.String() != "report" {
		t.Fatalf("collected %q", got.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the private directory outlived the run: %v", err)
	}
	// No file: nothing collected; a link is not followed.
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	for _, script := range []string{"true", `ln -s ` + secret + ` "$1/r.xml"`} {
		got.Reset()
		run(t, runner.Spec{Argv: []string{"sh", "-c", script, "sh", runner.PrivateDirToken}, Private: true, Collect: "r.xml", CollectTo: &got})
		if got.Len() != 0 {
			t.Fatalf("%s: collected %q", script, got.String())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "webcodex-private-*")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
	// A start that fails leaves nothing.
	notExec := filepath.Join(t.TempDir(), "prog")
	os.WriteFile(notExec, []byte("x"), 0o600)
	if _, err := (&runner.Local{}).Start(context.Background(), runner.Spec{Argv: []string{notExec}, Dir: t.TempDir(), Private: true}); !errors.Is(err, runner.ErrNotStarted) {
		t.Fatalf("a non-executable program: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "webcodex-private-*")); len(m) != 0 {
		t.Fatalf("a failed start left %v", m)
	}
}

func TestCollectNames(t *testing.T) {
	for _, name := range []string{"junit.xml", "r"} {
		if !runner.ValidCollect(name) {
			t.Errorf("%q refused", name)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "../x", strings.Repeat("x", 129), "a\x00"} {
		if runner.ValidCollect(name) {
			t.Errorf("%q accepted", name)
		}
	}
	s := runner.Spec{Argv: []string{"true"}, Dir: "/", Collect: "r.xml"}
	if err := s.Validate(); err == nil {
		t.Error("collect without a private directory accepted")
	}
	s = runner.Spec{Argv: []string{"true"}, Dir: "/", Private: true, SSH: &runner.SSH{Resource: "db", Session: "s"}}
	if err := s.Validate(); err == nil {
		t.Error("a private directory on an SSH resource accepted")
	}
}
