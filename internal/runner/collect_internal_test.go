package runner

import (
	"os"
	"path/filepath"
	"testing"
)

type counter int64

func (c *counter) Write(b []byte) (int, error) { *c += counter(len(b)); return len(b), nil }

// A collected file is cut at MaxCollectBytes.
func TestCollectIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxCollectBytes + 10); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	var n counter
	if err := collectFile(path, &n); err != nil || n != MaxCollectBytes {
		t.Fatalf("collected %d bytes of %d (%v), want the bound %d", n, MaxCollectBytes+10, err, MaxCollectBytes)
	}
}
