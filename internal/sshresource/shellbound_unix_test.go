//go:build unix

// Unix only: internal/command needs the runner, which builds on Unix.

package sshresource_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/command"
	"github.com/webcodex/webcodex/internal/sshresource"
)

// The remote command bound is the run_shell bound: a command run_shell
// accepts is never refused on its way to a resource.
func TestMaxCommandBytesIsTheShellBound(t *testing.T) {
	if sshresource.MaxCommandBytes != command.MaxShellBytes {
		t.Errorf("MaxCommandBytes = %d, command.MaxShellBytes = %d", sshresource.MaxCommandBytes, command.MaxShellBytes)
	}
}
