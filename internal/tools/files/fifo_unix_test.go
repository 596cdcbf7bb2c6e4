//go:build unix

package files_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
)

func TestReadNamedPipeIsRefusedWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.Project.Root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	msg := kerneltest.Fails(t, e.Call("read_files", readArgs(file("pipe"))), failure.InvalidArguments)
	if msg != `"pipe" is not a regular file` {
		t.Errorf("message = %q", msg)
	}
}
