//go:build windows

package shell

import (
	"errors"
	"syscall"
)

// errNoShells is why a persistent shell cannot run on Windows: it is a
// POSIX sh or bash whose control channel and framed output are inherited
// descriptors 3 to 5 (os/exec passes no descriptor beyond stderr on
// Windows), interrupted by SIGINT to its process group.
var errNoShells = errors.New("a persistent shell needs a Unix system (inherited descriptors 3-5 and process-group signals); run_process and run_job still work")

// platformSupport reports why persistent shells cannot run here.
func platformSupport() error { return errNoShells }

// groupAttr is never used on Windows: no shell starts.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup does nothing on Windows: no shell starts, and the runner's
// containment (a Job Object) kills what a shell would have left.
func signalGroup(pgid int, sig syscall.Signal) {}
