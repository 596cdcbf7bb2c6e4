package testreport

import (
	"strings"
	"testing"
)

func TestScopeIDGolden(t *testing.T) {
	// Pinned: changing the encoding changes every stored identity, which
	// must come with a new version prefix instead.
	s := Scope{Kind: "go_test", Tool: "go_test", Cwd: "svc", Packages: []string{"./b/...", "./a"},
		Filter: "TestX", Features: nil, Targets: nil, Purpose: "test"}
	// Independently computed: sha256 over the 8-byte big-endian
	// length-prefixed strings domain, "kind", kind, "tool", tool, "cwd",
	// cwd, "packages", count, sorted items…, "filter", filter, "features",
	// count…, "targets", count…, "purpose", purpose.
	const want = "validation_scope:v1:65581d221e4f073d83e93ad8015b93737ad51c2527d67b7cef771771ebdfc4da"
	got := ScopeID(s)
	if got != want {
		t.Errorf("ScopeID = %s, want %s", got, want)
	}
	if !ValidScopeID(got) || !strings.HasPrefix(got, ScopeIDPrefix) || len(got) != len(ScopeIDPrefix)+64 {
		t.Errorf("malformed identity %q", got)
	}
	for _, raw := range []string{"svc", "./a", "TestX"} {
		if strings.Contains(got, raw) {
			t.Errorf("identity reveals %q", raw)
		}
	}
}

func TestScopeIDSetsIgnoreOrderAndRepetition(t *testing.T) {
	a := Scope{Kind: "cargo_test", Packages: []string{"x", "y"}, Features: []string{"f1", "f2"}, Targets: []string{"lib", "tests"}}
	b := Scope{Kind: "cargo_test", Packages: []string{"y", "x", "y"}, Features: []string{"f2", "f1"}, Targets: []string{"tests", "lib", "lib"}}
	if ScopeID(a) != ScopeID(b) {
		t.Error("set order or repetition changed the identity")
	}
	if ScopeID(Scope{Packages: nil}) != ScopeID(Scope{Packages: []string{}}) {
		t.Error("nil and empty sets differ")
	}
	if a.Packages[0] != "x" || b.Packages[0] != "y" {
		t.Error("ScopeID reordered the caller's slices")
	}
}

func TestScopeIDSeparatesEveryField(t *testing.T) {
	base := Scope{Kind: "k", Tool: "t", Cwd: "c", Packages: []string{"p"}, Filter: "f", Features: []string{"x"}, Targets: []string{"g"}, Purpose: "u"}
	variants := map[string]Scope{"base": base}
	mut := func(name string, f func(*Scope)) {
		s := base
		s.Packages, s.Features, s.Targets = append([]string(nil), base.Packages...), append([]string(nil), base.Features...), append([]string(nil), base.Targets...)
		f(&s)
		variants[name] = s
	}
	mut("kind", func(s *Scope) { s.Kind = "k2" })
	mut("tool", func(s *Scope) { s.Tool = "t2" })
	mut("cwd", func(s *Scope) { s.Cwd = "c2" })
	mut("packages", func(s *Scope) { s.Packages = []string{"p", "q"} })
	mut("filter", func(s *Scope) { s.Filter = "" })
	mut("features", func(s *Scope) { s.Features = nil })
	mut("targets", func(s *Scope) { s.Targets = []string{"h"} })
	mut("purpose", func(s *Scope) { s.Purpose = "diagnostic" })
	// Length prefixes: moving bytes between adjacent values or list items
	// must not collide.
	mut("split items", func(s *Scope) { s.Packages = []string{"ab", "c"} })
	mut("joined items", func(s *Scope) { s.Packages = []string{"a", "bc"} })
	mut("value moved to next field", func(s *Scope) { s.Kind, s.Tool = "kt", "" })
	mut("filter as purpose", func(s *Scope) { s.Filter, s.Purpose = "u", "f" })
	mut("item moved between sets", func(s *Scope) { s.Features, s.Targets = []string{"x", "g"}, nil })
	seen := map[string]string{}
	for name, s := range variants {
		id := ScopeID(s)
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share an identity", name, other)
		}
		seen[id] = name
	}
}

func TestValidScopeID(t *testing.T) {
	good := ScopeID(Scope{})
	for _, c := range []struct {
		id   string
		want bool
	}{
		{good, true},
		{"", false},
		{"validation_scope:v1:", false},
		{strings.ToUpper(good), false},
		{"validation_scope:v2:" + good[len(ScopeIDPrefix):], false},
		{good[:len(good)-1], false},
		{good + "0", false},
		{good[:len(good)-1] + "g", false},
	} {
		if got := ValidScopeID(c.id); got != c.want {
			t.Errorf("ValidScopeID(%q) = %v", c.id, got)
		}
	}
}
