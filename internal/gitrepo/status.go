package gitrepo

import (
	"context"
	"strconv"
	"strings"

	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds of a status read.
const (
	// MaxStatusEntries bounds Status.Entries.
	MaxStatusEntries = 500
	// MaxStatusOutputBytes bounds the raw output read from git status.
	MaxStatusOutputBytes = 4 << 20
)

// Status entry kinds.
const (
	KindModified   = "modified"
	KindAdded      = "added"
	KindDeleted    = "deleted"
	KindRenamed    = "renamed"
	KindUntracked  = "untracked"
	KindConflicted = "conflicted"
)

// Status is the git state of a directory (git_status's output).
type Status struct {
	IsGitRepo bool `json:"is_git_repo"`
	// Branch is the checked-out branch; empty when HEAD is detached.
	Branch   string `json:"branch,omitempty"`
	Detached bool   `json:"detached,omitempty"`
	// Head is the commit HEAD names; empty before the first commit.
	Head     string `json:"head,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Ahead    int    `json:"ahead"`
	Behind   int    `json:"behind"`
	// Entries holds at most MaxStatusEntries entries in git's order.
	Entries []Entry `json:"entries"`
	// Total counts every entry read; Truncated says Entries (or git's
	// output, in which case Total is a lower bound) was cut.
	Total      int  `json:"total"`
	Truncated  bool `json:"truncated"`
	Clean      bool `json:"clean" jsonschema:"true when nothing is modified, staged, untracked or conflicted"`
	Conflicted int  `json:"conflicted"`
}

// Entry is one path of a Status.
type Entry struct {
	Path    string `json:"path" jsonschema:"project-relative; untracked directories end in /"`
	OldPath string `json:"old_path,omitempty" jsonschema:"source path of a rename or copy"`
	// IndexStatus and WorktreeStatus are git's X and Y status letters
	// ("." for unchanged, "?" for untracked).
	IndexStatus    string `json:"index_status"`
	WorktreeStatus string `json:"worktree_status"`
	Kind           string `json:"kind" jsonschema:"modified, added, deleted, renamed, untracked or conflicted"`
}

// ReadStatus runs the fixed `git status --porcelain=v2 --branch` in root
// through host, under Timeout and MaxStatusOutputBytes, never touching the
// index. outputComplete is false when git's output was cut, so that counts
// (Total, Conflicted) are lower bounds; a Truncated result with complete
// output only means Entries was capped. A directory outside any repository
// gives IsGitRepo false. Everything that needs the workspace state reads
// it here rather than running git.
func ReadStatus(ctx context.Context, host runner.Host, root string) (st Status, outputComplete bool, err error) {
	ctx, cancel := WithTimeout(ctx)
	defer cancel()
	r, err := Open(ctx, host, root)
	if err != nil {
		return Status{}, false, err
	}
	return r.Status(ctx)
}

// Status reads the work tree's status as ReadStatus does, within ctx's
// deadline.
func (r Repo) Status(ctx context.Context) (st Status, outputComplete bool, err error) {
	if !r.Inside {
		return Status{IsGitRepo: false, Entries: []Entry{}}, true, nil
	}
	out, truncated, err := r.Run(ctx, MaxStatusOutputBytes,
		"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", "--find-renames", "--", ".")
	if err != nil {
		return Status{}, false, err
	}
	return parseStatus(out, truncated, r.Prefix), !truncated, nil
}

// parseStatus parses `git status --porcelain=v2 --branch -z` output. Paths
// are repository-relative; prefix (the project's place in the repository)
// is stripped. When truncated, the last, incomplete record is dropped.
func parseStatus(out []byte, truncated bool, prefix string) Status {
	st := Status{IsGitRepo: true, Entries: []Entry{}, Truncated: truncated}
	recs := strings.Split(string(out), "\x00")
	// A complete output ends in NUL, leaving an empty last element; a
	// truncated one ends in a partial record. Either way the last element
	// is not a record.
	recs = recs[:len(recs)-1]
	add := func(e Entry) {
		st.Total++
		if e.Kind == KindConflicted {
			st.Conflicted++
		}
		if len(st.Entries) < MaxStatusEntries {
			st.Entries = append(st.Entries, e)
		} else {
			st.Truncated = true
		}
	}
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 2 {
			continue
		}
		switch rec[0] {
		case '#':
			parseBranchHeader(&st, rec)
		case '1':
			f := strings.SplitN(rec, " ", 9)
			if len(f) < 9 || len(f[1]) != 2 {
				continue
			}
			add(Entry{Path: strip(prefix, f[8]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: ordinaryKind(f[1])})
		case '2':
			f := strings.SplitN(rec, " ", 10)
			if len(f) < 10 || len(f[1]) != 2 || i+1 >= len(recs) {
				continue
			}
			i++
			e := Entry{Path: strip(prefix, f[9]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: KindRenamed}
			if strings.ContainsRune(f[1], 'C') {
				e.Kind = KindAdded
			}
			if strings.HasPrefix(recs[i], prefix) {
				e.OldPath = strings.TrimPrefix(recs[i], prefix)
			}
			add(e)
		case 'u':
			f := strings.SplitN(rec, " ", 11)
			if len(f) < 11 || len(f[1]) != 2 {
				continue
			}
			add(Entry{Path: strip(prefix, f[10]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: KindConflicted})
		case '?':
			add(Entry{Path: strip(prefix, rec[2:]), IndexStatus: "?", WorktreeStatus: "?", Kind: KindUntracked})
		}
	}
	st.Clean = st.Total == 0 && !st.Truncated
	return st
}

func parseBranchHeader(st *Status, rec string) {
	key, val, _ := strings.Cut(strings.TrimPrefix(rec, "# "), " ")
	switch key {
	case "branch.oid":
		if val != "(initial)" {
			st.Head = val
		}
	case "branch.head":
		if val == "(detached)" {
			st.Detached = true
		} else {
			st.Branch = val
		}
	case "branch.upstream":
		st.Upstream = val
	case "branch.ab":
		a, b, _ := strings.Cut(val, " ")
		st.Ahead, _ = strconv.Atoi(strings.TrimPrefix(a, "+"))
		st.Behind, _ = strconv.Atoi(strings.TrimPrefix(b, "-"))
	}
}

// ordinaryKind maps the XY letters of a changed (type 1) entry to a kind.
func ordinaryKind(xy string) string {
	switch {
	case xy[0] == 'A':
		return KindAdded
	case xy[0] == 'D' || xy[1] == 'D':
		return KindDeleted
	}
	return KindModified
}

func strip(prefix, p string) string { return strings.TrimPrefix(p, prefix) }
