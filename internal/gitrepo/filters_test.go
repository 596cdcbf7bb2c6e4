package gitrepo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/gitrepo"
	"github.com/webcodex/webcodex/internal/gitrepo/gittest"
)

// filterRepo makes a repository whose a.txt ("one") is committed before
// its .gitattributes names the filter driver name, and whose
// configuration then defines that driver's clean command as one that
// rewrites the content (and is required). a.txt is then touched, so that
// git must read it again.
func filterRepo(t *testing.T, name string) string {
	t.Helper()
	dir := newRepo(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("a.txt filter="+name+"\n"), 0o644)
	gittest.Run(t, dir, "-c", "filter."+name+".clean=cat", "add", ".")
	gittest.Run(t, dir, "-c", "filter."+name+".clean=cat", "commit", "-q", "-m", "one")
	gittest.Run(t, dir, "config", "filter."+name+".clean", "sed s/one/CLEANED/")
	gittest.Run(t, dir, "config", "filter."+name+".required", "true")
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(filepath.Join(dir, "a.txt"), later, later)
	return dir
}

// TestFilterDriversAreEmptied: the server's git diff in a repository
// whose configuration defines a clean filter (with a name git's -c could
// not express: it holds '=' and '.') runs no filter: the diff is empty,
// where the user's own git, running the filter, sees a change.
func TestFilterDriversAreEmptied(t *testing.T) {
	for _, name := range []string{"evil", "Ev=il.x"} {
		t.Run(name, func(t *testing.T) {
			dir := filterRepo(t, name)
			if out := gittest.Run(t, dir, "diff", "--stat"); !strings.Contains(out, "a.txt") {
				t.Fatalf("the filter does not apply in the user's git (diff %q): the test proves nothing", out)
			}
			priv, cleanup := privateIndex(t, nil, dir)
			defer cleanup()
			out, _, err := priv.Run(context.Background(), 1<<20, "diff", "--no-ext-diff", "--no-textconv")
			if err != nil || len(out) != 0 {
				t.Fatalf("the server's diff ran the filter: %q %v", out, err)
			}
			st, _, err := priv.Status(context.Background())
			if err != nil || !st.Clean {
				t.Fatalf("the server's status: %+v %v", st, err)
			}
		})
	}
}

// TestTooManyFilterDriversAreRefused: a configuration defining more
// drivers than MaxFilterDrivers is operation_failed: the server runs no
// git there rather than leave one driver live.
func TestTooManyFilterDriversAreRefused(t *testing.T) {
	dir := filterRepo(t, "evil")
	for i := range gitrepo.MaxFilterDrivers {
		gittest.Run(t, dir, "config", fmt.Sprintf("filter.f%d.smudge", i), "cat")
	}
	if _, err := gitrepo.Open(context.Background(), nil, dir); !failure.Is(err, failure.OperationFailed) {
		t.Fatalf("%d drivers: %v", gitrepo.MaxFilterDrivers+1, err)
	}
}
