package jobs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCapFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	woke := 0
	c, err := createCapFile(path, 10, func() { woke++ })
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"12345", "67890abc", "def"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d %v", s, n, err)
		}
	}
	c.Close()
	// Writes after close are counted, never fail.
	if n, err := c.Write([]byte("xy")); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "1234567890" || c.written.Load() != 10 || c.dropped.Load() != 8 || woke != 4 {
		t.Fatalf("file %q written %d dropped %d woke %d", b, c.written.Load(), c.dropped.Load(), woke)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestReadChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	// "héllo wörld": é and ö are two bytes each.
	text := "héllo wörld"
	os.WriteFile(path, []byte(text), 0o600)
	at := func(n int64) *int64 { return &n }
	cases := []struct {
		name   string
		cursor *int64
		limit  int
		final  bool
		want   string
		cur    int64
		next   int64
		more   bool
	}{
		{"tail", nil, 4, true, "rld", 10, 13, false},        // the tail starts at ö's second byte: skipped
		{"fromStart", at(0), 2, false, "h", 0, 1, true},     // é split: kept for the next read
		{"continue", at(1), 4, false, "éll", 1, 5, true},    // whole runes
		{"midRune", at(2), 3, false, "ll", 3, 5, true},      // starts inside é: skipped
		{"beyondEnd", at(100), 4, false, "", 13, 13, false}, // clamped
		{"all", at(0), 64, true, text, 0, 13, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readChunk(path, tc.cursor, tc.limit, tc.final)
			if err != nil {
				t.Fatal(err)
			}
			if c.Text != tc.want || c.Cursor != tc.cur || c.NextCursor != tc.next || c.More != tc.more || c.FileBytes != 13 || !c.Retained {
				t.Fatalf("got %+v", c)
			}
		})
	}
	c, err := readChunk(filepath.Join(t.TempDir(), "absent"), at(5), 4, true)
	if err != nil || c.Retained || c.Text != "" || c.NextCursor != 5 {
		t.Fatalf("absent file: %+v %v", c, err)
	}
}

// TestCapFileSpill: output stays in memory until spill (or until it would
// exceed the memory limit), then the file holds all of it.
func TestCapFileSpill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job")
	path := filepath.Join(dir, "out")
	mkdirs := 0
	mkdir := func() error { mkdirs++; return os.Mkdir(dir, 0o700) }
	c := newCapFile(path, 100, 8, mkdir, nil)
	c.Write([]byte("abc"))
	if _, err := os.Stat(dir); !os.IsNotExist(err) || c.isSpilled() {
		t.Fatalf("touched the disk before a spill: %v", err)
	}
	c.Write([]byte("defghi")) // 9 bytes > memLimit 8: spills
	c.Write([]byte("j"))
	c.Close()
	if b, _ := os.ReadFile(path); string(b) != "abcdefghij" || !c.isSpilled() || mkdirs != 1 || c.written.Load() != 10 {
		t.Fatalf("file %q spilled %v mkdirs %d written %d", b, c.isSpilled(), mkdirs, c.written.Load())
	}

	// A spill after Close (a handoff racing the end of the run) still
	// writes what was held.
	path2 := filepath.Join(t.TempDir(), "out2")
	c = newCapFile(path2, 100, 1<<10, func() error { return nil }, nil)
	c.Write([]byte("late"))
	c.Close()
	if err := c.spill(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path2); string(b) != "late" {
		t.Fatalf("file %q", b)
	}
}
