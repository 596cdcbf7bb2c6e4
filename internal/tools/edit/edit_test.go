package edit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workspace"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/project/filerev"
	"github.com/webcodex/webcodex/internal/tools/edit"
)

const projectID = "agent:local:demo"

// env is a kernel with the edit tools over one project rooted in a fresh
// temporary directory.
type env struct {
	*kerneltest.Env
	t    *testing.T
	root string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ke := kerneltest.New(t, registerLocal)
	return &env{Env: ke, t: t, root: ke.Project.Root}
}

func (e *env) call(tool string, args map[string]any) kernel.Result {
	e.t.Helper()
	return e.Call(tool, args)
}

func (e *env) callAs(p auth.Principal, tool string, args map[string]any) kernel.Result {
	e.t.Helper()
	return e.CallAs(p, tool, args)
}

func (e *env) write(rel, content string) {
	e.t.Helper()
	e.Write(rel, content)
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// snapshot records every entry under dir: kind, mode and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "link:" + target
		case fi.IsDir():
			snap[rel] = fmt.Sprintf("dir:%v", fi.Mode())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			snap[rel] = fmt.Sprintf("file:%v:%s", fi.Mode(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func assertUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("disk changed:\nbefore %v\nafter  %v", before, after)
	}
}

func decode[T any](t *testing.T, res kernel.Result) T {
	t.Helper()
	if !res.Success {
		t.Fatalf("call failed: %+v %v", res.Error, res.Output)
	}
	b, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// failed checks that res failed with kind and returns its output map
// (round-tripped through JSON, as a transport sees it).
func failed(t *testing.T, res kernel.Result, kind failure.Kind) map[string]any {
	t.Helper()
	if res.Success {
		t.Fatalf("call succeeded, want %s: %v", kind, res.Output)
	}
	if res.Error.Kind != kind {
		t.Fatalf("error kind = %s (%s), want %s", res.Error.Kind, res.Error.Message, kind)
	}
	b, _ := json.Marshal(res.Output)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// conflictOf checks an edit_conflict with the given conflict kind.
func conflictOf(t *testing.T, res kernel.Result, kind string) map[string]any {
	t.Helper()
	out := failed(t, res, failure.EditConflict)
	if out["conflict_kind"] != kind {
		t.Fatalf("conflict_kind = %v, want %s (%s)", out["conflict_kind"], kind, res.Error.Message)
	}
	return out
}

func lines(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func rev(s string) string { return filerev.Of([]byte(s)) }

func replace(path, fence string, edits ...map[string]any) map[string]any {
	return map[string]any{"path": path, "op": "replace", "expected_read_revision": fence, "edits": edits}
}

func ed(old, new string) map[string]any { return map[string]any{"old_text": old, "new_text": new} }

func changes(cs ...map[string]any) map[string]any { return map[string]any{"changes": cs} }

type applyOut = edit.ApplyOutput

func TestRegistration(t *testing.T) {
	reg := kernel.NewRegistry()
	registerLocal(reg)
	for _, name := range []string{"apply_text_edits", "write_project_file"} {
		tool, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if tool.Category != "edit" || !slices.Equal(tool.Scopes, []auth.Scope{auth.ScopeProjectWrite}) ||
			!tool.Mutates || !tool.Writes || tool.Session != kernel.SessionOptional ||
			tool.Annotations != (kernel.Annotations{Destructive: true}) {
			t.Errorf("%s: unexpected declaration %+v", name, tool)
		}
	}
}

func TestBoundConstants(t *testing.T) {
	got := []int{edit.MaxChanges, edit.MaxEditsPerChange, edit.MaxFileBytes, edit.MaxContentBytes,
		edit.MaxMatchCount, edit.MaxCandidateLines, edit.MaxPreviewBytes}
	want := []int{16, 64, 8 << 20, 1 << 20, 10000, 5, 4096}
	if !slices.Equal(got, want) {
		t.Fatalf("bounds = %v, want %v", got, want)
	}
}

func TestInsufficientScopeChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	before := snapshot(t, e.root)
	reader := auth.Principal{Kind: auth.KindAPIToken, ID: "r", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}}
	res := e.callAs(reader, "apply_text_edits", changes(replace("a.txt", rev("one\n"), ed("one", "two"))))
	failed(t, res, failure.InsufficientScope)
	res = e.callAs(reader, "write_project_file", map[string]any{"path": "b.txt", "content": "x"})
	failed(t, res, failure.InsufficientScope)
	assertUnchanged(t, e.root, before)
}

func TestReplaceFencedByRevisionAndSHA256(t *testing.T) {
	const orig = "alpha\nbeta\ngamma\n"
	for _, tc := range []struct {
		name  string
		fence map[string]any
	}{
		{"read_revision", map[string]any{"expected_read_revision": rev(orig)}},
		{"read_revision_upper", map[string]any{"expected_read_revision": strings.ToUpper(rev(orig))}},
		{"sha256", map[string]any{"expected_sha256": filerev.SHA256([]byte(orig))}},
		{"both", map[string]any{"expected_read_revision": rev(orig), "expected_sha256": filerev.SHA256([]byte(orig))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("src/a.txt", orig)
			c := map[string]any{"path": "src/a.txt", "op": "replace", "edits": []any{ed("beta\n", "BETA\nDELTA\n")}}
			for k, v := range tc.fence {
				c[k] = v
			}
			out := decode[applyOut](t, e.call("apply_text_edits", changes(c)))
			const want = "alpha\nBETA\nDELTA\ngamma\n"
			if got := e.read("src/a.txt"); got != want {
				t.Fatalf("content = %q, want %q", got, want)
			}
			f := out.Files[0]
			if out.DryRun || !slices.Equal(out.ChangedPaths, []string{"src/a.txt"}) || f.Path != "src/a.txt" || f.Op != "replace" ||
				!f.Changed || f.ReadRevision != rev(want) || f.SHA256 != filerev.SHA256([]byte(want)) || f.Bytes != len(want) ||
				f.PreviousReadRevision != rev(orig) || f.Replacements != 1 || f.AddedLines != 2 || f.RemovedLines != 1 || f.Preview != "" {
				t.Fatalf("unexpected output %+v", out)
			}
		})
	}
}

func TestFenceMismatchWritesNothing(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	e.write("b.txt", "two\n")
	before := snapshot(t, e.root)
	for _, c := range []map[string]any{
		replace("b.txt", rev("stale\n"), ed("two", "2")),
		{"path": "b.txt", "op": "replace", "expected_sha256": filerev.SHA256([]byte("stale\n")), "edits": []any{ed("two", "2")}},
		// Both fences present: both must hold.
		{"path": "b.txt", "op": "replace", "expected_read_revision": rev("two\n"), "expected_sha256": filerev.SHA256([]byte("stale\n")), "edits": []any{ed("two", "2")}},
		{"path": "b.txt", "op": "delete", "expected_read_revision": rev("stale\n")},
	} {
		res := e.call("apply_text_edits", changes(replace("a.txt", rev("one\n"), ed("one", "1")), c))
		out := conflictOf(t, res, edit.ConflictSHA256Mismatch)
		if out["change_index"] != 1.0 || out["path"] != "b.txt" || out["reason"] != edit.ReasonFenceMismatch || out["state_changed"] != false {
			t.Fatalf("detail = %v", out)
		}
		assertUnchanged(t, e.root, before)
	}
}

func TestMissingFenceIsInvalid(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one\n")
	before := snapshot(t, e.root)
	for _, c := range []map[string]any{
		{"path": "a.txt", "op": "replace", "edits": []any{ed("one", "1")}},
		{"path": "a.txt", "op": "delete"},
	} {
		out := failed(t, e.call("apply_text_edits", changes(c)), failure.InvalidArguments)
		if out["change_index"] != 0.0 {
			t.Fatalf("detail = %v", out)
		}
		assertUnchanged(t, e.root, before)
	}
}

func TestInvalidArguments(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", "one one\n")
	e.write("b.txt", "two\n")
	fence := rev("one one\n")
	one := func(v int) *int { return &v }
	before := snapshot(t, e.root)
	cases := map[string]map[string]any{
		"no changes":         {"changes": []any{}},
		"null changes":       {"changes": nil},
		"bad op":             changes(map[string]any{"path": "a.txt", "op": "rename", "expected_read_revision": fence}),
		"empty old_text":     changes(replace("a.txt", fence, ed("", "x"))),
		"no edits":           changes(replace("a.txt", fence)),
		"content on edit":    changes(map[string]any{"path": "a.txt", "op": "replace", "expected_read_revision": fence, "edits": []any{ed("one", "1")}, "content": "x"}),
		"create fenced":      changes(map[string]any{"path": "n.txt", "op": "create", "content": "x", "expected_read_revision": fence}),
		"create edits":       changes(map[string]any{"path": "n.txt", "op": "create", "content": "x", "edits": []any{ed("a", "b")}}),
		"create no content":  changes(map[string]any{"path": "n.txt", "op": "create"}),
		"delete content":     changes(map[string]any{"path": "a.txt", "op": "delete", "expected_read_revision": fence, "content": "x"}),
		"bad revision":       changes(replace("a.txt", "rv1:xyz", ed("one", "1"))),
		"sha as revision":    changes(replace("a.txt", filerev.SHA256([]byte("one one\n")), ed("one", "1"))),
		"bad sha256":         changes(map[string]any{"path": "a.txt", "op": "replace", "expected_sha256": "abc", "edits": []any{ed("one", "1")}}),
		"occurrence 0":       changes(replace("a.txt", fence, map[string]any{"old_text": "one", "new_text": "1", "occurrence": 0})),
		"count 0":            changes(replace("a.txt", fence, map[string]any{"old_text": "one", "new_text": "1", "expected_match_count": 0})),
		"occurrence > count": changes(replace("a.txt", fence, map[string]any{"old_text": "one", "new_text": "1", "occurrence": 3, "expected_match_count": *one(2)})),
		"unknown field":      changes(map[string]any{"path": "a.txt", "op": "delete", "expected_read_revision": fence, "force": true}),
		"same path twice":    changes(replace("a.txt", fence, ed("one one", "1")), replace("./a.txt", fence, ed("one one", "2"))),
		"root":               changes(map[string]any{"path": ".", "op": "create", "content": "x"}),
		"directory":          changes(map[string]any{"path": "dir", "op": "delete", "expected_read_revision": fence}),
		"parent is file":     changes(map[string]any{"path": "b.txt/x", "op": "create", "content": "x"}),
	}
	if err := os.Mkdir(filepath.Join(e.root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, e.root)
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			failed(t, e.call("apply_text_edits", args), failure.InvalidArguments)
			assertUnchanged(t, e.root, before)
		})
	}
}

func TestPathPolicy(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(e.root, "secret-link")); err != nil {
		t.Fatal(err)
	}
	e.write("inner.txt", "inner\n")
	if err := os.Symlink("inner.txt", filepath.Join(e.root, "inner-link")); err != nil {
		t.Fatal(err)
	}
	e.write(".git/config", "[core]\n")
	e.write("ok.txt", "ok\n")
	secretFence := rev("secret\n")
	beforeRoot, beforeOut := snapshot(t, e.root), snapshot(t, outside)
	okChange := replace("ok.txt", rev("ok\n"), ed("ok", "changed"))
	for _, tc := range []struct {
		name string
		c    map[string]any
		kind failure.Kind
	}{
		{"traversal", map[string]any{"path": "../x.txt", "op": "create", "content": "x"}, failure.InvalidArguments},
		{"nested traversal", map[string]any{"path": "a/../../x.txt", "op": "create", "content": "x"}, failure.InvalidArguments},
		{"absolute", map[string]any{"path": filepath.Join(outside, "secret.txt"), "op": "delete", "expected_read_revision": secretFence}, failure.InvalidArguments},
		{"dir symlink escape create", map[string]any{"path": "escape/new.txt", "op": "create", "content": "x"}, failure.PermissionDenied},
		{"dir symlink escape replace", replace("escape/secret.txt", secretFence, ed("secret", "pwned")), failure.PermissionDenied},
		{"file symlink escape", replace("secret-link", secretFence, ed("secret", "pwned")), failure.PermissionDenied},
		{"file symlink inside", replace("inner-link", rev("inner\n"), ed("inner", "x")), failure.InvalidArguments},
		{"git metadata", replace(".git/config", rev("[core]\n"), ed("core", "x")), failure.PermissionDenied},
		{"git metadata create", map[string]any{"path": "sub/.GIT/hooks/pre-commit", "op": "create", "content": "x"}, failure.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed(t, e.call("apply_text_edits", changes(okChange, tc.c)), tc.kind)
			assertUnchanged(t, e.root, beforeRoot)
			assertUnchanged(t, outside, beforeOut)
		})
	}
	t.Run("write_project_file", func(t *testing.T) {
		for _, p := range []string{"../x.txt", "escape/new.txt", "escape/secret.txt", "secret-link", ".git/config", "inner-link"} {
			res := e.call("write_project_file", map[string]any{"path": p, "content": "pwned", "expected_read_revision": secretFence})
			if res.Success {
				t.Fatalf("%s: write succeeded", p)
			}
			assertUnchanged(t, e.root, beforeRoot)
			assertUnchanged(t, outside, beforeOut)
		}
	})
}

func TestDirectorySymlinkAliasIsSamePath(t *testing.T) {
	e := newEnv(t)
	e.write("real/a.txt", "a\n")
	if err := os.Symlink("real", filepath.Join(e.root, "alias")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, e.root)
	res := e.call("apply_text_edits", changes(
		replace("real/a.txt", rev("a\n"), ed("a", "b")),
		replace("alias/a.txt", rev("a\n"), ed("a", "c"))))
	failed(t, res, failure.InvalidArguments)
	assertUnchanged(t, e.root, before)

	// Through the alias alone the edit lands in the real file.
	decode[applyOut](t, e.call("apply_text_edits", changes(replace("alias/a.txt", rev("a\n"), ed("a", "c")))))
	if got := e.read("real/a.txt"); got != "c\n" {
		t.Fatalf("real/a.txt = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(e.root, "alias")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("alias is no longer a symlink: %v %v", fi, err)
	}
}

func TestConflictKindsWriteNothing(t *testing.T) {
	const target = "x := 1\ny := 2\nx := 1\nz := 3\n"
	fence := rev(target)
	occ := func(old string, n int) map[string]any {
		return map[string]any{"old_text": old, "new_text": "_", "occurrence": n}
	}
	count := func(old string, n int) map[string]any {
		return map[string]any{"old_text": old, "new_text": "_", "expected_match_count": n}
	}
	for _, tc := range []struct {
		name       string
		c          map[string]any
		kind       string
		candidates []int
		matches    float64
	}{
		{"multiple_matches", replace("t.go", fence, ed("x := 1", "x := 9")), edit.ConflictMultipleMatches, []int{1, 3}, 2},
		{"multiple_matches_over_count", replace("t.go", fence, count("x := 1", 1)), edit.ConflictMultipleMatches, []int{1, 3}, 2},
		{"match_not_found", replace("t.go", fence, ed("w := 4", "w := 5")), edit.ConflictMatchNotFound, []int{}, 0},
		{"match_not_found_whitespace", replace("t.go", fence, ed("  y := 2  \n", "y := 5\n")), edit.ConflictMatchNotFound, []int{2}, 0},
		{"match_not_found_under_count", replace("t.go", fence, count("x := 1", 3)), edit.ConflictMatchNotFound, []int{1, 3}, 2},
		{"occurrence_out_of_range", replace("t.go", fence, occ("x := 1", 3)), edit.ConflictOccurrenceOutOfRange, []int{1, 3}, 2},
		{"sha256_mismatch", replace("t.go", rev("other"), ed("z := 3", "z := 4")), edit.ConflictSHA256Mismatch, nil, -1},
		{"overlapping_edits", replace("t.go", fence, ed("y := 2\nx", "Y"), ed("x := 1\nz", "Z")), edit.ConflictOverlappingEdits, []int{3}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("t.go", target)
			e.write("first.txt", "first\n")
			e.write("last.txt", "last\n")
			before := snapshot(t, e.root)
			res := e.call("apply_text_edits", changes(
				replace("first.txt", rev("first\n"), ed("first", "FIRST")),
				map[string]any{"path": "new/created.txt", "op": "create", "content": "new\n"},
				tc.c,
				map[string]any{"path": "last.txt", "op": "delete", "expected_read_revision": rev("last\n")}))
			out := conflictOf(t, res, tc.kind)
			if out["change_index"] != 2.0 || out["path"] != "t.go" || out["state_changed"] != false ||
				out["failure_kind"] != "stale_precondition" {
				t.Fatalf("detail = %v", out)
			}
			if tc.candidates != nil {
				if got := lines(out["candidate_lines"]); !slices.Equal(got, tc.candidates) && !(len(got) == 0 && len(tc.candidates) == 0) {
					t.Fatalf("candidate_lines = %v, want %v", got, tc.candidates)
				}
			}
			if tc.matches >= 0 && out["match_count"] != tc.matches {
				t.Fatalf("match_count = %v, want %v", out["match_count"], tc.matches)
			}
			if tc.kind == edit.ConflictOverlappingEdits {
				if got := lines(out["edit_indexes"]); !slices.Equal(got, []int{0, 1}) {
					t.Fatalf("edit_indexes = %v", got)
				}
			}
			assertUnchanged(t, e.root, before)
		})
	}
}

func TestMissingFileAndExistingCreateConflict(t *testing.T) {
	e := newEnv(t)
	e.write("exists.txt", "here\n")
	e.write("other.txt", "other\n")
	before := snapshot(t, e.root)
	other := replace("other.txt", rev("other\n"), ed("other", "OTHER"))

	out := conflictOf(t, e.call("apply_text_edits", changes(other, replace("gone.txt", rev("x"), ed("x", "y")))), edit.ConflictSHA256Mismatch)
	if out["reason"] != edit.ReasonMissing || out["change_index"] != 1.0 || out["path"] != "gone.txt" {
		t.Fatalf("detail = %v", out)
	}
	out = conflictOf(t, e.call("apply_text_edits", changes(other, map[string]any{"path": "gone.txt", "op": "delete", "expected_read_revision": rev("x")})), edit.ConflictSHA256Mismatch)
	if out["reason"] != edit.ReasonMissing {
		t.Fatalf("detail = %v", out)
	}
	out = conflictOf(t, e.call("apply_text_edits", changes(other, map[string]any{"path": "exists.txt", "op": "create", "content": "new"})), edit.ConflictSHA256Mismatch)
	if out["reason"] != edit.ReasonAlreadyExists || out["change_index"] != 1.0 || out["path"] != "exists.txt" {
		t.Fatalf("detail = %v", out)
	}
	assertUnchanged(t, e.root, before)
}

func TestOccurrenceAndExpectedMatchCount(t *testing.T) {
	e := newEnv(t)
	const orig = "a-b-a-b-a\n"
	e.write("f.txt", orig)
	out := decode[applyOut](t, e.call("apply_text_edits", changes(replace("f.txt", rev(orig),
		map[string]any{"old_text": "a", "new_text": "X", "occurrence": 2}))))
	if got := e.read("f.txt"); got != "a-b-X-b-a\n" || out.Files[0].Replacements != 1 {
		t.Fatalf("occurrence: %q %+v", got, out)
	}
	cur := e.read("f.txt")
	out = decode[applyOut](t, e.call("apply_text_edits", changes(replace("f.txt", rev(cur),
		map[string]any{"old_text": "b", "new_text": "YY", "expected_match_count": 2}))))
	if got := e.read("f.txt"); got != "a-YY-X-YY-a\n" || out.Files[0].Replacements != 2 {
		t.Fatalf("expected_match_count: %q %+v", got, out)
	}
	cur = e.read("f.txt")
	decode[applyOut](t, e.call("apply_text_edits", changes(replace("f.txt", rev(cur),
		map[string]any{"old_text": "a", "new_text": "Z", "occurrence": 2, "expected_match_count": 2}))))
	if got := e.read("f.txt"); got != "a-YY-X-YY-Z\n" {
		t.Fatalf("occurrence with count: %q", got)
	}
	// Matches are non-overlapping: "aa" occurs twice in "aaaa", not three times.
	e.write("g.txt", "aaaa")
	decode[applyOut](t, e.call("apply_text_edits", changes(replace("g.txt", rev("aaaa"),
		map[string]any{"old_text": "aa", "new_text": "b", "expected_match_count": 2}))))
	if got := e.read("g.txt"); got != "bb" {
		t.Fatalf("non-overlapping: %q", got)
	}
}

func TestMultipleEditsAreMatchedAgainstTheFencedFile(t *testing.T) {
	e := newEnv(t)
	const orig = "one\ntwo\nthree\n"
	e.write("f.txt", orig)
	// The second edit's old_text only exists after the first edit; edits
	// do not see each other, so this is match_not_found.
	before := snapshot(t, e.root)
	conflictOf(t, e.call("apply_text_edits", changes(replace("f.txt", rev(orig), ed("one", "uno"), ed("uno", "eins")))), edit.ConflictMatchNotFound)
	assertUnchanged(t, e.root, before)
	// Adjacent, non-overlapping edits apply together.
	decode[applyOut](t, e.call("apply_text_edits", changes(replace("f.txt", rev(orig), ed("three\n", "3\n"), ed("one\n", "1\n"), ed("two\n", "2\n")))))
	if got := e.read("f.txt"); got != "1\n2\n3\n" {
		t.Fatalf("content = %q", got)
	}
}

func TestCreateAndDelete(t *testing.T) {
	e := newEnv(t)
	e.write("old.txt", "bye\nbye\n")
	out := decode[applyOut](t, e.call("apply_text_edits", changes(
		map[string]any{"path": "deep/er/new.txt", "op": "create", "content": "hello\nworld"},
		map[string]any{"path": "empty.txt", "op": "create", "content": ""},
		map[string]any{"path": "old.txt", "op": "delete", "expected_sha256": filerev.SHA256([]byte("bye\nbye\n"))})))
	if got := e.read("deep/er/new.txt"); got != "hello\nworld" {
		t.Fatalf("created %q", got)
	}
	if got := e.read("empty.txt"); got != "" {
		t.Fatalf("empty = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(e.root, "old.txt")); !os.IsNotExist(err) {
		t.Fatalf("old.txt still exists: %v", err)
	}
	want := []edit.FileResult{
		{Path: "deep/er/new.txt", Op: "create", Changed: true, ReadRevision: rev("hello\nworld"), SHA256: filerev.SHA256([]byte("hello\nworld")), Bytes: 11, AddedLines: 2},
		{Path: "empty.txt", Op: "create", Changed: true, ReadRevision: rev(""), SHA256: filerev.SHA256(nil), Bytes: 0},
		{Path: "old.txt", Op: "delete", Changed: true, PreviousReadRevision: rev("bye\nbye\n"), RemovedLines: 2},
	}
	if !reflect.DeepEqual(out.Files, want) || !slices.Equal(out.ChangedPaths, []string{"deep/er/new.txt", "empty.txt", "old.txt"}) {
		t.Fatalf("output = %+v", out)
	}
	// No staging files are left behind.
	for p := range snapshot(t, e.root) {
		if strings.Contains(p, ".wc-edit-") {
			t.Fatalf("left-over staging file %s", p)
		}
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	e := newEnv(t)
	const orig = "l1\nl2\nl3\nl4\n"
	e.write("f.txt", orig)
	e.write("gone.txt", "g\n")
	before := snapshot(t, e.root)
	args := changes(
		replace("f.txt", rev(orig), ed("l2\n", "L2\nextra\n"), ed("l4", "L4")),
		map[string]any{"path": "new/n.txt", "op": "create", "content": "n\n"},
		map[string]any{"path": "gone.txt", "op": "delete", "expected_read_revision": rev("g\n")})
	args["dry_run"] = true
	dry := decode[applyOut](t, e.call("apply_text_edits", args))
	assertUnchanged(t, e.root, before)
	if !dry.DryRun || !slices.Equal(dry.ChangedPaths, []string{"f.txt", "new/n.txt", "gone.txt"}) {
		t.Fatalf("dry = %+v", dry)
	}
	f := dry.Files[0]
	wantPreview := "@@ -2,1 +2,2 @@\n-l2\n+L2\n+extra\n@@ -4,1 +5,1 @@\n-l4\n+L4\n"
	if f.Preview != wantPreview || f.AddedLines != 3 || f.RemovedLines != 2 || f.Replacements != 2 {
		t.Fatalf("plan = %+v\npreview %q", f, f.Preview)
	}
	if dry.Files[1].Preview != "@@ -0,0 +1,1 @@\n+n\n" || dry.Files[2].Preview != "@@ -1,1 +0,0 @@\n-g\n" {
		t.Fatalf("create/delete previews %q %q", dry.Files[1].Preview, dry.Files[2].Preview)
	}

	delete(args, "dry_run")
	real := decode[applyOut](t, e.call("apply_text_edits", args))
	if got := e.read("f.txt"); got != "l1\nL2\nextra\nl3\nL4\n" || real.Files[0].ReadRevision != f.ReadRevision || real.Files[0].Preview != "" {
		t.Fatalf("real run: %q %+v", got, real)
	}
}

func TestNoOpReplaceIsNotWritten(t *testing.T) {
	e := newEnv(t)
	e.write("f.txt", "same\n")
	out := decode[applyOut](t, e.call("apply_text_edits", changes(replace("f.txt", rev("same\n"), ed("same", "same")))))
	if out.Files[0].Changed || len(out.ChangedPaths) != 0 || out.Files[0].ReadRevision != rev("same\n") {
		t.Fatalf("output = %+v", out)
	}
}

func TestFileModeIsPreserved(t *testing.T) {
	e := newEnv(t)
	for _, mode := range []fs.FileMode{0o755, 0o600, 0o640} {
		name := fmt.Sprintf("m%o.sh", mode)
		e.write(name, "echo hi\n")
		if err := os.Chmod(filepath.Join(e.root, name), mode); err != nil {
			t.Fatal(err)
		}
		decode[applyOut](t, e.call("apply_text_edits", changes(replace(name, rev("echo hi\n"), ed("hi", "ho")))))
		decode[edit.WriteOutput](t, e.call("write_project_file", map[string]any{"path": name, "content": "echo hu\n", "expected_read_revision": rev("echo ho\n")}))
		fi, err := os.Stat(filepath.Join(e.root, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode || e.read(name) != "echo hu\n" {
			t.Fatalf("%s: mode %v content %q", name, fi.Mode(), e.read(name))
		}
	}
}

func TestConcurrentEditsOfOneFileSerialize(t *testing.T) {
	e := newEnv(t)
	const orig = "value = 0\n"
	for round := 0; round < 20; round++ {
		e.write("c.txt", orig)
		var wg sync.WaitGroup
		results := make([]kernel.Result, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := changes(replace("c.txt", rev(orig), ed("value = 0", fmt.Sprintf("value = %d", i+1))))
				raw, _ := json.Marshal(map[string]any{"project": projectID, "changes": args["changes"]})
				results[i] = e.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "apply_text_edits", Arguments: raw, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
			}()
		}
		wg.Wait()
		winners := 0
		var want string
		for i, res := range results {
			if res.Success {
				winners++
				want = fmt.Sprintf("value = %d\n", i+1)
				continue
			}
			conflictOf(t, res, edit.ConflictSHA256Mismatch)
		}
		if winners != 1 {
			t.Fatalf("round %d: %d calls succeeded", round, winners)
		}
		if got := e.read("c.txt"); got != want {
			t.Fatalf("round %d: content %q, want the winner's %q", round, got, want)
		}
	}
}

func TestConcurrentWritesOfOneFileSerialize(t *testing.T) {
	e := newEnv(t)
	const orig = "v0\n"
	for round := 0; round < 20; round++ {
		e.write("w.txt", orig)
		var wg sync.WaitGroup
		results := make([]kernel.Result, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, _ := json.Marshal(map[string]any{"project": projectID, "path": "w.txt", "content": fmt.Sprintf("v%d\n", i+1), "expected_read_revision": rev(orig)})
				results[i] = e.Kernel.Dispatch(context.Background(), kernel.Call{Tool: "write_project_file", Arguments: raw, Principal: auth.LocalUser(), Source: kernel.SourceInternal})
			}()
		}
		wg.Wait()
		var want string
		winners := 0
		for i, res := range results {
			if res.Success {
				winners++
				want = fmt.Sprintf("v%d\n", i+1)
				continue
			}
			conflictOf(t, res, edit.ConflictSHA256Mismatch)
		}
		if winners != 1 || e.read("w.txt") != want {
			t.Fatalf("round %d: winners %d content %q want %q", round, winners, e.read("w.txt"), want)
		}
	}
}

func TestBounds(t *testing.T) {
	e := newEnv(t)
	e.write("f.txt", "x\n")
	fence := rev("x\n")
	before := snapshot(t, e.root)
	expectInvalid := func(name string, args map[string]any) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			failed(t, e.call("apply_text_edits", args), failure.InvalidArguments)
			assertUnchanged(t, e.root, before)
		})
	}

	var many []map[string]any
	for i := 0; i <= edit.MaxChanges; i++ {
		many = append(many, map[string]any{"path": fmt.Sprintf("n%d.txt", i), "op": "create", "content": "x"})
	}
	expectInvalid("MaxChanges+1", changes(many...))
	var edits []map[string]any
	for i := 0; i <= edit.MaxEditsPerChange; i++ {
		edits = append(edits, ed("x", "y"))
	}
	expectInvalid("MaxEditsPerChange+1", changes(replace("f.txt", fence, edits...)))
	big := strings.Repeat("a", edit.MaxContentBytes+1)
	expectInvalid("MaxContentBytes+1 content", changes(map[string]any{"path": "big.txt", "op": "create", "content": big}))
	expectInvalid("MaxContentBytes+1 old_text", changes(replace("f.txt", fence, ed(big, "y"))))
	expectInvalid("MaxContentBytes+1 new_text", changes(replace("f.txt", fence, ed("x", big))))
	expectInvalid("MaxMatchCount+1 occurrence", changes(replace("f.txt", fence, map[string]any{"old_text": "x", "new_text": "y", "occurrence": edit.MaxMatchCount + 1})))
	expectInvalid("MaxMatchCount+1 count", changes(replace("f.txt", fence, map[string]any{"old_text": "x", "new_text": "y", "expected_match_count": edit.MaxMatchCount + 1})))
	t.Run("write MaxContentBytes+1", func(t *testing.T) {
		failed(t, e.call("write_project_file", map[string]any{"path": "big.txt", "content": big}), failure.InvalidArguments)
		assertUnchanged(t, e.root, before)
	})

	t.Run("limits are inclusive", func(t *testing.T) {
		e := newEnv(t)
		var all []map[string]any
		for i := 0; i < edit.MaxChanges; i++ {
			all = append(all, map[string]any{"path": fmt.Sprintf("n%d.txt", i), "op": "create", "content": "x"})
		}
		all[0]["content"] = big[:edit.MaxContentBytes]
		decode[applyOut](t, e.call("apply_text_edits", changes(all...)))
		var s strings.Builder
		var edits []map[string]any
		for i := 0; i < edit.MaxEditsPerChange; i++ {
			fmt.Fprintf(&s, "line%03d\n", i)
			edits = append(edits, ed(fmt.Sprintf("line%03d\n", i), "L\n"))
		}
		e.write("many.txt", s.String())
		decode[applyOut](t, e.call("apply_text_edits", changes(replace("many.txt", rev(s.String()), edits...))))
		if got := e.read("many.txt"); got != strings.Repeat("L\n", edit.MaxEditsPerChange) {
			t.Fatalf("many.txt = %q", got)
		}
	})

	t.Run("MaxFileBytes", func(t *testing.T) {
		e := newEnv(t)
		atLimit := strings.Repeat("b", edit.MaxFileBytes-1) + "\n"
		e.write("limit.txt", atLimit)
		e.write("over.txt", atLimit+"c")
		before := snapshot(t, e.root)
		res := e.call("apply_text_edits", changes(replace("over.txt", rev(atLimit+"c"), ed("c", "d"))))
		failed(t, res, failure.InvalidArguments)
		// Growing a file past the bound is refused too.
		res = e.call("apply_text_edits", changes(replace("limit.txt", rev(atLimit), ed("\n", "\n\n"))))
		failed(t, res, failure.InvalidArguments)
		res = e.call("write_project_file", map[string]any{"path": "over.txt", "content": "small", "expected_read_revision": rev(atLimit + "c")})
		failed(t, res, failure.InvalidArguments)
		assertUnchanged(t, e.root, before)
		// A file of exactly MaxFileBytes is editable.
		decode[applyOut](t, e.call("apply_text_edits", changes(replace("limit.txt", rev(atLimit), ed("\n", "!")))))
	})

	t.Run("MaxCandidateLines", func(t *testing.T) {
		e := newEnv(t)
		content := strings.Repeat("dup\n", 12)
		e.write("d.txt", content)
		out := conflictOf(t, e.call("apply_text_edits", changes(replace("d.txt", rev(content), ed("dup", "x")))), edit.ConflictMultipleMatches)
		if got := lines(out["candidate_lines"]); !slices.Equal(got, []int{1, 2, 3, 4, 5}) || out["match_count"] != 12.0 {
			t.Fatalf("detail = %v", out)
		}
	})

	t.Run("MaxPreviewBytes", func(t *testing.T) {
		e := newEnv(t)
		args := changes(map[string]any{"path": "p.txt", "op": "create", "content": strings.Repeat("0123456789\n", 1000)})
		args["dry_run"] = true
		out := decode[applyOut](t, e.call("apply_text_edits", args))
		f := out.Files[0]
		if len(f.Preview) > edit.MaxPreviewBytes || len(f.Preview) < edit.MaxPreviewBytes-12 || !f.PreviewTruncated || !strings.HasSuffix(f.Preview, "\n") {
			t.Fatalf("preview %d bytes, truncated %v", len(f.Preview), f.PreviewTruncated)
		}
	})
}

func TestWriteProjectFile(t *testing.T) {
	e := newEnv(t)
	e.write("exists.txt", "old\n")
	write := func(args map[string]any) kernel.Result { return e.call("write_project_file", args) }

	out := decode[edit.WriteOutput](t, write(map[string]any{"path": "a/b/new.txt", "content": "new\n"}))
	if want := (edit.WriteOutput{Path: "a/b/new.txt", Created: true, Changed: true, ReadRevision: rev("new\n"), SHA256: filerev.SHA256([]byte("new\n")), Bytes: 4}); out != want {
		t.Fatalf("create output %+v", out)
	}
	if e.read("a/b/new.txt") != "new\n" {
		t.Fatal("content not written")
	}

	before := snapshot(t, e.root)
	c := conflictOf(t, write(map[string]any{"path": "exists.txt", "content": "x"}), edit.ConflictSHA256Mismatch)
	if c["reason"] != edit.ReasonUnfencedOverwrite || c["path"] != "exists.txt" {
		t.Fatalf("detail %v", c)
	}
	c = conflictOf(t, write(map[string]any{"path": "exists.txt", "content": "x", "expected_read_revision": rev("stale")}), edit.ConflictSHA256Mismatch)
	if c["reason"] != edit.ReasonFenceMismatch {
		t.Fatalf("detail %v", c)
	}
	c = conflictOf(t, write(map[string]any{"path": "exists.txt", "content": "x", "expected_sha256": filerev.SHA256([]byte("stale"))}), edit.ConflictSHA256Mismatch)
	if c["reason"] != edit.ReasonFenceMismatch {
		t.Fatalf("detail %v", c)
	}
	c = conflictOf(t, write(map[string]any{"path": "missing.txt", "content": "x", "expected_read_revision": rev("old\n")}), edit.ConflictSHA256Mismatch)
	if c["reason"] != edit.ReasonMissing {
		t.Fatalf("detail %v", c)
	}
	failed(t, write(map[string]any{"path": "exists.txt", "content": "x", "expected_read_revision": "nope"}), failure.InvalidArguments)
	failed(t, write(map[string]any{"path": "a", "content": "x", "expected_read_revision": rev("x")}), failure.InvalidArguments)
	failed(t, write(map[string]any{"path": "exists.txt/child", "content": "x"}), failure.InvalidArguments)
	failed(t, write(map[string]any{"path": "exists.txt"}), failure.InvalidArguments) // content is required
	assertUnchanged(t, e.root, before)

	out = decode[edit.WriteOutput](t, write(map[string]any{"path": "exists.txt", "content": "fresh\n", "expected_sha256": filerev.SHA256([]byte("old\n"))}))
	if out.Created || !out.Changed || out.ReadRevision != rev("fresh\n") || e.read("exists.txt") != "fresh\n" {
		t.Fatalf("overwrite output %+v", out)
	}
	out = decode[edit.WriteOutput](t, write(map[string]any{"path": "exists.txt", "content": "fresh\n", "expected_read_revision": rev("fresh\n")}))
	if out.Created || out.Changed {
		t.Fatalf("identical overwrite output %+v", out)
	}
}

func TestPermissionFailureWritesNothing(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores permission bits")
	}
	e := newEnv(t)
	e.write("ok.txt", "ok\n")
	e.write("locked/f.txt", "f\n")
	locked := filepath.Join(e.root, "locked")
	if err := os.Chmod(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	before := snapshot(t, e.root)
	for _, c := range []map[string]any{
		replace("locked/f.txt", rev("f\n"), ed("f", "g")),
		{"path": "locked/f.txt", "op": "delete", "expected_read_revision": rev("f\n")},
		{"path": "locked/sub/new.txt", "op": "create", "content": "x"},
	} {
		res := e.call("apply_text_edits", changes(replace("ok.txt", rev("ok\n"), ed("ok", "OK")), c))
		out := failed(t, res, failure.PermissionDenied)
		if out["state_changed"] != false || out["change_index"] != 1.0 || out["path"] != c["path"] {
			t.Fatalf("%v: detail %v", c, out)
		}
		assertUnchanged(t, e.root, before)
	}
}

// registerLocal registers the edit tools over the in-process runner.
func registerLocal(reg *kernel.Registry) { edit.Register(reg, workspace.LocalOnly(&runner.Local{})) }
