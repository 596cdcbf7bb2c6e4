//go:build unix

package audittest

import (
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on f, waiting for it.
func lock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}
