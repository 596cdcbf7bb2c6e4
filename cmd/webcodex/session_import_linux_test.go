//go:build linux && !race

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// importMaxRSS runs `webcodex session import file` against data in a child
// process and returns the child's peak resident set size in bytes, as the
// kernel accounts it (getrusage ru_maxrss: a high-water mark, not a sample).
func importMaxRSS(t *testing.T, data, file string) int64 {
	t.Helper()
	argv, _ := json.Marshal([]string{"--data-dir", data, "session", "import", file})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEBCODEX_TEST_CHILD_ARGS="+string(argv))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("import %s: %v\n%s", filepath.Base(file), err, out.String())
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// TestImportMemoryIsBoundedBySessionNotFile imports a ledger of many
// sessions (about 48 MB) and one of a single session of the same shape, each
// in its own child process, and requires the larger import's peak RSS to
// exceed the smaller one's by less than a quarter of the larger file. An
// import that holds the document (or its rows) in memory grows by at least
// the file's size, so this cannot pass by accident; the bound leaves room
// for the runtime's and SQLite's caches, which do not grow with the file.
// It is left out of -race builds, whose shadow memory and tenfold slower
// decoding add nothing to what it measures.
func TestImportMemoryIsBoundedBySessionNotFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB ledger")
	}
	const sessions = 1200 // of 100 events: about 36 KB each
	dir := t.TempDir()
	small, big := filepath.Join(dir, "small.json"), filepath.Join(dir, "big.json")
	writeGeneratedLedger(t, small, 1, 100)
	writeGeneratedLedger(t, big, sessions, 100)
	fi, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}

	dataSmall, dataBig := t.TempDir(), t.TempDir()
	for _, d := range []string{dataSmall, dataBig} {
		mustRun(t, "--data-dir", d, "project", "add", "demo="+t.TempDir())
	}
	base := importMaxRSS(t, dataSmall, small)
	peak := importMaxRSS(t, dataBig, big)
	if n, _ := countRows(t, dataBig); n != sessions {
		t.Fatalf("imported %d sessions, want %d", n, sessions)
	}
	growth := peak - base
	t.Logf("ledger %d MiB: peak RSS %d MiB (single-session import %d MiB), growth %d MiB",
		fi.Size()>>20, peak>>20, base>>20, growth>>20)
	if bound := fi.Size() / 4; growth > bound {
		t.Fatalf("importing %d MiB grew peak RSS by %d MiB over a one-session import; bound %d MiB",
			fi.Size()>>20, growth>>20, bound>>20)
	}
}
