package runner_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/runner"
)

// secrets are the files of a data directory no confined child may read.
var secrets = []string{"admin-token", "evidence.key", "workflow.db", "config.toml"}

// sandboxEnv is a data directory holding the secrets, a project and an
// outside directory, all real directories under the test's temp dir.
type sandboxEnv struct {
	t                      testing.TB
	data, project, outside string
}

func newSandboxEnv(t *testing.T) sandboxEnv {
	t.Helper()
	if runner.LandlockABI() < 1 {
		t.Skip("Landlock is unavailable on this kernel")
	}
	e := sandboxEnv{t: t, data: t.TempDir(), project: t.TempDir(), outside: t.TempDir()}
	for _, f := range secrets {
		if err := os.WriteFile(filepath.Join(e.data, f), []byte("secret "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.project, "main.txt"), []byte("project file"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e sandboxEnv) local(mode runner.Mode, network runner.Network) *runner.Local {
	return closing(e.t, &runner.Local{Policy: &runner.Policy{Mode: mode, Deny: []string{e.data}, Network: network}})
}

// closing closes l's policy (removing the projects' temporary
// directories) when the test ends.
func closing(t testing.TB, l *runner.Local) *runner.Local {
	t.Cleanup(l.Policy.Close)
	return l
}

func (e sandboxEnv) sh(t *testing.T, l *runner.Local, mode runner.Mode, script string) runner.Result {
	t.Helper()
	res, err := runner.Run(context.Background(), l, runner.Spec{
		Argv: []string{"bash", "-c", script}, Dir: e.project,
		Sandbox: runner.Sandbox{Mode: mode, Project: e.project},
	})
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return res
}

func TestSandboxDeniesTheDataDirectory(t *testing.T) {
	e := newSandboxEnv(t)
	for _, mode := range []runner.Mode{runner.WorkspaceWrite, runner.ReadOnly} {
		l := e.local(runner.WorkspaceWrite, "")
		for _, f := range secrets {
			res := e.sh(t, l, mode, "cat "+filepath.Join(e.data, f))
			if res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "Permission denied") || strings.Contains(res.Stdout.Text, "secret") {
				t.Errorf("%s: reading %s: exit %d stdout %q stderr %q", mode, f, res.ExitCode, res.Stdout.Text, res.Stderr.Text)
			}
			if res.Sandbox != mode {
				t.Errorf("%s: mode in force %q", mode, res.Sandbox)
			}
		}
		res := e.sh(t, l, mode, "ls "+e.data+"; echo x > "+filepath.Join(e.data, "planted"))
		if res.ExitCode == 0 {
			t.Errorf("%s: listing and writing the data directory succeeded: %+v", mode, res)
		}
		if _, err := os.Stat(filepath.Join(e.data, "planted")); err == nil {
			t.Errorf("%s: a file was planted in the data directory", mode)
		}
		// The rest of the system and the project stay readable.
		res = e.sh(t, l, mode, "cat main.txt /etc/hostname >/dev/null && ls / >/dev/null 2>&1; cat main.txt")
		if res.ExitCode != 0 || res.Stdout.Text != "project file" {
			t.Errorf("%s: reading the project: %+v", mode, res)
		}
		// A directory created beside the data directory after the rules
		// were compiled is readable: the change is noticed.
		late, err := os.MkdirTemp(filepath.Dir(e.data), "late-")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(late, "f"), []byte("late"), 0o644)
		res = e.sh(t, l, mode, "cat "+filepath.Join(late, "f"))
		if res.ExitCode != 0 || res.Stdout.Text != "late" {
			t.Errorf("%s: reading a directory created later: %+v", mode, res)
		}
	}
	// Off, in the policy or in the request, confines nothing and says so.
	for _, l := range []*runner.Local{e.local(runner.Off, ""), e.local(runner.WorkspaceWrite, "")} {
		res := e.sh(t, l, runner.Off, "cat "+filepath.Join(e.data, "admin-token"))
		if res.ExitCode != 0 || res.Stdout.Text != "secret admin-token" || res.Sandbox != runner.Off {
			t.Errorf("off: %+v", res)
		}
	}
	// Without a policy nothing is confined either, and the result says Off.
	res := e.sh(t, &runner.Local{}, "", "cat "+filepath.Join(e.data, "admin-token"))
	if res.ExitCode != 0 || res.Sandbox != runner.Off {
		t.Errorf("no policy: %+v", res)
	}
}

func TestSandboxWrites(t *testing.T) {
	e := newSandboxEnv(t)
	extra := t.TempDir()
	l := &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{e.data}, ExtraWrite: []string{extra}}}

	res := e.sh(t, l, runner.WorkspaceWrite, "echo in > inside.txt && mkdir d && mv inside.txt d/ && echo t > \"$TMPDIR/t\" && echo x > "+filepath.Join(extra, "x")+" && echo >/dev/null && rm d/inside.txt && rmdir d")
	if res.ExitCode != 0 {
		t.Fatalf("workspace-write: writing the project, TMPDIR and an extra path: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(extra, "x")); err != nil {
		t.Fatalf("extra path not written: %v", err)
	}
	outside := filepath.Join(e.outside, "escaped")
	res = e.sh(t, l, runner.WorkspaceWrite, "echo x > "+outside)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "Permission denied") {
		t.Fatalf("workspace-write: writing outside the project: %+v", res)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("workspace-write: a file was created outside the project")
	}
	// The project's temporary directory is shared by its runs, lies
	// outside the data directory and is removed when the policy closes.
	res = e.sh(t, l, runner.WorkspaceWrite, "echo $TMPDIR; cat $TMPDIR/t")
	tmp, _, _ := strings.Cut(res.Stdout.Text, "\n")
	if !strings.HasPrefix(tmp, os.TempDir()) || strings.HasPrefix(tmp, e.data) || !strings.HasSuffix(res.Stdout.Text, "t\n") {
		t.Fatalf("TMPDIR: %+v", res)
	}
	defer func() {
		l.Policy.Close()
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("the project's TMPDIR %s survived the policy: %v", tmp, err)
		}
	}()

	for _, target := range []string{filepath.Join(e.project, "new.txt"), filepath.Join(e.project, "main.txt"), outside, filepath.Join(os.TempDir(), "webcodex-ro-probe")} {
		res = e.sh(t, l, runner.ReadOnly, "echo x > "+target)
		if res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "Permission denied") || res.Sandbox != runner.ReadOnly {
			t.Errorf("read-only: writing %s: %+v", target, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.project, "main.txt")); string(b) != "project file" {
		t.Errorf("read-only: the project file changed: %q", b)
	}
	for _, p := range []string{filepath.Join(e.project, "new.txt"), filepath.Join(os.TempDir(), "webcodex-ro-probe")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("read-only: %s was created", p)
		}
	}
	res = e.sh(t, l, runner.ReadOnly, "echo x >/dev/null && cat main.txt")
	if res.ExitCode != 0 {
		t.Errorf("read-only: /dev/null and reading: %+v", res)
	}
	// A path the request names in Write is writable under read-only (a
	// private git index directory).
	idx := t.TempDir()
	res2, err := runner.Run(context.Background(), l, runner.Spec{
		Argv: []string{"sh", "-c", "echo i > index && mv index index2"}, Dir: idx,
		Sandbox: runner.Sandbox{Mode: runner.ReadOnly, Project: e.project, Write: []string{idx}},
	})
	if err != nil || res2.ExitCode != 0 {
		t.Errorf("read-only with a write path: %+v %v", res2, err)
	}
	// An explicit write path inside the data directory (a job's own
	// directory) is writable; the rest of the data directory is not.
	jobDir := filepath.Join(e.data, "jobs", "wc_job_1")
	if err := os.MkdirAll(jobDir, 0o700); err != nil {
		t.Fatal(err)
	}
	res2, err = runner.Run(context.Background(), l, runner.Spec{
		Argv: []string{"sh", "-c", "echo r > " + filepath.Join(jobDir, "report.xml") + " && cat " + filepath.Join(e.data, "evidence.key")}, Dir: e.project,
		Sandbox: runner.Sandbox{Project: e.project, Write: []string{jobDir}},
	})
	if b, _ := os.ReadFile(filepath.Join(jobDir, "report.xml")); err != nil || string(b) != "r\n" || res2.ExitCode == 0 || strings.Contains(res2.Stdout.Text, "secret") {
		t.Errorf("a job directory in the data directory: %+v %v %q", res2, err, b)
	}
}

func TestSandboxNetworkOff(t *testing.T) {
	e := newSandboxEnv(t)
	if runner.LandlockABI() < 4 {
		t.Skip("Landlock ABI < 4 has no network rules")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted sync.WaitGroup
	accepted.Add(1)
	go func() {
		defer accepted.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	res := e.sh(t, e.local(runner.WorkspaceWrite, runner.NetworkOff), runner.WorkspaceWrite, connect)
	if res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "connected") || !strings.Contains(res.Stderr.Text, "Permission denied") {
		t.Errorf("network off: connect: %+v", res)
	}
	res = e.sh(t, e.local(runner.WorkspaceWrite, runner.NetworkOn), runner.WorkspaceWrite, connect)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout.Text, "connected") {
		t.Errorf("network on: connect: %+v", res)
	}
	if st := (&runner.Policy{Mode: runner.WorkspaceWrite, Network: runner.NetworkOff}).Status(); st.Network != runner.NetworkOff || st.ABI < 4 {
		t.Errorf("status %+v", st)
	}
	ln.Close()
	accepted.Wait()
}

// TestServerStaysUnconfined starts confined children from many goroutines
// and then checks that the test process itself (every thread of it) can
// still read the data directory and write anywhere, and that its children
// started without a policy can too.
func TestServerStaysUnconfined(t *testing.T) {
	e := newSandboxEnv(t)
	l := e.local(runner.ReadOnly, runner.NetworkOff)
	var mu sync.Mutex
	confined := map[string]bool{}
	restore := runner.OnConfinedThread(func(tid int) {
		mu.Lock()
		confined[strconv.Itoa(tid)] = true
		mu.Unlock()
	})
	defer restore()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runner.Run(context.Background(), l, runner.Spec{Argv: []string{"true"}, Dir: e.project, Sandbox: runner.Sandbox{Project: e.project}})
			if err != nil || res.ExitCode != 0 || res.Sandbox != runner.ReadOnly {
				t.Errorf("confined true: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if b, err := os.ReadFile(filepath.Join(e.data, "admin-token")); err != nil || string(b) != "secret admin-token" {
		t.Fatalf("the server can no longer read its data directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(e.outside, "server-write"), []byte("x"), 0o600); err != nil {
		t.Fatalf("the server can no longer write outside the project: %v", err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		// A confined start thread may still be on its way out; it
		// never runs anything else. Any other confined thread would be
		// the server's own.
		mu.Lock()
		throwaway := confined[task.Name()]
		mu.Unlock()
		if main := task.Name() == strconv.Itoa(os.Getpid()); main {
			throwaway = false // the runtime never ends the main thread
		}
		if strings.Contains(string(b), "NoNewPrivs:\t1") && !throwaway {
			t.Errorf("thread %s of the server has no_new_privs set", task.Name())
		}
	}
	var unconfined sync.WaitGroup
	for range 16 {
		unconfined.Add(1)
		go func() {
			defer unconfined.Done()
			res, err := runner.Run(context.Background(), &runner.Local{}, runner.Spec{
				Argv: []string{"sh", "-c", "cat " + filepath.Join(e.data, "admin-token") + " && echo y > " + filepath.Join(e.outside, "child-write")},
				Dir:  e.project,
			})
			if err != nil || res.ExitCode != 0 || res.Stdout.Text != "secret admin-token" {
				t.Errorf("an unconfined child after confined ones: %+v %v", res, err)
			}
		}()
	}
	unconfined.Wait()
}

func TestCarveKeepsSymlinksClearOfTheDataDirectory(t *testing.T) {
	e := newSandboxEnv(t)
	link := filepath.Join(e.outside, "to-data")
	if err := os.Symlink(e.data, link); err != nil {
		t.Fatal(err)
	}
	// The data directory lies inside the project: the project is
	// writable, the data directory still is not.
	inner := filepath.Join(e.project, "data")
	if err := os.Mkdir(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inner, "evidence.key"), []byte("inner key"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := closing(t, &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{e.data, inner}}})
	res := e.sh(t, l, runner.WorkspaceWrite, "cat "+filepath.Join(link, "admin-token"))
	if res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "secret") {
		t.Errorf("read through a symlink to the data directory: %+v", res)
	}
	res = e.sh(t, l, runner.WorkspaceWrite, "cat data/evidence.key")
	if res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "inner key") {
		t.Errorf("read a data directory inside the project: %+v", res)
	}
	// Around it the project stays writable, except for the directories
	// on the way to the data directory themselves (Landlock grants whole
	// hierarchies): nothing new can be created in the root.
	if err := os.Mkdir(filepath.Join(e.project, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	res = e.sh(t, l, runner.WorkspaceWrite, "echo ok > main.txt && echo ok > src/ok.txt && cat main.txt src/ok.txt")
	if res.ExitCode != 0 || res.Stdout.Text != "ok\nok\n" {
		t.Errorf("writing the project around the data directory: %+v", res)
	}
	res = e.sh(t, l, runner.WorkspaceWrite, "echo no > new.txt")
	if res.ExitCode == 0 {
		t.Errorf("created a file in a directory on the way to the data directory: %+v", res)
	}
}

// TestSequentialStartsShareOneConfinedThread: starts one after another
// under one compiled ruleset are made from one confined thread, and every
// child is confined (none reads the data directory or writes outside the
// project); a ruleset compiled anew confines a thread of its own (a
// thread's Landlock domain can only be narrowed, never swapped for
// another).
//
// A policy compiles a ruleset when it first needs one and again whenever
// a directory it was carved from has changed. The data directory lies
// under the shared temporary directory, which any process of the machine
// (another test binary, the go command) may add an entry to at any moment,
// so the test cannot know how many rulesets five starts take: it counts
// them and wants exactly one thread per ruleset, not one per policy.
func TestSequentialStartsShareOneConfinedThread(t *testing.T) {
	e := newSandboxEnv(t)
	var mu sync.Mutex
	threads, rulesets := 0, 0
	defer runner.OnConfinedThread(func(int) {
		mu.Lock()
		threads++
		mu.Unlock()
	})()
	defer runner.OnCompiled(func() {
		mu.Lock()
		rulesets++
		mu.Unlock()
	})()
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return threads, rulesets
	}
	const starts = 5
	confinedRuns := func(l *runner.Local) {
		t.Helper()
		for i := range starts {
			res := e.sh(t, l, runner.WorkspaceWrite, "cat "+filepath.Join(e.data, "admin-token")+" || echo x > "+filepath.Join(e.outside, fmt.Sprint("escaped", i)))
			if res.ExitCode == 0 || res.Sandbox != runner.WorkspaceWrite {
				t.Fatalf("run %d escaped its confinement: %+v", i, res)
			}
		}
	}
	l := &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{e.data}}}
	confinedRuns(l)
	l.Policy.Close()
	first, firstSets := counts()
	if firstSets < 1 || first != firstSets {
		t.Fatalf("%d sequential starts confined %d threads for %d compiled rulesets, want one per ruleset", starts, first, firstSets)
	}
	if firstSets == starts {
		t.Logf("every start found the ruleset's directories changed: no start reused a thread")
	}
	confinedRuns(closing(t, &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{e.data}}}))
	got, sets := counts()
	if sets == firstSets {
		t.Fatalf("a new policy compiled no ruleset of its own")
	}
	if got != sets {
		t.Fatalf("after a new policy: %d threads for %d compiled rulesets, want one per ruleset", got, sets)
	}
	if entries, _ := os.ReadDir(e.outside); len(entries) != 0 {
		t.Fatalf("files written outside the project: %v", entries)
	}
}

// BenchmarkStartTrue runs `true` unconfined and confined (workspace-write)
// alternately, so both halves see the same machine load.
func BenchmarkStartTrue(b *testing.B) {
	data, project := b.TempDir(), b.TempDir()
	for _, c := range []struct {
		name string
		l    *runner.Local
	}{
		{"unsandboxed", &runner.Local{}},
		{"sandboxed", closing(b, &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{data}}})},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := runner.Run(context.Background(), c.l, runner.Spec{Argv: []string{"true"}, Dir: project, Sandbox: runner.Sandbox{Project: project}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}

// TestSweepTempRemovesOnlyTheGone: the start-up sweep removes the project
// temporary directories of servers that are gone, and keeps a live
// server's and anything not named like one.
func TestSweepTempRemovesOnlyTheGone(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	names := map[string]bool{ // name: removed by the sweep
		fmt.Sprintf("webcodex-run-%d-1", gone.Process.Pid): true,
		fmt.Sprintf("webcodex-run-%d-2", live.Process.Pid): false,
		fmt.Sprintf("webcodex-run-%d-3", os.Getpid()):      false,
		"webcodex-run-123abc":                              false,
		"webcodex-run-1":                                   false,
		"other-dir":                                        false,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if got := runner.SweepTemp(dir); got != 1 {
		t.Fatalf("removed %d directories, want 1", got)
	}
	for n, removed := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if removed != os.IsNotExist(err) {
			t.Errorf("%s: removed=%v, want %v", n, os.IsNotExist(err), removed)
		}
	}
}

func TestSandboxAllowsAPathInsideTheDataDirectory(t *testing.T) {
	e := newSandboxEnv(t)
	wt := filepath.Join(e.data, "worktrees", "p-wt")
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, "main.txt"), []byte("worktree file"), 0o644)
	l := closing(t, &runner.Local{Policy: &runner.Policy{Mode: runner.WorkspaceWrite, Deny: []string{e.data}, Allow: []string{filepath.Join(e.data, "worktrees")}}})
	run := func(mode runner.Mode, script string) runner.Result {
		res, err := runner.Run(context.Background(), l, runner.Spec{
			Argv: []string{"bash", "-c", script}, Dir: wt,
			Sandbox: runner.Sandbox{Mode: mode, Project: wt},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(runner.WorkspaceWrite, "cat main.txt && echo new > new.txt"); res.ExitCode != 0 || res.Stdout.Text != "worktree file" {
		t.Fatalf("the allowed project is not usable: %+v", res)
	}
	if res := run(runner.ReadOnly, "cat main.txt; echo x > denied.txt"); res.Stdout.Text != "worktree file" || res.ExitCode == 0 {
		t.Fatalf("read-only over the allowed project: %+v", res)
	}
	for _, f := range secrets {
		if res := run(runner.WorkspaceWrite, "cat "+filepath.Join(e.data, f)); res.ExitCode == 0 || strings.Contains(res.Stdout.Text, "secret") {
			t.Errorf("reading %s beside the allowed path: %+v", f, res)
		}
	}
	// A file created in the data directory after the rules were compiled
	// is not reachable either.
	os.WriteFile(filepath.Join(e.data, "late.db"), []byte("secret late"), 0o600)
	if res := run(runner.WorkspaceWrite, "cat "+filepath.Join(e.data, "late.db")); res.ExitCode == 0 {
		t.Errorf("a file created later in the data directory was read: %+v", res)
	}
}

// TestSandboxProjectWriteFollowsTheProject: a ProjectWrite path is
// writable exactly when the project is (workspace-write), never under
// read-only, and never inside a denied path.
func TestSandboxProjectWriteFollowsTheProject(t *testing.T) {
	e := newSandboxEnv(t)
	l := e.local(runner.WorkspaceWrite, runner.NetworkOn)
	extra := t.TempDir()
	denied := filepath.Join(e.data, "objects")
	if err := os.Mkdir(denied, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(mode runner.Mode, target string) runner.Result {
		t.Helper()
		res, err := runner.Run(context.Background(), l, runner.Spec{
			Argv: []string{"sh", "-c", "echo x > " + target}, Dir: e.project,
			Sandbox: runner.Sandbox{Mode: mode, Project: e.project, ProjectWrite: []string{extra, denied}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(runner.WorkspaceWrite, filepath.Join(extra, "w")); res.ExitCode != 0 {
		t.Fatalf("workspace-write: writing a ProjectWrite path: %+v", res)
	}
	if res := run(runner.ReadOnly, filepath.Join(extra, "r")); res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "Permission denied") {
		t.Fatalf("read-only: writing a ProjectWrite path: %+v", res)
	}
	if res := run(runner.WorkspaceWrite, filepath.Join(denied, "d")); res.ExitCode == 0 {
		t.Fatalf("workspace-write: a ProjectWrite path inside the data directory was written: %+v", res)
	}
	for _, p := range []string{filepath.Join(extra, "r"), filepath.Join(denied, "d")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestSandboxExactGrantsFollowNoLink: a ProjectWrite path, or a Write
// path of an Exact request, reached through a symbolic link (a child
// swapped a parent for a link to elsewhere) is not granted, so the
// link's target stays unwritable; without Exact a Write path's link is
// followed as before.
func TestSandboxExactGrantsFollowNoLink(t *testing.T) {
	e := newSandboxEnv(t)
	l := e.local(runner.WorkspaceWrite, runner.NetworkOn)
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	run := func(name string, sb runner.Sandbox) runner.Result {
		t.Helper()
		sb.Project = e.project
		res, err := runner.Run(context.Background(), l, runner.Spec{
			Argv: []string{"sh", "-c", "echo x > " + filepath.Join(link, name)}, Dir: e.project, Sandbox: sb,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("p", runner.Sandbox{Mode: runner.WorkspaceWrite, ProjectWrite: []string{link}}); res.ExitCode == 0 {
		t.Errorf("a ProjectWrite path through a link was granted: %+v", res)
	}
	if res := run("e", runner.Sandbox{Mode: runner.ReadOnly, Write: []string{link}, Exact: true}); res.ExitCode == 0 {
		t.Errorf("an exact Write path through a link was granted: %+v", res)
	}
	for _, name := range []string{"p", "e"} {
		if _, err := os.Lstat(filepath.Join(target, name)); err == nil {
			t.Errorf("%s was written through the link", name)
		}
	}
	if res := run("w", runner.Sandbox{Mode: runner.ReadOnly, Write: []string{link}}); res.ExitCode != 0 {
		t.Errorf("a Write path through a link without Exact: %+v", res)
	}
	// The target itself, named without a link, is granted exactly.
	res, err := runner.Run(context.Background(), l, runner.Spec{
		Argv: []string{"sh", "-c", "echo x > " + filepath.Join(target, "direct")}, Dir: e.project,
		Sandbox: runner.Sandbox{Mode: runner.WorkspaceWrite, Project: e.project, ProjectWrite: []string{target}},
	})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("a ProjectWrite path without a link: %+v %v", res, err)
	}
}
