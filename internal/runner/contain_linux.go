package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Bounds of a kill.
const (
	// killRounds bounds how often Kill scans for survivors and kills
	// them; each round kills everything found, so only a process forking
	// faster than the rounds needs more than two.
	killRounds = 64
	// killPause bounds the pause between two rounds (it starts at a
	// millisecond and doubles), which lets SIGKILL take effect.
	killPause = 20 * time.Millisecond
)

// A Containment starts runs as contained units and kills every process of
// a unit when it ends. Setup returns the server's; one exists per process.
type Containment struct {
	mech Mechanism
	// parent is the cgroup directory the server created (MechCgroup).
	parent string
	// detail says where the cgroups live, or why none is used.
	detail string
}

var (
	setupOnce sync.Once
	procWide  *Containment
	// selfStart is the server's own start time (clock ticks since boot).
	selfStart uint64
	// selfGroup is the server's process group: os/exec waits for the
	// children in it.
	selfGroup int
	// subreaping is set once PR_SET_CHILD_SUBREAPER succeeded: every
	// descendant of a run stays a descendant of the server.
	subreaping bool

	// startMu orders process starts against the reaper: a start holds it
	// shared from fork until its leader is registered, the reaper holds
	// it exclusively, so it never mistakes a just-started leader for an
	// orphan.
	startMu sync.RWMutex
	// leaders are the pids of started leaders that os/exec has not
	// waited for yet; the reaper never waits for them.
	leadersMu sync.Mutex
	leaders   = map[int]struct{}{}

	// parentMu orders Tidy's removal of the cgroup parent against the
	// creation of run leaves: a Start holds it shared from making the
	// parent (when it is gone) until its leaf exists, Tidy exclusively, so
	// Tidy never removes the parent between a Start's two mkdirs (a
	// parent with a leaf in it cannot be removed at all).
	parentMu sync.RWMutex
)

// Setup makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so
// that the orphaned descendants of runs reparent to it instead of init,
// starts the reaper of those orphans, and decides the mechanism: MechCgroup
// when a cgroup v2 directory can be created below the server's own cgroup,
// cgroup.kill exists there and a process can be started into it; otherwise
// MechSubreaper. It runs once per process; later calls return the same
// Containment.
//
// The reaper waits (wait4 on that pid only) for a zombie child of the
// server that is neither a registered leader nor in the server's own
// process group. It learns of each exited child from waitid(WNOWAIT), a
// few system calls per child, and lists the server's children only while
// a zombie it must leave hides others (see reaper). os/exec waits for its
// own children by pid; every child started through Start is registered
// until Release, and every other child the server starts (git, ...) stays
// in the server's process group, so the reaper never takes an exit status
// os/exec needs. A process
// started outside Start with its own process group must not be started
// after Setup.
func Setup() *Containment {
	setupOnce.Do(func() {
		c := &Containment{mech: MechSubreaper}
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			c.detail = "PR_SET_CHILD_SUBREAPER failed: " + err.Error()
		} else {
			subreaping = true
		}
		selfStart, _ = startTicks(os.Getpid())
		selfGroup = unix.Getpgrp()
		go reaper()
		if dir, err := makeCgroupParent(); err != nil {
			if c.detail == "" {
				c.detail = "no cgroup v2: " + err.Error()
			}
		} else {
			c.mech, c.parent, c.detail = MechCgroup, dir, dir
		}
		procWide = c
	})
	return procWide
}

// Tracking returns a Containment that uses descendant tracking
// (MechSubreaper) even where cgroups are available (tests, and an operator
// who wants no cgroups). It calls Setup.
func Tracking() *Containment {
	Setup()
	return &Containment{mech: MechSubreaper, detail: "cgroups not used"}
}

// Mechanism reports the mechanism in force.
func (c *Containment) Mechanism() Mechanism { return c.mech }

// Detail says where the run cgroups live, or why none is used.
func (c *Containment) Detail() string { return c.detail }

// cgroup2Root finds the cgroup v2 mount and this process's cgroup in it.
func cgroup2Dir() (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mount := ""
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 {
			mount = f[4]
			break
		}
	}
	if mount == "" {
		return "", errors.New("no cgroup2 mount")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, p), nil
		}
	}
	return "", errors.New("this process is in no cgroup v2")
}

// makeCgroupParent creates <own cgroup>/webcodex-<pid> and proves that a
// process can be started into a leaf below it and killed with cgroup.kill.
// It first removes the empty directories of servers that are gone.
func makeCgroupParent() (string, error) {
	own, err := cgroup2Dir()
	if err != nil {
		return "", err
	}
	sweepStale(own)
	dir := filepath.Join(own, "webcodex-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	probe := &Containment{mech: MechCgroup, parent: dir}
	if err := probe.check(); err != nil {
		os.Remove(dir)
		return "", err
	}
	return dir, nil
}

// sweepStale removes the webcodex-<pid> directories below own whose
// server is gone, with their empty leaves. A leaf that still holds
// processes stays: the next start on its data directory kills them
// (KillIdentity), and until then the directory stays too.
func sweepStale(own string) {
	dirs, _ := filepath.Glob(filepath.Join(own, "webcodex-*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "webcodex-"))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err == nil || errors.Is(err, unix.EPERM) {
			continue // its server may still run
		}
		leaves, _ := filepath.Glob(filepath.Join(dir, "run-*"))
		for _, leaf := range leaves {
			if !cgroupPopulated(leaf) {
				os.Remove(leaf)
			}
		}
		os.Remove(dir)
	}
}

// check starts `true` in a leaf of c and ends it.
func (c *Containment) check() error {
	path, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("no true to probe with: %v", err)
	}
	cmd := &exec.Cmd{Path: path, Args: []string{"true"}, Env: []string{}}
	u, err := c.Start(cmd, "probe_"+randomHex(), nil)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(u.leaf, "cgroup.kill")); err != nil {
		u.Kill()
		cmd.Wait()
		u.Release()
		return errors.New("cgroup.kill is not available")
	}
	werr := cmd.Wait()
	u.Release()
	u.Kill()
	if werr != nil {
		return werr
	}
	if u.leaf != "" {
		return errors.New("the probe cgroup could not be removed")
	}
	return nil
}

// A Unit is one contained run: its leader and every descendant.
type Unit struct {
	c     *Containment
	id    string
	pid   int
	start uint64
	// cgroup is the run's cgroup leaf ("" when none); leaf is the same
	// until the leaf is removed (guarded by mu).
	cgroup string
	leaf   string

	mu sync.Mutex
	// known are descendants seen while the run went on (pid → start).
	known map[int]uint64
	// reaped is set once os/exec waited for the leader: its pid may be
	// reused from then on.
	reaped bool
	// gone is set when the leader is reaped and nothing of the unit was
	// left at a kill: later kills do nothing.
	gone bool
}

// Start starts cmd (which must not be started, and whose Env must be set)
// with start (nil: cmd.Start; the sandbox passes its confined start) as the
// unit named id: its environment gets MarkerEnv=id, and under
// MechCgroup it is created inside a fresh cgroup leaf (CLONE_INTO_CGROUP,
// so even its first fork is contained). The caller waits for cmd as usual
// and calls Release after the wait returned.
func (c *Containment) Start(cmd *exec.Cmd, id string, start func(*exec.Cmd) error) (*Unit, error) {
	start, err := prepareUnit(cmd, id, start)
	if err != nil {
		return nil, err
	}
	u := &Unit{c: c, id: id, known: map[int]uint64{}}
	if c.mech == MechCgroup {
		leaf := filepath.Join(c.parent, "run-"+id)
		parentMu.RLock()
		err := os.Mkdir(leaf, 0o755)
		if errors.Is(err, os.ErrNotExist) {
			// Tidy removed the parent; another Start may be making it
			// again at the same time.
			if perr := os.Mkdir(c.parent, 0o755); perr == nil || errors.Is(perr, os.ErrExist) {
				err = os.Mkdir(leaf, 0o755)
			}
		}
		parentMu.RUnlock()
		if err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		fd, err := unix.Open(leaf, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Remove(leaf)
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		defer unix.Close(fd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		u.leaf, u.cgroup = leaf, leaf
	}
	startMu.RLock()
	err = start(cmd)
	if err == nil {
		u.pid = cmd.Process.Pid
		leadersMu.Lock()
		leaders[u.pid] = struct{}{}
		leadersMu.Unlock()
	}
	startMu.RUnlock()
	if err != nil {
		if u.leaf != "" {
			os.Remove(u.leaf)
		}
		return nil, err
	}
	// The leader is registered, so not reaped: its stat stays readable.
	u.start, _ = startTicks(u.pid)
	return u, nil
}

// Release tells the unit that os/exec has waited for its leader. It does
// not kill anything; call Kill for that.
func (u *Unit) Release() {
	u.mu.Lock()
	u.reaped = true
	u.mu.Unlock()
	leadersMu.Lock()
	delete(leaders, u.pid)
	leadersMu.Unlock()
	u.removeLeaf()
}

// Identity returns what identifies the unit's processes after a crash.
func (u *Unit) Identity() Identity {
	return Identity{Marker: u.id, PID: u.pid, StartTicks: u.start, Cgroup: u.cgroup}
}

// PID is the leader's pid (and process group id).
func (u *Unit) PID() int { return u.pid }

// Track returns how many live processes the unit has (the process limit's
// count): under MechCgroup those in its leaf; under MechSubreaper it scans
// /proc once and remembers the unit's descendants, so that an orphan that
// later leaves the process group and the ppid chain is still found.
func (u *Unit) Track() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return 0
	}
	if u.cgroup != "" {
		return countLines(filepath.Join(u.cgroup, "cgroup.procs"))
	}
	m := u.members(scanProcs(), false, 0)
	for _, p := range m {
		u.known[p.pid] = p.start
	}
	return len(m)
}

// Kill SIGKILLs every process of the unit, repeating until none is left
// (at most killRounds rounds): under MechCgroup through cgroup.kill, under
// MechSubreaper every process descendant tracking finds. It
// returns how many processes it killed (the leader included while it was
// alive). Once the leader is reaped and nothing is left, the cgroup leaf
// is removed and later calls do nothing.
func (u *Unit) Kill() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gone {
		return 0
	}
	killed := map[int]bool{}
	pause := time.Millisecond
	// Tracking stops only after two scans in a row find nothing: a process
	// caught in execve can briefly show no environment (so no marker) to
	// one scan.
	empty := 0
	for range killRounds {
		if u.leaf != "" {
			for _, pid := range readPids(filepath.Join(u.leaf, "cgroup.procs")) {
				killed[pid] = true
			}
			os.WriteFile(filepath.Join(u.leaf, "cgroup.kill"), []byte("1"), 0)
		}
		var m []proc
		if u.cgroup == "" {
			m = u.members(scanProcs(), true, 0)
		}
		populated := u.leaf != "" && cgroupPopulated(u.leaf)
		if len(m) == 0 && !populated {
			if empty++; u.cgroup != "" || empty == 2 {
				break
			}
			time.Sleep(pause)
			continue
		}
		empty = 0
		for _, p := range m {
			unix.Kill(p.pid, unix.SIGKILL)
			killed[p.pid] = true
		}
		time.Sleep(pause)
		pause = min(2*pause, killPause)
	}
	if u.reaped {
		u.gone = true
		u.known = nil
	}
	u.removeLeafLocked()
	return len(killed)
}

func (u *Unit) removeLeaf() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.removeLeafLocked()
}

func (u *Unit) removeLeafLocked() {
	if u.leaf != "" && u.reaped && os.Remove(u.leaf) == nil {
		u.leaf = ""
	}
}

// proc is one line of /proc/<pid>/stat.
type proc struct {
	pid, ppid, pgid int
	start           uint64
	zombie          bool
}

// members returns the live processes of u among ps: its process group
// (started no earlier than the leader, and before notAfter when set: a
// group id can be reused once the group is empty), its leader while
// unreaped (or, with its start time, after a crash), the descendants
// recorded by Track, those started no earlier than the leader that carry
// the marker (withEnv; a marker is a random id, never reused) and every
// descendant of any of them. A unit this server started (u.c set) while
// it is a child subreaper has no process outside the server's own
// descendants (orphans reparent to the server), so only those are
// considered: a process elsewhere on the machine whose pid reuses the
// unit's group id, or that carries the same marker, is never taken.
func (u *Unit) members(ps []proc, withEnv bool, notAfter uint64) []proc {
	self := os.Getpid()
	in := map[int]bool{}
	children := map[int][]int{}
	byPid := map[int]proc{}
	for _, p := range ps {
		if p.zombie || p.pid == self {
			continue
		}
		byPid[p.pid] = p
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var ours map[int]bool
	if u.c != nil && subreaping {
		ours = descendants(children, self)
	}
	var queue []int
	for _, p := range ps {
		if _, live := byPid[p.pid]; !live || (ours != nil && !ours[p.pid]) {
			continue
		}
		later := p.start >= u.start
		root := (p.pgid == u.pid && later && (notAfter == 0 || p.start < notAfter)) ||
			(!u.reaped && p.pid == u.pid && p.start == u.start) ||
			(u.known[p.pid] == p.start && p.start != 0) ||
			(withEnv && later && hasMarker(p.pid, u.id))
		if root {
			in[p.pid] = true
			queue = append(queue, p.pid)
		}
	}
	addDescendants(children, in, queue)
	out := make([]proc, 0, len(in))
	for pid := range in {
		out = append(out, byPid[pid])
	}
	return out
}

// descendants returns the pids below root in the tree children (pid →
// child pids).
func descendants(children map[int][]int, root int) map[int]bool {
	out := map[int]bool{}
	addDescendants(children, out, []int{root})
	return out
}

// addDescendants adds to in every pid below the pids of queue in the
// tree children (pid → child pids), breadth first.
func addDescendants(children map[int][]int, in map[int]bool, queue []int) {
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
}

// KillIdentity kills what survives of a run a previous server started (a
// job found unfinished at start): its cgroup leaf, when one was recorded
// and still exists, and every process descendant tracking finds for the
// identity (the leader if its pid still has its start time, the marker,
// and the process group counting only processes started before this
// server). It returns how many processes it killed.
func KillIdentity(id Identity) int {
	Setup()
	if !runIDRE.MatchString(id.Marker) || id.PID <= 0 {
		return 0
	}
	u := &Unit{id: id.Marker, pid: id.PID, start: id.StartTicks, known: map[int]uint64{}}
	if id.Cgroup != "" && strings.HasPrefix(filepath.Base(id.Cgroup), "run-") {
		if _, err := os.Stat(filepath.Join(id.Cgroup, "cgroup.kill")); err == nil {
			u.leaf = id.Cgroup
		}
	}
	killed := map[int]bool{}
	pause := time.Millisecond
	// Tracking stops only after two scans in a row find nothing: a process
	// caught in execve can briefly show no environment (so no marker) to
	// one scan.
	empty := 0
	for range killRounds {
		if u.leaf != "" {
			for _, pid := range readPids(filepath.Join(u.leaf, "cgroup.procs")) {
				killed[pid] = true
			}
			os.WriteFile(filepath.Join(u.leaf, "cgroup.kill"), []byte("1"), 0)
		}
		m := u.members(scanProcs(), true, selfStart)
		if len(m) == 0 && (u.leaf == "" || !cgroupPopulated(u.leaf)) {
			if empty++; empty == 2 {
				break
			}
			time.Sleep(pause)
			continue
		}
		empty = 0
		for _, p := range m {
			unix.Kill(p.pid, unix.SIGKILL)
			killed[p.pid] = true
		}
		time.Sleep(pause)
		pause = min(2*pause, killPause)
	}
	if u.leaf != "" && os.Remove(u.leaf) == nil {
		parent := filepath.Dir(u.leaf)
		if strings.HasPrefix(filepath.Base(parent), "webcodex-") && parent != Setup().parent {
			os.Remove(parent) // fails while another run of that server remains
		}
	}
	return len(killed)
}

// hasMarker reports whether /proc/<pid>/environ holds MarkerEnv=id.
func hasMarker(pid int, id string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(MarkerEnv + "=" + id + "\x00")
	return bytes.HasPrefix(b, want) || bytes.Contains(b, append([]byte{0}, want...))
}

// scanProcs reads the stat line of every process.
func scanProcs() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]proc, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if p, ok := readStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, false
	}
	// After the command: state ppid pgrp session ... starttime (20th).
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return proc{pid: pid, ppid: ppid, pgid: pgid, start: start, zombie: f[0] == "Z" || f[0] == "X"}, true
}

// startTicks is a process's start time in clock ticks since boot.
func startTicks(pid int) (uint64, bool) {
	p, ok := readStat(pid)
	return p.start, ok
}

func readPids(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func countLines(path string) int { return len(readPids(path)) }

// cgroupPopulated reads "populated" from cgroup.events (a missing leaf is
// empty).
func cgroupPopulated(leaf string) bool {
	b, err := os.ReadFile(filepath.Join(leaf, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(b, []byte("populated 1"))
}

// Reaper pacing. A zombie the reaper must leave (a leader, or a child
// os/exec waits for) hides the children behind it from waitid, so while
// one is there the reaper looks again after a pause, and when a timed
// look still finds such a zombie it also lists the server's children
// (reapListed), so no orphan waits behind it for longer than a pause.
const (
	// reapRetryFirst is the first pause; a leader os/exec is about to
	// wait for is usually gone by then.
	reapRetryFirst = time.Millisecond
	// reapRetryMax bounds the pause, which doubles while timed looks keep
	// finding such a zombie: the longest an orphan can stay a zombie
	// behind it.
	reapRetryMax = time.Second
)

// reaper waits for the orphans that reparent to the server (see Setup):
// a pass (reapOrphans) at every SIGCHLD, which costs a few system calls
// per exited child and reads no /proc listing. SIGCHLDs never postpone an
// armed retry, however often they come.
func reaper() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGCHLD)
	retry := time.NewTimer(reapRetryMax)
	retry.Stop()
	armed, pause := false, time.Duration(0)
	for {
		timed := false
		select {
		case <-ch:
		case <-retry.C:
			timed, armed = true, false
		}
		if _, blocker := reapOrphans(); blocker == 0 {
			pause = 0 // an armed retry only makes one more pass
			continue
		}
		switch {
		case timed:
			reapListed()
			pause = min(max(2*pause, reapRetryFirst), reapRetryMax)
		case armed:
			continue
		default:
			pause = reapRetryFirst
		}
		retry.Reset(pause)
		armed = true
	}
}

// reapOrphans waits for the zombie children of the server that os/exec
// will not wait for, in the order waitid reports them, and returns how
// many it reaped and the pid of the zombie it stopped at (0: no zombie
// is left). waitid(WNOWAIT) names a zombie child without reaping it, so
// each exited child costs O(1) system calls, never a listing of /proc; it
// stops at the first zombie that is not an orphan, since waitid reports
// that one again until its own waiter reaps it.
func reapOrphans() (reaped, blocker int) {
	for {
		pid, err := peekZombie()
		if err != nil || pid == 0 {
			return reaped, 0
		}
		switch reapIfOrphan(pid) {
		case reapedOrphan:
			reaped++
		case notOrphan:
			return reaped, pid
		}
		// goneAlready: its waiter reaped it meanwhile; look again.
	}
}

// reapListed reaps every orphan among the server's children as listed by
// /proc/self/task/*/children (all of them, whatever zombie waitid reports
// first). The listing is read without the start lock; each candidate is
// decided under it.
func reapListed() (reaped int) {
	for _, pid := range childPids(os.Getpid()) {
		if reapIfOrphan(pid) == reapedOrphan {
			reaped++
		}
	}
	return reaped
}

// childExit is the start of Linux's siginfo_t as waitid fills it for a
// child: si_signo, si_errno and si_code, then the union (aligned like a
// pointer) whose first member is si_pid. The whole siginfo_t is 128
// bytes.
type childExit struct {
	signo, errno, code int32
	_                  [0]uintptr
	pid                int32
	_                  [128 - 16]byte
}

// peekZombie returns the pid of a zombie child of the server without
// reaping it (waitid P_ALL WEXITED|WNOHANG|WNOWAIT), or 0 when there is
// none.
func peekZombie() (int, error) {
	var info childExit
	_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(info.pid), nil
}

// What reapIfOrphan did.
type reapOutcome int

const (
	reapedOrphan reapOutcome = iota
	// notOrphan: a registered leader, a child in the server's process
	// group, or not a zombie: its own waiter takes its exit status.
	notOrphan
	// goneAlready: no such zombie child any more.
	goneAlready
)

// reapIfOrphan waits for pid when it is a zombie child of the server that
// is neither a registered leader nor in the server's process group. It
// holds the start lock, so a leader that exits before Start registered it
// is never taken for an orphan.
func reapIfOrphan(pid int) reapOutcome {
	startMu.Lock()
	defer startMu.Unlock()
	leadersMu.Lock()
	_, leader := leaders[pid]
	leadersMu.Unlock()
	if leader {
		return notOrphan
	}
	// getpgid answers for a zombie until it is reaped.
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		return goneAlready
	}
	if pgid == selfGroup {
		return notOrphan
	}
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	switch {
	case err == nil && got == pid:
		return reapedOrphan
	case err == nil:
		return notOrphan // alive: a child listed by reapListed
	default:
		return goneAlready
	}
}

// childPids lists the server's children from /proc/self/task/*/children,
// or from a /proc scan where that file does not exist.
func childPids(self int) []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	if len(files) == 0 {
		var out []int
		for _, p := range scanProcs() {
			if p.ppid == self {
				out = append(out, p.pid)
			}
		}
		return out
	}
	var out []int
	for _, f := range files {
		out = append(out, readPids(f)...)
	}
	return out
}

// Survivors returns the live processes whose environment carries
// MarkerEnv=marker (what descendant tracking would find of a run).
func Survivors(marker string) []int {
	var out []int
	for _, p := range scanProcs() {
		if !p.zombie && hasMarker(p.pid, marker) {
			out = append(out, p.pid)
		}
	}
	return out
}

// Live returns those of pids that are live processes (not zombies).
func Live(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if p, ok := readStat(pid); ok && !p.zombie {
			out = append(out, pid)
		}
	}
	return out
}

// Tidy removes the server's cgroup directory when no run's leaf is left in
// it (at shutdown, after every run was killed); a later Start creates it
// again. Several apps in one process share the parent: one's Tidy removes
// nothing while another's runs have leaves there (the kernel refuses), and
// never races a Start making its leaf (parentMu).
func (c *Containment) Tidy() {
	if c.parent != "" {
		parentMu.Lock()
		os.Remove(c.parent)
		parentMu.Unlock()
	}
}
