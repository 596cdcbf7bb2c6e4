package search_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/search"
)

func q(query string, kv ...any) map[string]any {
	m := map[string]any{"query": query}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func searchArgs(queries ...map[string]any) map[string]any {
	list := make([]any, len(queries))
	for i, x := range queries {
		list[i] = x
	}
	return map[string]any{"queries": list}
}

func with(args map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return args
}

// brief renders matches as "q path:line:col text".
func brief(out search.Output) []string {
	var s []string
	for _, m := range out.Matches {
		s = append(s, fmt.Sprintf("%d %s:%d:%d %s", m.QueryIndex, m.Path, m.Line, m.Column, m.Text))
	}
	return s
}

func TestSearchLiteralWithContext(t *testing.T) {
	e := newEnv(t)
	e.Write("a.go", "package a\n\nfunc Hello() {}\nvar x = Hello\n")
	e.Write("b.txt", "nothing here\n")
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q("Hello"))))
	want := []search.Match{
		{QueryIndex: 0, Path: "a.go", Line: 3, Column: 6, Text: "func Hello() {}",
			Before: []search.ContextLine{{Line: 2, Text: ""}}, After: []search.ContextLine{{Line: 4, Text: "var x = Hello"}}},
		{QueryIndex: 0, Path: "a.go", Line: 4, Column: 9, Text: "var x = Hello",
			Before: []search.ContextLine{{Line: 3, Text: "func Hello() {}"}}},
	}
	if !slices.EqualFunc(out.Matches, want, matchEqual) {
		t.Fatalf("matches = %+v", out.Matches)
	}
	if out.Queries[0] != (search.QueryCount{QueryIndex: 0, Matches: 2, Files: 1, Returned: 2}) {
		t.Fatalf("counts = %+v", out.Queries)
	}
	if out.FilesScanned != 2 || out.Truncated {
		t.Fatalf("files_scanned %d truncated %v", out.FilesScanned, out.Truncated)
	}
}

func matchEqual(a, b search.Match) bool {
	return a.QueryIndex == b.QueryIndex && a.Path == b.Path && a.Line == b.Line && a.Column == b.Column &&
		a.Text == b.Text && a.TextTruncated == b.TextTruncated && a.TextStartColumn == b.TextStartColumn &&
		slices.Equal(a.Before, b.Before) && slices.Equal(a.After, b.After)
}

func TestSearchRegexVersusLiteralAndCase(t *testing.T) {
	e := newEnv(t)
	e.Write("f.txt", "abc\na.c\nABC\nfoo\r\n")
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(
		q("a.c"),
		q("a.c", "regex", true),
		q("abc"),
		q("abc", "case_sensitive", false),
		q("^A.C$", "regex", true, "case_sensitive", true),
		q("foo$", "regex", true),
	), "context_lines", 0)))
	want := []string{
		"0 f.txt:2:1 a.c",
		"1 f.txt:1:1 abc", "1 f.txt:2:1 a.c",
		"2 f.txt:1:1 abc",
		"3 f.txt:1:1 abc", "3 f.txt:3:1 ABC",
		"4 f.txt:3:1 ABC",
		"5 f.txt:4:1 foo",
	}
	if got := brief(out); !slices.Equal(got, want) {
		t.Fatalf("matches =\n%s", strings.Join(got, "\n"))
	}
	for _, m := range out.Matches {
		if m.Before != nil || m.After != nil {
			t.Fatalf("context with context_lines 0: %+v", m)
		}
	}
}

func TestSearchInvalidQueries(t *testing.T) {
	if search.MaxQueries != 8 || search.MaxQueryBytes != 1024 {
		t.Fatal("query bounds changed")
	}
	e := newEnv(t)
	e.Write("f.txt", "x\n")
	msg := kerneltest.Fails(t, e.Call("search_project_texts", searchArgs(q("ok"), q("(unclosed", "regex", true))), failure.InvalidArguments)
	if !strings.HasPrefix(msg, "queries[1]: invalid regular expression") {
		t.Errorf("message = %q", msg)
	}
	nine := make([]map[string]any, search.MaxQueries+1)
	for i := range nine {
		nine[i] = q("x")
	}
	kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(nine[:search.MaxQueries]...)))
	kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q(strings.Repeat("x", search.MaxQueryBytes)))))
	cases := map[string]map[string]any{
		"nine queries":       searchArgs(nine...),
		"no queries":         searchArgs(),
		"empty query":        searchArgs(q("")),
		"long query":         searchArgs(q(strings.Repeat("x", search.MaxQueryBytes+1))),
		"line break":         searchArgs(q("a\nb")),
		"bad glob":           searchArgs(q("x", "globs", []string{"[x"})),
		"unknown field":      searchArgs(q("x", "fuzzy", true)),
		"context too big":    with(searchArgs(q("x")), "context_lines", search.MaxContextLines+1),
		"context negative":   with(searchArgs(q("x")), "context_lines", -1),
		"max_matches big":    with(searchArgs(q("x")), "max_matches", search.MaxMatchesLimit+1),
		"max_matches neg":    with(searchArgs(q("x")), "max_matches", -1),
		"traversal path":     searchArgs(q("x", "path", "../")),
		"absolute path":      searchArgs(q("x", "path", "/tmp")),
		"unknown top member": with(searchArgs(q("x")), "ripgrep", true),
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			kerneltest.Fails(t, e.Call("search_project_texts", args), failure.InvalidArguments)
		})
	}
	kerneltest.Fails(t, e.Call("search_project_texts", searchArgs(q("x"), q("x", "path", "missing"))), failure.NotFound)
}

func TestSearchOrderingIsDeterministic(t *testing.T) {
	e := newEnv(t)
	e.Write("b.txt", "needle\nhay\nneedle\n")
	e.Write("a/z.txt", "needle\n")
	e.Write("a.txt", "hay needle\n")
	e.Write("a-b.txt", "needle\n")
	args := searchArgs(q("hay"), q("needle"))
	first := e.Call("search_project_texts", args)
	out := kerneltest.OK[search.Output](t, first)
	want := []string{
		"0 a.txt:1:1 hay needle",
		"0 b.txt:2:1 hay",
		"1 a-b.txt:1:1 needle",
		"1 a.txt:1:5 hay needle",
		"1 a/z.txt:1:1 needle",
		"1 b.txt:1:1 needle",
		"1 b.txt:3:1 needle",
	}
	if got := brief(out); !slices.Equal(got, want) {
		t.Fatalf("order =\n%s", strings.Join(got, "\n"))
	}
	second := e.Call("search_project_texts", args)
	if !bytes.Equal(kerneltest.OutputBytes(t, first), kerneltest.OutputBytes(t, second)) {
		t.Fatal("two identical searches gave different bytes")
	}
}

func TestSearchGitignoreGlobsAndPaths(t *testing.T) {
	e := newEnv(t)
	e.Write(".gitignore", "vendor/\n*.gen.go\n")
	e.Write("sub/.gitignore", "!keep.gen.go\n")
	e.Write("main.go", "TODO main\n")
	e.Write("x.gen.go", "TODO gen\n")
	e.Write("sub/keep.gen.go", "TODO keep\n")
	e.Write("sub/notes.md", "TODO notes\n")
	e.Write("vendor/lib.go", "TODO vendor\n")
	e.Write(".git/config", "TODO git\n")

	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q("TODO"))))
	if got := brief(out); !slices.Equal(got, []string{"0 main.go:1:1 TODO main", "0 sub/keep.gen.go:1:1 TODO keep", "0 sub/notes.md:1:1 TODO notes"}) {
		t.Fatalf("ignored search = %v", got)
	}
	out = kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(q("TODO")), "include_ignored", true)))
	if got := brief(out); len(got) != 5 || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, ".git/") }) {
		t.Fatalf("include_ignored search = %v", got)
	}
	out = kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(
		q("TODO", "globs", []string{"*.go"}),
		q("TODO", "path", "sub"),
		q("TODO", "path", "vendor"),
		q("TODO", "path", "sub/notes.md"),
		q("TODO", "globs", []string{"sub/**", "!*.md"}),
	)))
	want := []string{
		"0 main.go:1:1 TODO main", "0 sub/keep.gen.go:1:1 TODO keep",
		"1 sub/keep.gen.go:1:1 TODO keep", "1 sub/notes.md:1:1 TODO notes",
		"2 vendor/lib.go:1:1 TODO vendor",
		"3 sub/notes.md:1:1 TODO notes",
		"4 sub/keep.gen.go:1:1 TODO keep",
	}
	if got := brief(out); !slices.Equal(got, want) {
		t.Fatalf("scoped search =\n%s", strings.Join(got, "\n"))
	}
	// Files are counted once however many queries read them: main.go,
	// sub/.gitignore, sub/keep.gen.go, sub/notes.md, vendor/lib.go.
	if out.FilesScanned != 5 {
		t.Fatalf("files_scanned = %d", out.FilesScanned)
	}
}

func TestSearchSkipsBinaryLargeAndSymlinks(t *testing.T) {
	if search.MaxFileBytes != 2<<20 {
		t.Fatalf("MaxFileBytes = %d", search.MaxFileBytes)
	}
	e := newEnv(t)
	e.Write("bin.dat", "needle\x00")
	e.Write("large.txt", "needle\n"+strings.Repeat("x", search.MaxFileBytes-6))
	e.Write("at-limit.txt", "needle\n"+strings.Repeat("x", search.MaxFileBytes-8)+"\n")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "o.txt"), []byte("needle\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.Project.Root, "outdir")); err != nil {
		t.Fatal(err)
	}
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q("needle"))))
	if got := brief(out); !slices.Equal(got, []string{"0 at-limit.txt:1:1 needle"}) {
		t.Fatalf("matches = %v", got)
	}
	if out.FilesSkippedBinary != 1 || out.FilesSkippedLarge != 1 || out.FilesScanned != 1 {
		t.Fatalf("skips: binary %d large %d scanned %d", out.FilesSkippedBinary, out.FilesSkippedLarge, out.FilesScanned)
	}
	kerneltest.Fails(t, e.Call("search_project_texts", searchArgs(q("needle", "path", "outdir"))), failure.PermissionDenied)
}

func TestSearchMaxMatchesAndContextBounds(t *testing.T) {
	if search.DefaultMaxMatches != 100 || search.MaxMatchesLimit != 1000 ||
		search.DefaultContextLines != 1 || search.MaxContextLines != 5 {
		t.Fatal("match bounds changed")
	}
	e := newEnv(t)
	var b strings.Builder
	for i := 1; i <= search.MaxMatchesLimit+1; i++ {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	e.Write("many.txt", b.String())
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(q("hit")), "context_lines", 0)))
	if len(out.Matches) != search.DefaultMaxMatches || out.Queries[0].Matches != search.MaxMatchesLimit+1 || !out.Truncated || !out.Queries[0].Truncated {
		t.Fatalf("default max: %d returned, %+v", len(out.Matches), out.Queries[0])
	}
	out = kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(q("hit")), "context_lines", 0, "max_matches", search.MaxMatchesLimit)))
	if len(out.Matches) != search.MaxMatchesLimit || out.Queries[0].Returned != search.MaxMatchesLimit {
		t.Fatalf("max_matches limit: %d returned", len(out.Matches))
	}
	out = kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(q("hit 500", "regex", false)), "context_lines", search.MaxContextLines)))
	m := out.Matches[0]
	if len(m.Before) != search.MaxContextLines || len(m.After) != search.MaxContextLines || m.Before[0].Line != 495 || m.After[4].Line != 505 {
		t.Fatalf("context = %+v / %+v", m.Before, m.After)
	}
	// Context is clipped at the file's edges.
	out = kerneltest.OK[search.Output](t, e.Call("search_project_texts", with(searchArgs(q("hit 1"), q("hit 1001")), "context_lines", 2, "max_matches", 1)))
	if len(out.Matches[0].Before) != 0 || len(out.Matches[0].After) != 2 || len(out.Matches[1].After) != 0 || len(out.Matches[1].Before) != 2 {
		t.Fatalf("edge context = %+v", out.Matches)
	}
}

func TestSearchLineTruncation(t *testing.T) {
	if search.MaxLineChars != 400 || search.MatchLeadChars != 100 {
		t.Fatal("line bounds changed")
	}
	e := newEnv(t)
	early := "é" + strings.Repeat("a", 8) + "NEEDLE" + strings.Repeat("b", 1000)
	late := strings.Repeat("c", 899) + "NEEDLE" + strings.Repeat("d", 1000)
	e.Write("l.txt", early+"\n"+late+"\n")
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q("NEEDLE"))))
	first, second := out.Matches[0], out.Matches[1]
	if first.Column != 10 || !first.TextTruncated || first.TextStartColumn != 0 ||
		first.Text != string([]rune(early)[:search.MaxLineChars]) {
		t.Fatalf("early match: col %d truncated %v start %d len %d", first.Column, first.TextTruncated, first.TextStartColumn, len([]rune(first.Text)))
	}
	if second.Column != 900 || !second.TextTruncated || second.TextStartColumn != 800 ||
		second.Text != late[799:799+search.MaxLineChars] || !strings.Contains(second.Text, "NEEDLE") {
		t.Fatalf("late match: col %d start %d text %q", second.Column, second.TextStartColumn, second.Text[:20])
	}
	after := first.After[0]
	if after.Line != 2 || !after.Truncated || after.Text != late[:search.MaxLineChars] {
		t.Fatalf("context line = %d %v %d", after.Line, after.Truncated, len(after.Text))
	}
}

func TestSearchOutputBudget(t *testing.T) {
	if search.MaxOutputBytes != 1<<20 {
		t.Fatalf("MaxOutputBytes = %d", search.MaxOutputBytes)
	}
	e := newEnv(t)
	line := strings.Repeat("w", search.MaxLineChars-4)
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%04d%s\n", i, line)
	}
	e.Write("wide.txt", b.String())
	queries := make([]map[string]any, search.MaxQueries)
	for i := range queries {
		queries[i] = q("w")
	}
	res := e.Call("search_project_texts", with(searchArgs(queries...), "context_lines", 0, "max_matches", 300))
	out := kerneltest.OK[search.Output](t, res)
	if !out.Truncated {
		t.Fatal("output budget not reported")
	}
	text := 0
	for _, m := range out.Matches {
		text += len(m.Text) + len(m.Path)
	}
	if text > search.MaxOutputBytes || text < search.MaxOutputBytes*8/10 {
		t.Fatalf("returned text %d bytes for budget %d", text, search.MaxOutputBytes)
	}
	// 8 x 300 matches of ~408 bytes exceed 1 MiB: the budget is spent in
	// query order, so the first seven queries are complete and the last is
	// cut.
	for i, qc := range out.Queries {
		last := i == search.MaxQueries-1
		if qc.Matches != 300 || qc.Truncated != last || (qc.Returned == 300) == last || qc.Returned == 0 {
			t.Fatalf("query %d = %+v", i, qc)
		}
	}
}

func TestSearchRegistration(t *testing.T) {
	reg := kernel.NewRegistry()
	registerLocal(reg)
	tool, found := reg.Lookup("search_project_texts")
	if !found {
		t.Fatal("search_project_texts not registered")
	}
	if tool.Category != "search" || search.Category != "search" || len(tool.Scopes) != 1 || tool.Scopes[0] != "project:read" ||
		tool.Annotations != (kernel.Annotations{ReadOnly: true, Idempotent: true}) || tool.Mutates || tool.Writes ||
		tool.Session != kernel.SessionOptional {
		t.Fatalf("declaration = %+v", tool)
	}
}

func TestSearchExplicitUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files regardless of their mode")
	}
	e := newEnv(t)
	e.Write("locked.txt", "needle\n")
	if err := os.Chmod(filepath.Join(e.Project.Root, "locked.txt"), 0); err != nil {
		t.Fatal(err)
	}
	kerneltest.Fails(t, e.Call("search_project_texts", searchArgs(q("needle", "path", "locked.txt"))), failure.PermissionDenied)
	// Found by a walk, the same file is skipped rather than failing the call.
	out := kerneltest.OK[search.Output](t, e.Call("search_project_texts", searchArgs(q("needle"))))
	if len(out.Matches) != 0 || out.FilesScanned != 0 {
		t.Fatalf("unreadable walked file = %+v", out)
	}
}
