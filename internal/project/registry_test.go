package project_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectdb"
)

var regTime = time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)

func openRegistry(t *testing.T, dbPath string) *project.Registry {
	t.Helper()
	st, err := projectdb.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return project.NewRegistry(st, func() time.Time { return regTime })
}

func canonicalTemp(t *testing.T) string {
	t.Helper()
	d, err := project.CanonicalRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := openRegistry(t, filepath.Join(t.TempDir(), projectdb.FileName))
	base := canonicalTemp(t)
	demo := filepath.Join(base, "demo")
	other := filepath.Join(base, "other")
	for _, d := range []string{demo, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	p, err := r.Register(ctx, "demo", demo)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	want := project.Project{ID: "agent:local:demo", Name: "demo", Root: demo, AddedAt: regTime}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("Register (-want +got):\n%s", diff)
	}

	got, err := r.Get(ctx, "agent:local:demo")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}

	// Same name, same directory (given differently): idempotent.
	again, err := r.Register(ctx, "demo", filepath.Join(demo, "..", "demo")+string(filepath.Separator))
	if err != nil {
		t.Fatalf("Register again: %v", err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("idempotent Register (-want +got):\n%s", diff)
	}

	// Same name, another directory: conflict, nothing changes.
	_, err = r.Register(ctx, "demo", other)
	wantKind(t, "Register taken name", err, failure.Conflict)

	// Empty name: derived from the directory.
	o, err := r.Register(ctx, "", other)
	if err != nil {
		t.Fatalf("Register without a name: %v", err)
	}
	if o.ID != "agent:local:other" || o.Name != "other" {
		t.Errorf("derived project = %+v, want name other", o)
	}

	list, err := r.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]project.Project{want, o}, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	if err := r.Unregister(ctx, want.ID); err != nil {
		t.Fatalf("Unregister: %v", err)
	}
	_, err = r.Get(ctx, want.ID)
	wantKind(t, "Get after Unregister", err, failure.UnknownProject)
	if err != nil && !strings.Contains(failure.MessageOf(err), want.ID) {
		t.Errorf("message %q does not name %s", failure.MessageOf(err), want.ID)
	}
	wantKind(t, "Unregister twice", r.Unregister(ctx, want.ID), failure.UnknownProject)
	if _, err := os.Stat(demo); err != nil {
		t.Errorf("Unregister touched the project directory: %v", err)
	}
	// Get takes exact ids only.
	_, err = r.Get(ctx, "other")
	wantKind(t, "Get by bare name", err, failure.UnknownProject)
}

func TestRegisterCanonicalizesSymlinkedRoot(t *testing.T) {
	ctx := context.Background()
	r := openRegistry(t, filepath.Join(t.TempDir(), projectdb.FileName))
	base := canonicalTemp(t)
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p, err := r.Register(ctx, "", link)
	if err != nil {
		t.Fatalf("Register via symlink: %v", err)
	}
	if p.Root != real || p.Name != "real" {
		t.Errorf("Register via symlink = %+v, want root %s named real", p, real)
	}
}

func TestRegisterInvalid(t *testing.T) {
	ctx := context.Background()
	r := openRegistry(t, filepath.Join(t.TempDir(), projectdb.FileName))
	base := canonicalTemp(t)
	file := filepath.Join(base, "file.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ what, name, dir string }{
		{"bad name", "has space", base},
		{"name with colon", "a:b", base},
		{"name starting with dot", ".hidden", base},
		{"long name", strings.Repeat("n", 65), base},
		{"missing dir", "x", filepath.Join(base, "missing")},
		{"file, not dir", "x", file},
		{"empty dir", "x", ""},
	}
	for _, c := range cases {
		_, err := r.Register(ctx, c.name, c.dir)
		wantKind(t, c.what, err, failure.InvalidArguments)
	}
	list, err := r.List(ctx)
	if err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v after refused registrations, want none", list, err)
	}
}

func TestRegistryPersistsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), projectdb.FileName)
	dir := canonicalTemp(t)

	st, err := projectdb.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	r := project.NewRegistry(st, func() time.Time { return regTime })
	p, err := r.Register(ctx, "kept", dir)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	r = openRegistry(t, dbPath)
	got, err := r.Get(ctx, p.ID)
	if err != nil {
		t.Fatalf("Get after reopen: %v", err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
}

func TestParseSpec(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ spec, name, dir string }{
		{"/src/myrepo", "myrepo", "/src/myrepo"},
		{"web=/src/myrepo", "web", "/src/myrepo"},
		{"my.proj=../x", "my.proj", "../x"},
		{"web=", "web", ""},
		{"/data/a=b", "a-b", "/data/a=b"},           // "/data/a" is no name
		{"./x=y", "x-y", "./x=y"},                   // "./x" is no name
		{"bad name=/src/r", "r", "bad name=/src/r"}, // "bad name" is no name
		{".", project.NameFromDir(wd), "."},
		{"/src/my repo!", "my-repo-", "/src/my repo!"},
	}
	for _, c := range cases {
		name, dir := project.ParseSpec(c.spec)
		if name != c.name || dir != c.dir {
			t.Errorf("ParseSpec(%q) = %q, %q; want %q, %q", c.spec, name, dir, c.name, c.dir)
		}
	}
}

func wantKind(t *testing.T, what string, err error, k failure.Kind) {
	t.Helper()
	if got := failure.KindOf(err); got != k {
		t.Errorf("%s: kind %q (%v), want %q", what, got, err, k)
	}
}

func TestRegistrySandboxMode(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), projectdb.FileName)
	r := openRegistry(t, db)
	dir := canonicalTemp(t)
	_, err := r.RegisterSandboxed(ctx, "demo", dir, "none")
	if !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("unknown mode: %v", err)
	}
	if ps, _ := r.List(ctx); len(ps) != 0 {
		t.Fatalf("a project was registered with an unknown mode: %+v", ps)
	}
	p, err := r.RegisterSandboxed(ctx, "demo", dir, "read-only")
	if err != nil || p.Sandbox != "read-only" {
		t.Fatalf("register read-only: %+v %v", p, err)
	}
	// Again without a mode keeps it; with one sets it.
	if p, err = r.Register(ctx, "demo", dir); err != nil || p.Sandbox != "read-only" {
		t.Fatalf("re-register without a mode: %+v %v", p, err)
	}
	if p, err = r.RegisterSandboxed(ctx, "demo", dir, "off"); err != nil || p.Sandbox != "off" || !p.AddedAt.Equal(regTime.Round(0)) {
		t.Fatalf("re-register with off: %+v %v", p, err)
	}
	if _, err = r.RegisterSandboxed(ctx, "demo", dir, "bogus"); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("re-register with an unknown mode: %v", err)
	}
	r2 := openRegistry(t, db)
	if got, err := r2.Get(ctx, p.ID); err != nil || got.Sandbox != "off" {
		t.Fatalf("stored mode: %+v %v", got, err)
	}
}
