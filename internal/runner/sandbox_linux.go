package runner

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

var landlockABI = sync.OnceValue(func() int {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
})

// LandlockABI returns the kernel's Landlock ABI version, 0 when Landlock
// is unavailable.
func LandlockABI() int { return landlockABI() }

// Access rights. The read set lets a child run and read files and list
// directories (and, where the ABI has them, use device ioctls and
// connect to UNIX sockets); the write set is every filesystem right.
const (
	readRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir |
		llsyscall.AccessFSIoctlDev | llsyscall.AccessFSResolveUnix
	deviceRights = llsyscall.AccessFSReadFile | llsyscall.AccessFSWriteFile | llsyscall.AccessFSTruncate |
		llsyscall.AccessFSIoctlDev
)

// devices are the files every program may write, under every mode.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// compiled is a Landlock ruleset built from inputs, shared by the runs
// with the same inputs while it is fresh. The policy's mutex guards users
// and stale.
type compiled struct {
	fd    int
	flags uint32
	watch []watched
	users int  // confinements between Confine and the end of Start
	stale bool // replaced in the cache: closed when users reaches 0
	// spare is an idle thread confined by this ruleset, kept for the
	// next start (nil when none); it ends when the ruleset is closed.
	spare atomic.Pointer[confinedThread]
}

// compile carves the inputs around the denied paths and builds their
// ruleset.
func compile(in inputs) (*compiled, error) {
	c := &compiled{}
	r := rules{read: carve(in.read, in.deny, &c.watch), write: in.writes(&c.watch), network: in.network}
	fd, flags, err := ruleset(r)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("sandbox: the kernel enforces none of the requested rules")
	}
	c.fd, c.flags = fd, flags
	if onCompiled != nil {
		onCompiled()
	}
	return c, nil
}

// onCompiled, when set (by tests), learns of each ruleset compile builds.
var onCompiled func()

// fresh reports whether every watched path is still the same inode with
// the same modification time.
func (c *compiled) fresh() bool {
	for _, w := range c.watch {
		if watch1(w.path) != w {
			return false
		}
	}
	return true
}

// release marks c replaced; the caller holds the policy's mutex.
func (c *compiled) release() {
	c.stale = true
	if c.users == 0 {
		c.close()
	}
}

func (c *compiled) close() {
	if t := c.spare.Swap(nil); t != nil {
		t.end()
	}
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

func watch1(path string) watched {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return watched{path: path}
	}
	return watched{path: path, ino: st.Ino, mtime: st.Mtim.Nano()}
}

// rules are the resolved allow-lists of one ruleset.
type rules struct {
	read, write []string
	network     bool
}

// ruleset builds the Landlock ruleset of r, downgraded to what the kernel
// supports (best effort down to ABI 1), and the landlock_restrict_self
// flags to enforce it with (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON from ABI
// 7). fd is -1 when there is nothing to enforce.
func ruleset(r rules) (fd int, flags uint32, err error) {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V11.HandledAccessFS,
		// Signals to processes outside the child's domain (the server,
		// other runs) are refused.
		Scoped: llsyscall.ScopeSignal,
	}
	if r.network {
		cfg.HandledAccessNet = landlock.V11.HandledAccessNet
	}
	all := landlock.V11.HandledAccessFS
	rs := []landlock.Rule{
		landlock.PathAccess(deviceRights, devices...).IgnoreIfMissing(),
		landlock.PathAccess(deviceRights|llsyscall.AccessFSReadDir, "/dev/pts").IgnoreIfMissing(),
	}
	rs = appendRules(rs, readRights, r.read)
	rs = appendRules(rs, all, r.write)
	// The programs a child execs are the ones confined, so their denials
	// are logged to the kernel's audit (when it is enabled), where
	// /metrics counts them (decision 0088). Below ABI 7 best effort drops
	// the flag.
	return cfg.BestEffort().EnableLoggingForSubprocesses().NewRulesetFD(rs...)
}

// fileRights are the rights Landlock accepts on a file (not a directory).
const fileRights = llsyscall.AccessFSExecute | llsyscall.AccessFSWriteFile | llsyscall.AccessFSReadFile |
	llsyscall.AccessFSTruncate | llsyscall.AccessFSIoctlDev

// appendRules adds rights on paths: directory rules for directories, the
// file subset for anything else. A path that no longer exists is skipped.
func appendRules(rs []landlock.Rule, rights landlock.AccessFSSet, paths []string) []landlock.Rule {
	var dirs, files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
		case st.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	if len(dirs) > 0 {
		rs = append(rs, landlock.PathAccess(rights, dirs...).IgnoreIfMissing())
	}
	if len(files) > 0 {
		rs = append(rs, landlock.PathAccess(rights&fileRights, files...).IgnoreIfMissing())
	}
	return rs
}

// onConfinedThread, when set (by tests), learns the id of each thread
// startConfined confines.
var onConfinedThread func(tid int)

// startConfined starts cmd on an OS thread confined by set: Landlock
// domains and no_new_privs are per thread and inherited across fork and
// exec, and Go forks from the calling thread. The thread is set's spare
// when it has one (a start alone finds it, so it pays no thread of its
// own); otherwise a new one, which becomes the spare afterwards unless
// another start returned one first, and then ends.
func startConfined(cmd *exec.Cmd, set *compiled) error {
	t := set.spare.Swap(nil)
	if t == nil {
		var err error
		if t, err = newConfinedThread(set.fd, set.flags); err != nil {
			return err
		}
	}
	err := t.run(cmd.Start)
	if !set.spare.CompareAndSwap(nil, t) {
		t.end()
	}
	return err
}

// A confinedThread is a locked OS thread, confined once, that runs the
// functions handed to it (starts) until end; it is never unlocked, so the
// runtime destroys it when its goroutine returns. No other goroutine ever
// runs on it, and threads the runtime creates meanwhile come from its
// unconfined template thread.
type confinedThread struct {
	work chan func() error
	res  chan error
}

// newConfinedThread starts a thread confined by the ruleset fd.
func newConfinedThread(fd int, flags uint32) (*confinedThread, error) {
	t := &confinedThread{work: make(chan func() error), res: make(chan error)}
	ready := make(chan error, 1)
	go onThrowawayThread(func() error {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			ready <- fmt.Errorf("sandbox: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
			return nil
		}
		if onConfinedThread != nil {
			onConfinedThread(unix.Gettid())
		}
		if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
			ready <- fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
			return nil
		}
		ready <- nil
		for f := range t.work {
			t.res <- f()
		}
		return nil
	})
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// run runs f on the thread and returns its error.
func (t *confinedThread) run(f func() error) error {
	t.work <- f
	return <-t.res
}

// end lets the thread finish; it must not be used afterwards.
func (t *confinedThread) end() { close(t.work) }

// onThrowawayThread runs f on a locked OS thread that ends with it. The
// main thread is never used: the runtime parks it for good instead of
// ending it when its locked goroutine returns. When the goroutine lands
// there, it keeps the main thread locked (so no other goroutine can take
// it) while a second goroutine, necessarily on another thread, runs f.
func onThrowawayThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			defer runtime.UnlockOSThread()
			errc <- onThrowawayThread(f)
			return
		}
		// Never unlocked: the thread dies with this goroutine.
		errc <- f()
	}()
	return <-errc
}
