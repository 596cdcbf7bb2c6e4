package git

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
)

// fakeGit puts a shell script named git first on PATH.
func fakeGit(t *testing.T, script string) runner {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs a POSIX shell")
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r, err := newRunner(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if r.git != filepath.Join(bin, "git") {
		t.Fatalf("runner uses %s", r.git)
	}
	return r
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	r := fakeGit(t, `env; echo "ARGS $*"`)
	t.Setenv("WEBCODEX_TOKEN", "wc_pat_secret")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("HOME", "/home/tester")
	out, truncated, err := r.run(context.Background(), 1<<20, "status")
	if err != nil || truncated {
		t.Fatalf("run: %v %v", err, truncated)
	}
	var keys []string
	var args string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "ARGS ") {
			args = l
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		switch k {
		case "PWD", "SHLVL", "_", "OLDPWD":
			continue // set by the shell itself
		case "HOME":
			if v != "/home/tester" {
				t.Errorf("HOME = %q", v)
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"GIT_LITERAL_PATHSPECS", "GIT_OPTIONAL_LOCKS", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "HOME", "LANG", "LC_ALL", "PATH"}
	if !slices.Equal(keys, want) {
		t.Fatalf("environment keys = %v, want %v", keys, want)
	}
	if strings.Contains(string(out), "wc_pat_secret") || strings.Contains(string(out), "/elsewhere") {
		t.Fatal("server environment leaked into git")
	}
	if want := "ARGS " + strings.Join(append(slices.Clone(globalArgs), "status"), " "); args != want {
		t.Fatalf("argv = %q, want %q", args, want)
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

func TestParseStatusTruncatedOutput(t *testing.T) {
	out := "# branch.oid abc\x00# branch.head main\x00? one.txt\x002 R. N... 100644 100644 100644 a b R100 new.txt\x00old.t"
	st := parseStatus([]byte(out), true, "")
	if st.Total != 1 || !st.Truncated || st.Clean || st.Entries[0].Path != "one.txt" || st.Head != "abc" {
		t.Fatalf("status = %+v", st)
	}
	// With a prefix, paths are project-relative and a rename source
	// outside the project is not reported.
	out = "2 R. N... 100644 100644 100644 a b R100 sub/new.txt\x00elsewhere.txt\x00"
	st = parseStatus([]byte(out), false, "sub/")
	if st.Entries[0].Path != "new.txt" || st.Entries[0].OldPath != "" || st.Entries[0].Kind != KindRenamed {
		t.Fatalf("status = %+v", st)
	}
}

func TestParseHunkHeader(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Hunk
	}{
		{"@@ -1,3 +1,4 @@ func f()", Hunk{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 4}},
		{"@@ -5 +5 @@", Hunk{OldStart: 5, OldLines: 1, NewStart: 5, NewLines: 1}},
		{"@@ -0,0 +1,2 @@", Hunk{OldStart: 0, OldLines: 0, NewStart: 1, NewLines: 2}},
		{"@@@ -1,3 -1,3 +1,7 @@@", Hunk{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 7}},
		{"@@ -1,2 +1,2 @@ a -9,9 +9,9 b", Hunk{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2}},
	} {
		got := parseHunkHeader(tc.line)
		tc.want.Header = tc.line
		if got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

func TestSectionPath(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   string
	}{
		{[]string{"diff --git a/x y b/x y", "index 1..2", "--- a/x y\t", "+++ b/x y\t"}, "x y"},
		{[]string{"diff --git a/gone b/gone", "deleted file mode 100644", "--- a/gone", "+++ /dev/null"}, "gone"},
		{[]string{"diff --git a/a b/b", "similarity index 100%", "rename from a", "rename to b"}, "b"},
		{[]string{"diff --git a/b.bin b/b.bin", "Binary files a/b.bin and b/b.bin differ"}, "b.bin"},
		{[]string{"diff --git a/a b/a b/a b/a", "old mode 100644", "new mode 100755"}, "a b/a"},
		{[]string{`diff --git "a/t\tq" "b/t\tq"`, "old mode 100644", "new mode 100755"}, "t\tq"},
		{[]string{`diff --git "a/t\"q" "b/t\"q"`, `--- "a/t\"q"`, `+++ "b/t\"q"`}, `t"q`},
		{[]string{"diff --cc f.txt", "index 1,2..3"}, "f.txt"},
	} {
		if got := sectionPath(tc.header); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestCutLines(t *testing.T) {
	if got := cutLines("ab\ncd\nef\n", 7); got != "ab\ncd\n" {
		t.Fatalf("got %q", got)
	}
	if got := cutLines("abcdef\n", 3); got != "" {
		t.Fatalf("got %q", got)
	}
}
