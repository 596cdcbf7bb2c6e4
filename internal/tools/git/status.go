package git

import (
	"context"
	"strconv"
	"strings"

	"github.com/webcodex/webcodex/internal/kernel"
)

func gitStatus(ctx context.Context, inv *kernel.Invocation, _ StatusInput) (StatusOutput, error) {
	st, _, err := Status(ctx, inv.Project.Root)
	return st, err
}

// Status runs git_status's fixed `git status --porcelain=v2 --branch` in a
// project root, with the tools' scrubbed environment, GitTimeout and
// MaxStatusOutputBytes, and never touching the index. outputComplete is
// false when git's output was cut, so that counts (Total, Conflicted) are
// lower bounds; a Truncated result with complete output only means Entries
// was capped. A directory outside any repository gives IsGitRepo false.
// Other tools that need the workspace state call this rather than git.
func Status(ctx context.Context, root string) (st StatusOutput, outputComplete bool, err error) {
	ctx, cancel := withTimeout(ctx, GitTimeout)
	defer cancel()
	r, err := newRunner(root)
	if err != nil {
		return StatusOutput{}, false, err
	}
	info, err := r.probe(ctx)
	if err != nil {
		return StatusOutput{}, false, err
	}
	if !info.inside {
		return StatusOutput{IsGitRepo: false, Entries: []StatusEntry{}}, true, nil
	}
	out, truncated, err := r.run(ctx, MaxStatusOutputBytes,
		"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", "--find-renames", "--", ".")
	if err != nil {
		return StatusOutput{}, false, asFailure(err, "status")
	}
	return parseStatus(out, truncated, info.prefix), !truncated, nil
}

// parseStatus parses `git status --porcelain=v2 --branch -z` output. Paths
// are repository-relative; prefix (the project's place in the repository)
// is stripped. When truncated, the last, incomplete record is dropped.
func parseStatus(out []byte, truncated bool, prefix string) StatusOutput {
	st := StatusOutput{IsGitRepo: true, Entries: []StatusEntry{}, Truncated: truncated}
	recs := strings.Split(string(out), "\x00")
	// A complete output ends in NUL, leaving an empty last element; a
	// truncated one ends in a partial record. Either way the last element
	// is not a record.
	recs = recs[:len(recs)-1]
	add := func(e StatusEntry) {
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
			add(StatusEntry{Path: strip(prefix, f[8]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: ordinaryKind(f[1])})
		case '2':
			f := strings.SplitN(rec, " ", 10)
			if len(f) < 10 || len(f[1]) != 2 || i+1 >= len(recs) {
				continue
			}
			i++
			e := StatusEntry{Path: strip(prefix, f[9]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: KindRenamed}
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
			add(StatusEntry{Path: strip(prefix, f[10]), IndexStatus: f[1][:1], WorktreeStatus: f[1][1:], Kind: KindConflicted})
		case '?':
			add(StatusEntry{Path: strip(prefix, rec[2:]), IndexStatus: "?", WorktreeStatus: "?", Kind: KindUntracked})
		}
	}
	st.Clean = st.Total == 0 && !st.Truncated
	return st
}

func parseBranchHeader(st *StatusOutput, rec string) {
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
