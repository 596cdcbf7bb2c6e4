package search_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/benchpair"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/tools/search"
)

// rgCase is one query run by both search_project_texts and ripgrep; the
// patterns keep to the syntax where RE2 and ripgrep agree (no \w, \s or $).
type rgCase struct {
	name, query   string
	regex, ignore bool // ignore: case-insensitive
}

var rgCases = []rgCase{
	{name: "literal", query: "return nil"},
	{name: "regex", query: `func \([a-z]+ \*[A-Z][A-Za-z]*\) [A-Z]`, regex: true},
	{name: "caseless", query: "deadline", ignore: true},
}

// rgArgs are ripgrep's flags for our semantics: .gitignore and
// .git/info/exclude only (no global excludes, no config), hidden files
// searched, files over 2 MiB skipped, matching lines counted per file.
func rgArgs(c rgCase) []string {
	args := []string{"--no-config", "--hidden", "--no-ignore-global", "--max-filesize", strconv.Itoa(search.MaxFileBytes), "--count", "--no-messages"}
	if !c.regex {
		args = append(args, "--fixed-strings")
	}
	if c.ignore {
		args = append(args, "--ignore-case")
	}
	return append(args, "--regexp", c.query, ".")
}

// rgCount runs ripgrep in dir and sums its per-file counts.
func rgCount(tb testing.TB, dir string, c rgCase, extra ...string) int {
	cmd := exec.Command("rg", append(extra, rgArgs(c)...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil && !(cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1) {
		tb.Fatalf("rg %v: %v", rgArgs(c), err)
	}
	total := 0
	for line := range strings.Lines(string(out)) {
		i := strings.LastIndexByte(line, ':')
		n, err := strconv.Atoi(strings.TrimSpace(line[i+1:]))
		if err != nil {
			tb.Fatalf("rg output line %q", line)
		}
		total += n
	}
	return total
}

func ourCount(tb testing.TB, e *kerneltest.Env, c rgCase) search.Output {
	query := map[string]any{"query": c.query, "regex": c.regex}
	if c.ignore {
		query["case_sensitive"] = false
	}
	return kerneltest.OK[search.Output](tb, e.Call("search_project_texts", map[string]any{"queries": []any{query}}))
}

// needRipgrep skips tb when no rg is installed.
func needRipgrep(tb testing.TB) {
	if _, err := exec.LookPath("rg"); err != nil {
		tb.Skip("rg (ripgrep) is not installed")
	}
}

// copyGoTree fills dst with the text files (no NUL byte, at most 2 MiB) of
// the Go source directories dirs, makes it a git repository, and adds
// ignore rules so that .gitignore semantics take part.
func copyGoTree(tb testing.TB, dst string, dirs ...string) {
	tb.Helper()
	goroot := runtime.GOROOT()
	if goroot == "" {
		tb.Skip("no GOROOT")
	}
	for _, d := range dirs {
		src := filepath.Join(goroot, "src", d)
		err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
			if err != nil || !de.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) > search.MaxFileBytes || bytes.IndexByte(b, 0) >= 0 {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(goroot, "src"), p)
			target := filepath.Join(dst, rel)
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644)
		})
		if err != nil {
			tb.Skipf("cannot copy %s: %v", src, err)
		}
	}
	write := func(rel, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, rel), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", dst).CombinedOutput(); err != nil {
		tb.Skipf("git init: %v %s", err, out)
	}
	write(".gitignore", "testdata/\n*.s\n")
	write("net/http/.gitignore", "*_test.go\n!server_test.go\n")
	write(".git/info/exclude", "go/build/\n")
	write(".hidden/notes.txt", "return nil\nDeadline\nfunc (x *T) M()\n")
}

// TestMatchCountsEqualRipgrep checks that search_project_texts counts the
// same matching lines as ripgrep over a copy of Go sources with ignore
// rules, for the benchmark's queries and for caseless queries whose
// letters fold to non-ASCII runes (k: U+212A, s: U+017F).
func TestMatchCountsEqualRipgrep(t *testing.T) {
	needRipgrep(t)
	e := newEnv(t)
	copyGoTree(t, e.Project.Root, "net", "go")
	e.Write("fold.txt", "\u212Aelvin\nkelvin\n\u017Fome\nSOME\nnot here\n")
	cases := append(slices.Clone(rgCases),
		rgCase{name: "caseless-k", query: "kelvin", ignore: true},
		rgCase{name: "caseless-s", query: "some", ignore: true},
		rgCase{name: "caseless-regex", query: `dead[a-z]+ exceeded`, regex: true, ignore: true},
		rgCase{name: "regex-alternation", query: `(Listen|Dial)(TCP|UDP)\(`, regex: true},
		rgCase{name: "regex-anchored", query: `^func [A-Z]`, regex: true},
	)
	for _, c := range cases {
		out := ourCount(t, e, c)
		want := rgCount(t, e.Project.Root, c)
		if out.Queries[0].Matches != want || want == 0 {
			t.Errorf("%s %q: search_project_texts counts %d matching lines, ripgrep %d", c.name, c.query, out.Queries[0].Matches, want)
		}
	}
}

// BenchmarkSearchVsRipgrep runs search_project_texts through the kernel
// and ripgrep as a process over the same generated tree (Go sources with
// ignore rules), alternating the two call by call (benchpair), and reports
// each side's median and their ratio (ours over rg). The first call of
// each side fails the benchmark when their counts differ.
// WEBCODEX_SEARCH_BENCH_DIRS adds GOROOT/src directories to the tree.
func BenchmarkSearchVsRipgrep(b *testing.B) {
	needRipgrep(b)
	e := kerneltest.New(b, registerLocal)
	copyGoTree(b, e.Project.Root, "net", "go", "runtime")
	if dir := os.Getenv("WEBCODEX_SEARCH_BENCH_DIRS"); dir != "" {
		copyGoTree(b, e.Project.Root, strings.Fields(dir)...)
	}
	for _, c := range rgCases {
		b.Run(c.name, func(b *testing.B) {
			if ours, rg := ourCount(b, e, c).Queries[0].Matches, rgCount(b, e.Project.Root, c); ours != rg {
				b.Fatalf("%q: search_project_texts counts %d matching lines, ripgrep %d", c.query, ours, rg)
			}
			benchpair.Run(b, "rg", func() { rgCount(b, e.Project.Root, c) }, "ours", func() { ourCount(b, e, c) })
		})
	}
}

// BenchmarkSearchGOROOT compares search_project_texts with ripgrep over
// the whole $(go env GOROOT)/src in place, alternating the two within
// each iteration. It is run by hand (it reads ~150 MB of files per
// iteration) with WEBCODEX_SEARCH_GOROOT=1; WEBCODEX_SEARCH_RG_THREADS sets
// ripgrep's -j (default: its own choice). GOROOT/src is no git
// repository, so ripgrep gets --no-require-git to honour its .gitignore
// files as search_project_texts does. The first iteration fails the
// benchmark when the two count different matching lines.
func BenchmarkSearchGOROOT(b *testing.B) {
	if os.Getenv("WEBCODEX_SEARCH_GOROOT") == "" {
		b.Skip("set WEBCODEX_SEARCH_GOROOT=1 to search $(go env GOROOT)/src")
	}
	needRipgrep(b)
	root, err := project.CanonicalRoot(filepath.Join(runtime.GOROOT(), "src"))
	if err != nil {
		b.Skip(err)
	}
	p := project.Project{ID: project.LocalID("goroot"), Name: "goroot", Root: root}
	reg := kernel.NewRegistry()
	registerLocal(reg)
	e := &kerneltest.Env{T: b, Project: p, Kernel: kernel.New(kernel.Options{Registry: reg, Projects: kerneltest.Projects{p.ID: p}})}
	extra := []string{"--no-require-git"}
	if j := os.Getenv("WEBCODEX_SEARCH_RG_THREADS"); j != "" {
		extra = append(extra, "-j", j)
	}
	for _, c := range rgCases {
		b.Run(c.name, func(b *testing.B) {
			if ours, rg := ourCount(b, e, c).Queries[0].Matches, rgCount(b, root, c, extra...); ours != rg {
				b.Fatalf("%q: search_project_texts counts %d matching lines, ripgrep %d", c.query, ours, rg)
			}
			benchpair.Run(b, "rg", func() { rgCount(b, root, c, extra...) }, "ours", func() { ourCount(b, e, c) })
		})
	}
}
