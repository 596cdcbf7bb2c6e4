//go:build unix

package files_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
)

func TestReadNamedPipeIsRefusedWithoutBlocking(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.p.Root, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	msg := fails(t, e.call("read_files", readArgs(file("pipe"))), failure.InvalidArguments)
	if msg != `"pipe" is not a regular file` {
		t.Errorf("message = %q", msg)
	}
}
