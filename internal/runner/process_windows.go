//go:build windows

package runner

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// pathSeparators are the characters that make a program name a path
// rather than a name looked up on PATH.
const pathSeparators = `/\`

// defaultPath is a child's PATH when the server has none.
const defaultPath = `C:\Windows\System32;C:\Windows`

// platformInherited lists the variables a child may see besides the
// common ones: those Windows programs (and the Go toolchain's caches)
// need to find the system, the user's profile and a temporary directory.
var platformInherited = []string{
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE",
	"APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "TEMP", "TMP",
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited (STILL_ACTIVE). A process that exits with this very
// code reads as alive.
const stillActive = 259

// groupAttr starts a child as the root of a new console process group, so
// that a Ctrl+C or Ctrl+Break meant for the server does not reach it.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// terminate ends the execution at once: Windows has no SIGTERM a process
// tree could handle (console control events reach only processes that
// share the server's console), so the whole unit, its Job Object, is
// terminated without a grace period.
func (p *process) terminate() { p.unit.Kill() }

// processGone reports whether no process has pid: OpenProcess refuses the
// pid (ERROR_INVALID_PARAMETER) or the process has exited. A process the
// server may not open (another user's) is not gone.
func processGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
