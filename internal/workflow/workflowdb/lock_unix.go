//go:build unix

package workflowdb

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockHeld reports whether tryLock failed because another process holds
// the lock.
func lockHeld(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }

// removeLocked removes the lock file f, which this process holds locked,
// and then closes it, which releases the lock: no other process can take
// the lock of a file that is still listed.
func removeLocked(f *os.File) {
	os.Remove(f.Name())
	f.Close()
}
