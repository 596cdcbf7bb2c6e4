package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/webcodex/webcodex/internal/runner"
)

// escapers start a sleep that leaves the run's process group or parent
// and append its pid to the file named by $1.
var escapers = map[string]string{
	"setsid":     `setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> "$1"`,
	"doublefork": `(sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> "$1") & wait $!`,
	"nohup":      `nohup sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >> "$1"`,
}

// readyWriter closes ready when the output holds the line "ready".
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func newReady() *readyWriter { return &readyWriter{ready: make(chan struct{})} }

func (w *readyWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if strings.Contains(w.buf.String(), "ready\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(b), nil
}

func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file holds %q", f)
		}
		out = append(out, pid)
	}
	if len(out) == 0 {
		t.Fatal("the run wrote no pid")
	}
	return out
}

func mechanisms(t *testing.T) map[string]*runner.Containment {
	m := map[string]*runner.Containment{"tracking": runner.Tracking()}
	if c := runner.Setup(); c.Mechanism() == runner.MechCgroup {
		m["cgroup"] = c
	} else {
		t.Logf("cgroup containment unavailable here: %s", c.Detail())
	}
	return m
}

// TestContainmentKillsEscapedDescendants starts a setsid, a double-forked
// and a nohup sleep in a run and ends the run by Stop, timeout,
// cancellation and its own exit, under each mechanism: no process of the
// run survives, by the pids it printed or by its marker.
func TestContainmentKillsEscapedDescendants(t *testing.T) {
	endings := []struct {
		name string
		want runner.Ending
	}{{"stop", runner.Stopped}, {"timeout", runner.TimedOut}, {"cancel", runner.Cancelled}, {"exit", runner.Exited}}
	for mname, c := range mechanisms(t) {
		for ename, script := range escapers {
			for _, end := range endings {
				t.Run(mname+"/"+ename+"/"+end.name, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					pidFile := filepath.Join(dir, "pids")
					tail := "; echo ready; exec sleep 1000"
					if end.name == "exit" {
						tail = "; echo ready"
					}
					id := "wc_test_" + strconv.Itoa(os.Getpid()) + "_" + strings.ReplaceAll(t.Name()[len("TestContainmentKillsEscapedDescendants/"):], "/", "_")
					w := newReady()
					s := runner.Spec{Argv: []string{"sh", "-c", script + tail, "sh", pidFile}, Dir: dir, Stdout: w, RunID: id}
					if end.name == "timeout" {
						s.Timeout = 1500 * time.Millisecond
					}
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					l := &runner.Local{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }, Contain: c}
					p, err := l.Start(ctx, s)
					if err != nil {
						t.Fatal(err)
					}
					select {
					case <-w.ready:
					case <-p.Done():
						t.Fatalf("the run ended before it was ready")
					}
					switch end.name {
					case "stop":
						p.Stop()
					case "cancel":
						cancel()
					}
					res, _ := p.Wait(context.Background())
					if res.Ending != end.want || !res.KilledGroup {
						t.Fatalf("ending %s killed %v, want %s killed", res.Ending, res.KilledGroup, end.want)
					}
					pids := pidsIn(t, pidFile)
					if live := runner.Live(pids); len(live) > 0 {
						t.Fatalf("processes %v of the run survived", live)
					}
					if sv := runner.Survivors(id); len(sv) > 0 {
						t.Fatalf("processes %v carrying the run's marker survived", sv)
					}
					if cg := p.Identity().Cgroup; cg != "" {
						if _, err := os.Stat(cg); !os.IsNotExist(err) {
							t.Fatalf("the run's cgroup %s was not removed: %v", cg, err)
						}
					}
				})
			}
		}
	}
}

// TestReaperKeepsExitStatuses runs contained executions that leave orphans
// while the test itself runs uncontained children: every exit status
// arrives, none is taken by the orphan reaper, and the orphans are reaped.
func TestReaperKeepsExitStatuses(t *testing.T) {
	runner.Setup()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			pidFile := filepath.Join(dir, "pids"+strconv.Itoa(i))
			res := run(t, runner.Spec{Argv: []string{"sh", "-c", escapers["doublefork"] + "; exit 7", "sh", pidFile}, Dir: dir})
			if res.ExitCode != 7 || res.Ending != runner.Exited {
				errs <- "contained run: exit " + strconv.Itoa(res.ExitCode) + " " + string(res.Ending)
			}
		}()
		go func() {
			defer wg.Done()
			err := exec.Command("sh", "-c", "exit 5").Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 {
				errs <- "uncontained child: " + errString(err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var pids []int
	for i := range 16 {
		pids = append(pids, pidsIn(t, filepath.Join(dir, "pids"+strconv.Itoa(i)))...)
	}
	// The orphans were killed; the reaper waits for them when SIGCHLD
	// arrives.
	awaitReaped(t, pids)
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// waitZombie blocks until the child pid has exited, without reaping it
// (waitid WNOWAIT).
func waitZombie(t *testing.T, pid int) {
	t.Helper()
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			if err != nil {
				t.Fatalf("waitid %d: %v", pid, err)
			}
			return
		}
	}
}

// TestPeekZombieNamesTheChild: the reaper's waitid reads the pid of an
// exited child from siginfo without reaping it, so os/exec still gets the
// exit status.
func TestPeekZombieNamesTheChild(t *testing.T) {
	runner.Setup()
	cmd := startZombie(t, 3)
	pid, err := runner.PeekZombie()
	if err != nil || pid != cmd.Process.Pid {
		t.Errorf("PeekZombie = %d, %v; want the exited child %d", pid, err, cmd.Process.Pid)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("the child's exit status was lost: %v", err)
	}
}

// TestReaperSeesPastUnwaitedChild: a zombie child nobody has waited for
// yet (a child os/exec will wait for, in the server's process group) is
// what waitid reports first when it is ahead of the orphans; the orphans
// of contained runs are reaped all the same while it stays, and its exit
// status is still there for its own Wait.
func TestReaperSeesPastUnwaitedChild(t *testing.T) {
	runner.Setup()
	blocker := startZombie(t, 4)
	dir := t.TempDir()
	var pids []int
	for i := range 4 {
		pidFile := filepath.Join(dir, "pids"+strconv.Itoa(i))
		res := run(t, runner.Spec{Argv: []string{"sh", "-c", escapers["doublefork"] + "; exit 7", "sh", pidFile}, Dir: dir})
		if res.ExitCode != 7 || res.Ending != runner.Exited {
			t.Fatalf("contained run: exit %d %s", res.ExitCode, res.Ending)
		}
		pids = append(pids, pidsIn(t, pidFile)...)
	}
	awaitReaped(t, pids)
	err := blocker.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("the unwaited child's exit status was taken: %v", err)
	}
}

// startZombie starts a child that exits with status and waits until it
// is a zombie nobody has waited for yet.
func startZombie(t *testing.T, status int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exit "+strconv.Itoa(status))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitZombie(t, cmd.Process.Pid)
	return cmd
}

// awaitReaped waits (bounded) until none of pids is left in /proc, not
// even as a zombie.
func awaitReaped(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := 0
		for _, pid := range pids {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d killed orphans were never reaped", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartsRacingTidyAllStart starts runs from several goroutines while
// another removes the cgroup parent over and over (Tidy, as an app of the
// same process shutting down does): every run must start, whether it
// finds the parent, makes it again, or finds it made by a racing Start.
func TestStartsRacingTidyAllStart(t *testing.T) {
	c := runner.Setup()
	if c.Mechanism() != runner.MechCgroup {
		t.Skipf("cgroup containment unavailable here: %s", c.Detail())
	}
	const starters, perStarter = 4, 25
	stop := make(chan struct{})
	tidied := make(chan struct{})
	go func() {
		defer close(tidied)
		for {
			select {
			case <-stop:
				return
			default:
				c.Tidy()
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, starters*perStarter)
	for g := range starters {
		wg.Go(func() {
			for i := range perStarter {
				id := fmt.Sprintf("wc_tidy_%d_%d_%d", os.Getpid(), g, i)
				l := &runner.Local{Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }, Contain: c}
				p, err := l.Start(context.Background(), runner.Spec{Argv: []string{"true"}, Dir: t.TempDir(), RunID: id})
				if err != nil {
					errs <- fmt.Errorf("start %s: %w", id, err)
					continue
				}
				p.Wait(context.Background())
			}
		})
	}
	wg.Wait()
	close(stop)
	<-tidied
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
