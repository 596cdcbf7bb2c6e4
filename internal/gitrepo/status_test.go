package gitrepo_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/runner"
)

// TestStatusIgnoresServerGitEnvironment runs the real git on a repository
// whose own configuration and whose server environment would each change
// git status's output if they reached git: the argv overrides the
// repository's settings, and none of the server's GIT_* or XDG_* variables
// is passed on.
func TestStatusIgnoresServerGitEnvironment(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("old.txt", "same content\nline two\nline three\n")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	git("mv", "old.txt", "new.txt")
	write("ü.txt", "untracked\n")
	// The repository's own settings that the fixed argv overrides.
	for _, kv := range [][2]string{{"status.showUntrackedFiles", "no"}, {"status.renames", "false"}} {
		git("config", kv[0], kv[1])
	}
	// Server variables that would redirect or reconfigure git: another
	// git directory and index, and configuration (from the environment, a
	// global file or XDG) that ignores every .txt file.
	elsewhere := t.TempDir()
	ignoreAll := filepath.Join(elsewhere, "ignore")
	ignoring := "[core]\n\texcludesFile = " + ignoreAll + "\n"
	for rel, content := range map[string]string{"ignore": "*.txt\n", "config": ignoring, "git/config": ignoring, "git/ignore": "*.txt\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(elsewhere, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(elsewhere, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range map[string]string{
		"GIT_DIR": elsewhere, "GIT_WORK_TREE": elsewhere, "GIT_INDEX_FILE": filepath.Join(elsewhere, "index"),
		"GIT_CONFIG_PARAMETERS": "'core.excludesfile'='" + ignoreAll + "'", "GIT_CONFIG_COUNT": "1",
		"GIT_CONFIG_KEY_0": "core.excludesFile", "GIT_CONFIG_VALUE_0": ignoreAll,
		"GIT_CONFIG_GLOBAL": filepath.Join(elsewhere, "config"), "XDG_CONFIG_HOME": elsewhere,
	} {
		t.Setenv(k, v)
	}

	st, complete, err := gitrepo.ReadStatus(context.Background(), &runner.Local{}, dir)
	if err != nil || !complete {
		t.Fatalf("ReadStatus: %v complete=%v", err, complete)
	}
	want := []gitrepo.Entry{
		{Path: "new.txt", OldPath: "old.txt", IndexStatus: "R", WorktreeStatus: ".", Kind: gitrepo.KindRenamed},
		{Path: "ü.txt", IndexStatus: "?", WorktreeStatus: "?", Kind: gitrepo.KindUntracked},
	}
	if !st.IsGitRepo || st.Branch != "main" || st.Total != 2 || st.Clean || len(st.Entries) != 2 ||
		st.Entries[0] != want[0] || st.Entries[1] != want[1] {
		t.Fatalf("status = %+v, want entries %+v", st, want)
	}
}
