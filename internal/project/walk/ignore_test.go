package walk

import (
	"testing"
)

func TestMatchSegment(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"*.go", "a.go", true},
		{"*.go", ".go", true},
		{"*.go", "a.goo", false},
		{"*", "anything", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a**b", "aXYb", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"?", "é", true},
		{"??", "é", false},
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[!abc]x", "dx", true},
		{"[^abc]x", "ax", false},
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[]]", "]", true},
		{"[[:digit:]]1", "71", true},
		{"[[:digit:]]1", "x1", false},
		{"[[:upper:]]*", "Readme", true},
		{"[", "[", true},
		{"[ab", "[ab", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`\#x`, "#x", true},
		{`foo\ `, "foo ", true},
		{"ab", "ab", true},
		{"ab", "abc", false},
		{"", "", true},
		{"", "a", false},
	}
	for _, c := range cases {
		if got := matchSegment(c.pat, c.name); got != c.want {
			t.Errorf("matchSegment(%q, %q) = %v, want %v", c.pat, c.name, got, c.want)
		}
	}
}

func TestMatchSegmentIsNotExponential(t *testing.T) {
	pat := "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"
	name := ""
	for range 200 {
		name += "a"
	}
	if matchSegment(pat, name) {
		t.Fatal("pattern ending in b matched a name without b")
	}
}

func TestMatchSegments(t *testing.T) {
	cases := []struct {
		pat, path string
		want      bool
	}{
		{"**/foo", "foo", true},
		{"**/foo", "a/foo", true},
		{"**/foo", "a/b/foo", true},
		{"**/foo", "a/foox", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "b", false},
		{"abc/**", "abc", false},
		{"abc/**", "abc/x", true},
		{"abc/**", "abc/x/y", true},
		{"a/*/c", "a/b/c", true},
		{"a/*/c", "a/b/d/c", false},
		{"**", "x/y", true},
		{"doc/*.html", "doc/a.html", true},
		{"doc/*.html", "doc/sub/a.html", false},
	}
	for _, c := range cases {
		r := parseIgnore([]byte(c.pat), "")[0]
		if !r.anchored && c.pat != "**" {
			t.Fatalf("pattern %q should be anchored", c.pat)
		}
		if got := r.matches(c.path, false); got != c.want {
			t.Errorf("%q matches %q = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

func TestParseIgnore(t *testing.T) {
	content := "# comment\n\n*.log\r\n!keep.log\nbuild/\n/root.txt\na/b\n\\#hash\n\\!bang\ntrail   \nesc\\ \n!\n/\n"
	rules := parseIgnore([]byte(content), "sub")
	type view struct {
		pat                       string
		negate, dirOnly, anchored bool
	}
	want := []view{
		{"*.log", false, false, false},
		{"keep.log", true, false, false},
		{"build", false, true, false},
		{"root.txt", false, false, true},
		{"a/b", false, false, true},
		{`\#hash`, false, false, false},
		{`\!bang`, false, false, false},
		{"trail", false, false, false},
		{`esc\ `, false, false, false},
	}
	if len(rules) != len(want) {
		t.Fatalf("got %d rules, want %d: %+v", len(rules), len(want), rules)
	}
	for i, r := range rules {
		got := view{joinSegments(r.segments), r.negate, r.dirOnly, r.anchored}
		if got != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i, got, want[i])
		}
		if r.base != "sub" {
			t.Errorf("rule %d base = %q", i, r.base)
		}
	}
}

func joinSegments(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "/"
		}
		out += x
	}
	return out
}

func TestIgnoredPrecedence(t *testing.T) {
	rules := parseIgnore([]byte("*.log\n!keep.log\nbuild/\n/only-root.txt\n"), "")
	rules = append(rules, parseIgnore([]byte("!*.log\nlocal.txt\n"), "sub")...)
	cases := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"keep.log", false, false},
		{"x/keep.log", false, false},
		{"sub/a.log", false, false},
		{"other/a.log", false, true},
		{"build", true, true},
		{"build", false, false},
		{"x/build", true, true},
		{"only-root.txt", false, true},
		{"x/only-root.txt", false, false},
		{"sub/local.txt", false, true},
		{"local.txt", false, false},
		{"sub/x/local.txt", false, true},
	}
	for _, c := range cases {
		if got := ignored(rules, c.path, c.isDir); got != c.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", c.path, c.isDir, got, c.want)
		}
	}
}
