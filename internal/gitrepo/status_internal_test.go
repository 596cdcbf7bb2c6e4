package gitrepo

import (
	"slices"
	"testing"
)

// TestParseStatusRecords pins the porcelain v2 records other tools read
// through Status: renames with spaces, conflicts, untracked paths and the
// branch header of a detached HEAD.
func TestParseStatusRecords(t *testing.T) {
	out := "# branch.oid abc\x00# branch.head (detached)\x00# branch.ab +2 -3\x00" +
		"1 .M N... 100644 100644 100644 aaa aaa a b.go\x00" +
		"2 R. N... 100644 100644 100644 aaa aaa R100 new name.go\x00old.go\x00" +
		"u UU N... 100644 100644 100644 100644 aaa bbb ccc c.go\x00" +
		"? u.txt\x00"
	st := parseStatus([]byte(out), false, "")
	var paths, conflicts []string
	for _, e := range st.Entries {
		paths = append(paths, e.Path)
		if e.Kind == KindConflicted {
			conflicts = append(conflicts, e.Path)
		}
	}
	if !slices.Equal(paths, []string{"a b.go", "new name.go", "c.go", "u.txt"}) || !slices.Equal(conflicts, []string{"c.go"}) ||
		st.Clean || st.Conflicted != 1 || st.Branch != "" || !st.Detached || st.Head != "abc" || st.Ahead != 2 || st.Behind != 3 {
		t.Fatalf("paths %q conflicts %q status %+v", paths, conflicts, st)
	}
}

func TestParseStatusTruncatedOutput(t *testing.T) {
	out := "# branch.oid abc\x00# branch.head main\x00? one.txt\x002 R. N... 100644 100644 100644 a b R100 new.txt\x00old.t"
	st := parseStatus([]byte(out), true, "")
	if st.Total != 1 || !st.Truncated || st.Clean || st.Entries[0].Path != "one.txt" || st.Head != "abc" {
		t.Fatalf("status = %+v", st)
	}
	// With a prefix, paths are project-relative and a rename source
	// outside the project is not reported.
	out = "2 R. N... 100644 100644 100644 a b R100 sub/new.txt\x00elsewhere.txt\x00"
	st = parseStatus([]byte(out), false, "sub/")
	if st.Entries[0].Path != "new.txt" || st.Entries[0].OldPath != "" || st.Entries[0].Kind != KindRenamed {
		t.Fatalf("status = %+v", st)
	}
}
