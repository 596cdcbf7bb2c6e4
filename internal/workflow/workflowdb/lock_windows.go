//go:build windows

package workflowdb

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows byte-range locks are mandatory: a lock over the lock file's
// content (the acknowledged sequence at its start, read by other
// processes) would keep them from reading it. The lock covers lockBytes
// at offset lockOffsetHigh<<32 instead, far beyond any content; Windows
// allows locking past the end of a file.
const (
	lockOffsetHigh = 0x7fffffff
	lockBytes      = 1
)

// tryLock takes an exclusive lock on f without waiting (LockFileEx).
func tryLock(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, lockBytes, 0, &ol)
}

// lockHeld reports whether tryLock failed because another process holds
// the lock.
func lockHeld(err error) bool { return errors.Is(err, windows.ERROR_LOCK_VIOLATION) }

// removeLocked closes the lock file f, which releases this process's lock,
// and then removes it: Windows does not remove a file that is open. In
// between another process may take the lock; it finds the file's owner
// gone and removes the file itself.
func removeLocked(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
