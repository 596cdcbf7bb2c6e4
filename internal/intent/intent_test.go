package intent_test

import (
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/intent"
)

// TestBounds pins every bound of the package.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxGlobs", intent.MaxGlobs, 64},
		{"GlobMaxChars", intent.GlobMaxChars, 256},
		{"NoteMaxChars", intent.NoteMaxChars, 500},
		{"DefaultTTL", int64(intent.DefaultTTL), int64(time.Hour)},
		{"MinTTL", int64(intent.MinTTL), int64(time.Minute)},
		{"MaxTTL", int64(intent.MaxTTL), int64(24 * time.Hour)},
		{"MaxProjectIntents", intent.MaxProjectIntents, 100},
		{"MaxNoticeOverlaps", intent.MaxNoticeOverlaps, 8},
		{"MaxNoticeGlobs", intent.MaxNoticeGlobs, 8},
		{"MaxPendingNotices", intent.MaxPendingNotices, 16},
		{"NoticeRetention", int64(intent.NoticeRetention), int64(24 * time.Hour)},
		{"MaxWritePaths", intent.MaxWritePaths, 256},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestGlobsOverlap is the overlap rule's table: exact-path overlaps are
// never missed; two patterns with compatible literal prefixes are
// reported (a false positive the rule accepts).
func TestGlobsOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"internal/a/x.go", "internal/a/x.go", true},
		{"internal/a/x.go", "internal/a/y.go", false},
		{"internal/a/**", "internal/a/x.go", true},
		{"internal/a/**", "internal/a", true},
		{"internal/a/**", "internal/b/x.go", false},
		{"**", "anything/at/all.go", true},
		{"**/x.go", "internal/a/x.go", true},
		{"**/x.go", "internal/a/y.go", false},
		{"internal/*/x.go", "internal/a/x.go", true},
		{"internal/*/x.go", "internal/a/b/x.go", false},
		{"internal/a/*.go", "internal/a/x.go", true},
		{"internal/a/*.go", "internal/a/x.md", false},
		{"internal/a/*.go", "internal/a/*_test.go", true},
		{"internal/a/x*", "internal/a/y*", false},
		{"internal/a/x*", "internal/a/xy*", true},
		{"internal/**/x.go", "**/a/x.go", true},
		{"internal/**", "cmd/**", false},
		{"a/[xy].go", "a/y.go", true},
		{"a/[xy].go", "a/z.go", false},
		// A false positive the rule accepts: no path ends in both .go
		// and .md, but the literal prefixes agree.
		{"a/*.go", "a/*.md", true},
	} {
		if got := intent.GlobsOverlap(c.a, c.b); got != c.want {
			t.Errorf("GlobsOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := intent.GlobsOverlap(c.b, c.a); got != c.want {
			t.Errorf("GlobsOverlap(%q, %q) = %v, want %v (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// TestMatch: ** takes zero or more segments, * one segment's characters.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		g, p string
		want bool
	}{
		{"internal/a/**", "internal/a/x.go", true},
		{"internal/a/**", "internal/a/b/c/x.go", true},
		{"internal/a/**", "internal/a", true},
		{"internal/a/**", "internal/ab/x.go", false},
		{"internal/*/x.go", "internal/a/x.go", true},
		{"internal/*/x.go", "internal/a/b/x.go", false},
		{"**/*_test.go", "x_test.go", true},
		{"**/*_test.go", "a/b/x_test.go", true},
		{"docs/*.md", "docs/a.go", false},
	} {
		if got := intent.Match(c.g, c.p); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.g, c.p, got, c.want)
		}
	}
}

// TestCover reports globs no change touched and changes no glob declared.
func TestCover(t *testing.T) {
	c := intent.Cover(intent.Intent{Globs: []string{"internal/a/**", "docs/x.md"}}, []string{"internal/a/b.go", "cmd/main.go"})
	if len(c.Untouched) != 1 || c.Untouched[0] != "docs/x.md" || c.UntouchedTotal != 1 ||
		len(c.Undeclared) != 1 || c.Undeclared[0] != "cmd/main.go" || c.UndeclaredTotal != 1 {
		t.Fatalf("cover: %+v", c)
	}
}
