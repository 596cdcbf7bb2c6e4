package git

import "testing"

func TestParseHunkHeader(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Hunk
	}{
		{"@@ -1,3 +1,4 @@ func f()", Hunk{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 4}},
		{"@@ -5 +5 @@", Hunk{OldStart: 5, OldLines: 1, NewStart: 5, NewLines: 1}},
		{"@@ -0,0 +1,2 @@", Hunk{OldStart: 0, OldLines: 0, NewStart: 1, NewLines: 2}},
		{"@@@ -1,3 -1,3 +1,7 @@@", Hunk{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 7}},
		{"@@ -1,2 +1,2 @@ a -9,9 +9,9 b", Hunk{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2}},
	} {
		got := parseHunkHeader(tc.line)
		tc.want.Header = tc.line
		if got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.line, got, tc.want)
		}
	}
}

func TestSectionPath(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   string
	}{
		{[]string{"diff --git a/x y b/x y", "index 1..2", "--- a/x y\t", "+++ b/x y\t"}, "x y"},
		{[]string{"diff --git a/gone b/gone", "deleted file mode 100644", "--- a/gone", "+++ /dev/null"}, "gone"},
		{[]string{"diff --git a/a b/b", "similarity index 100%", "rename from a", "rename to b"}, "b"},
		{[]string{"diff --git a/b.bin b/b.bin", "Binary files a/b.bin and b/b.bin differ"}, "b.bin"},
		{[]string{"diff --git a/a b/a b/a b/a", "old mode 100644", "new mode 100755"}, "a b/a"},
		{[]string{`diff --git "a/t\tq" "b/t\tq"`, "old mode 100644", "new mode 100755"}, "t\tq"},
		{[]string{`diff --git "a/t\"q" "b/t\"q"`, `--- "a/t\"q"`, `+++ "b/t\"q"`}, `t"q`},
		{[]string{"diff --cc f.txt", "index 1,2..3"}, "f.txt"},
	} {
		if got := sectionPath(tc.header); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestCutLines(t *testing.T) {
	if got := cutLines("ab\ncd\nef\n", 7); got != "ab\ncd\n" {
		t.Fatalf("got %q", got)
	}
	if got := cutLines("abcdef\n", 3); got != "" {
		t.Fatalf("got %q", got)
	}
}
