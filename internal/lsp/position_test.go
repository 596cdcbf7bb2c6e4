package lsp

import "testing"

func TestToUnitsAndBack(t *testing.T) {
	// "é" is 2 bytes and 1 UTF-16 unit; "𝔸" (U+1D538) is 4 bytes and 2
	// UTF-16 units; x is the 4th character.
	line := "é𝔸 x := 1"
	for _, c := range []struct {
		enc  string
		want int
	}{{UTF16, 4}, {UTF8, 7}, {UTF32, 3}} {
		got, ok := toUnits(line, 4, c.enc)
		if !ok || got != c.want {
			t.Errorf("%s: toUnits = %d, %v; want %d", c.enc, got, ok, c.want)
		}
		if col := toColumn(line, got, c.enc); col != 4 {
			t.Errorf("%s: toColumn(%d) = %d, want 4", c.enc, got, col)
		}
	}
}

func TestToUnitsBounds(t *testing.T) {
	line := "ab"
	if off, ok := toUnits(line, 3, UTF16); !ok || off != 2 {
		t.Errorf("end of line: %d, %v", off, ok)
	}
	for _, col := range []int{0, 4, -1} {
		if _, ok := toUnits(line, col, UTF16); ok {
			t.Errorf("column %d accepted", col)
		}
	}
	if _, ok := toUnits("", 1, UTF16); !ok {
		t.Error("column 1 of an empty line refused")
	}
}

func TestToColumnInsideSurrogatePair(t *testing.T) {
	// Offset 1 falls inside the surrogate pair of the first character.
	if col := toColumn("𝔸b", 1, UTF16); col != 1 {
		t.Errorf("got %d, want 1", col)
	}
	if col := toColumn("𝔸b", 2, UTF16); col != 2 {
		t.Errorf("got %d, want 2", col)
	}
	if col := toColumn("ab", 9, UTF16); col != 3 {
		t.Errorf("past the end: got %d, want 3", col)
	}
}

func TestSplitLines(t *testing.T) {
	got := splitLines("a\r\nb\rc\nd")
	if len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "d" {
		t.Errorf("got %q", got)
	}
}
