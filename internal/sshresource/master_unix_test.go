//go:build unix

package sshresource_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/sshresource"
)

func TestControlPathBound(t *testing.T) {
	if sshresource.MaxControlPathBytes+len(".0123456789abcdef")+1 > 104 {
		t.Fatalf("MaxControlPathBytes %d leaves no room for ssh's temporary name in a 104-byte sun_path", sshresource.MaxControlPathBytes)
	}
	p, err := sshresource.NewPool("")
	if err != nil {
		t.Fatal(err)
	}
	// A directory whose sockets would pass the bound is refused.
	long := filepath.Join(t.TempDir(), strings.Repeat("d", sshresource.MaxControlPathBytes))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := sshresource.NewPool(long); failure.KindOf(err) != failure.InvalidArguments {
		t.Errorf("NewPool(long) = %v, want %q", err, failure.InvalidArguments)
	}
	if entries, _ := os.ReadDir(long); len(entries) != 0 {
		t.Errorf("NewPool(long) left %d entries", len(entries))
	}
	if err := p.CloseAll(); err != nil {
		t.Fatal(err)
	}
}
