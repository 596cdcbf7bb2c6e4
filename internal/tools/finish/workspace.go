package finish

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Bounds of the workspace snapshot.
const (
	// WorkspaceTimeout bounds the git status call.
	WorkspaceTimeout = 10 * time.Second
	// MaxWorkspaceOutputBytes bounds the git status output read; a larger
	// output makes the workspace unavailable (a conflict could be hidden
	// past the cut).
	MaxWorkspaceOutputBytes = 1 << 20
	// MaxWorkspacePaths bounds the changed paths reported.
	MaxWorkspacePaths = 50
)

// statusArgv is the fixed argv of the workspace snapshot: read-only (no
// optional locks, no fsmonitor hook), no pager, NUL-separated.
var statusArgv = []string{
	"--no-pager", "--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "color.ui=false",
	"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal",
}

// snapshot is the parsed git status of the project root.
type snapshot struct {
	Branch, Head      string
	Dirty, Conflicted bool
	Ahead, Behind     int
	// Paths are the changed paths in git's order; Conflicts the unmerged.
	Paths, Conflicts []string
}

// capWriter keeps at most max bytes and cancels the process beyond them.
type capWriter struct {
	buf  bytes.Buffer
	max  int
	over bool
	stop func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		w.over = true
		w.stop()
		return len(p), nil
	}
	return w.buf.Write(p)
}

// gitStatus runs the fixed `git status --porcelain=v2 --branch` in root
// with a scrubbed environment and a timeout. It returns nil when the state
// cannot be proven (no git, not a repository, timeout, oversized output).
func gitStatus(ctx context.Context, root string) *snapshot {
	git, err := exec.LookPath("git")
	if err != nil || root == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, WorkspaceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, statusArgv...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"}
	if home, err := os.UserHomeDir(); err == nil {
		cmd.Env = append(cmd.Env, "HOME="+home)
	}
	out := &capWriter{max: MaxWorkspaceOutputBytes, stop: cancel}
	cmd.Stdout = out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil || out.over {
		return nil
	}
	return parseStatus(out.buf.String())
}

// parseStatus reads porcelain v2 -z output.
func parseStatus(out string) *snapshot {
	w := &snapshot{}
	recs := strings.Split(out, "\x00")
	field := func(rec string, n int) string {
		if f := strings.SplitN(rec, " ", n+1); len(f) == n+1 {
			return f[n]
		}
		return ""
	}
	add := func(p string) {
		if p != "" {
			w.Paths = append(w.Paths, p)
		}
	}
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if rec == "" {
			continue
		}
		switch rec[0] {
		case '#':
			f := strings.Fields(rec)
			if len(f) < 3 {
				continue
			}
			switch f[1] {
			case "branch.oid":
				if f[2] != "(initial)" {
					w.Head = f[2]
				}
			case "branch.head":
				if f[2] != "(detached)" {
					w.Branch = f[2]
				}
			case "branch.ab":
				if len(f) == 4 {
					w.Ahead, _ = strconv.Atoi(strings.TrimPrefix(f[2], "+"))
					w.Behind, _ = strconv.Atoi(strings.TrimPrefix(f[3], "-"))
				}
			}
		case 'u':
			w.Conflicted, w.Dirty = true, true
			p := field(rec, 10)
			add(p)
			if p != "" {
				w.Conflicts = append(w.Conflicts, p)
			}
		case '2':
			// A rename record is followed by its original path.
			i++
			w.Dirty = true
			add(field(rec, 9))
		case '1':
			w.Dirty = true
			add(field(rec, 8))
		case '?':
			w.Dirty = true
			add(strings.TrimPrefix(rec, "? "))
		}
	}
	return w
}
