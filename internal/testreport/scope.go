package testreport

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

// ScopeIDPrefix begins every scope identity returned by ScopeID.
const ScopeIDPrefix = "validation_scope:v1:"

// scopeDomain separates scope hashes from every other SHA-256 use.
const scopeDomain = "webcodex/testreport/validation_scope/v1"

// Scope is the structured scope of one validation run: what ran, where, on
// which selection. It is the comparison key of validation deltas. Request
// assertions (require_tests, min_tests) and result expectations are not part
// of it.
type Scope struct {
	Kind     string   // validation kind, e.g. "go_test", "cargo_test"
	Tool     string   // tool that ran it
	Cwd      string   // working directory as the caller normalized it
	Packages []string // package patterns or cargo packages; a set
	Filter   string   // test name filter, "" for none
	Features []string // cargo features; a set
	Targets  []string // target selection (lib, bins, tests, …); a set
	Purpose  string   // declared purpose of the run
}

// ScopeID returns the opaque identity of s: ScopeIDPrefix followed by the
// lower-case hex SHA-256 of a canonical encoding of s. The encoding is
// domain-separated and length-prefixed (every field is named and every
// string carries its length, so no two scopes share an encoding), and the
// set fields Packages, Features and Targets are sorted and deduplicated
// first, so their order and repetition never change the identity. Nothing
// else is normalized: callers pass values already normalized (for example a
// project-relative Cwd), and different strings are different scopes. The
// identity reveals nothing of the command, path or filter it covers.
func ScopeID(s Scope) string {
	h := sha256.New()
	var n [8]byte
	str := func(v string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	set := func(name string, vs []string) {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		vs = slices.Compact(vs)
		str(name)
		binary.BigEndian.PutUint64(n[:], uint64(len(vs)))
		h.Write(n[:])
		for _, v := range vs {
			str(v)
		}
	}
	str(scopeDomain)
	str("kind")
	str(s.Kind)
	str("tool")
	str(s.Tool)
	str("cwd")
	str(s.Cwd)
	set("packages", s.Packages)
	str("filter")
	str(s.Filter)
	set("features", s.Features)
	set("targets", s.Targets)
	str("purpose")
	str(s.Purpose)
	return ScopeIDPrefix + hex.EncodeToString(h.Sum(nil))
}

// ValidScopeID reports whether id has the shape ScopeID returns.
func ValidScopeID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, ScopeIDPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		c := hexPart[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
