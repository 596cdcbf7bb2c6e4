package auth_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
)

func TestEnsureAdmin(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	path := filepath.Join(e.dir, "nested", auth.AdminTokenFile)

	raw, created, err := e.svc.EnsureAdmin(ctx, path)
	if err != nil {
		t.Fatalf("EnsureAdmin: %v", err)
	}
	if !created || !auth.WellFormedToken(raw) {
		t.Fatalf("EnsureAdmin = %q, created=%v; want a new well-formed token", raw, created)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("admin-token mode %o, want 600", mode)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(content) != raw+"\n" {
		t.Errorf("admin-token content %q, want the token and a newline", content)
	}
	leftovers, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if err != nil || len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v %v", leftovers, err)
	}

	p, err := e.svc.Authenticate(ctx, raw)
	if err != nil {
		t.Fatalf("Authenticate admin token: %v", err)
	}
	if p.Kind != auth.KindAPIToken || p.Owner != auth.DefaultOwner || !p.Has(auth.ScopeAdmin) {
		t.Errorf("admin principal = %+v, want an admin API token of %q", p, auth.DefaultOwner)
	}

	again, created, err := e.svc.EnsureAdmin(ctx, path)
	if err != nil {
		t.Fatalf("second EnsureAdmin: %v", err)
	}
	if created || again != raw {
		t.Errorf("second EnsureAdmin = %q, created=%v; want the same token, not created", again, created)
	}
	list, err := e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != auth.AdminTokenName || list[0].ID != p.ID {
		t.Errorf("tokens after two EnsureAdmin calls = %+v, want exactly the admin token", list)
	}
	if bytes.Contains(e.dbBytes(t), []byte(raw)) {
		t.Errorf("auth.db files contain the admin token")
	}
}

func TestEnsureAdminTightensMode(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	path := filepath.Join(e.dir, auth.AdminTokenFile)
	if err := os.WriteFile(path, []byte("  wc_pat_existing \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // defeat the umask
		t.Fatal(err)
	}
	raw, created, err := e.svc.EnsureAdmin(ctx, path)
	if err != nil || created || raw != "wc_pat_existing" {
		t.Fatalf("EnsureAdmin over an existing file = %q, %v, %v; want its trimmed contents", raw, created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Errorf("mode after EnsureAdmin = %o, want 600", mode)
	}
	if list, err := e.svc.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListTokens = %v, %v; want no token created", list, err)
	}
}

func TestEnsureAdminRejectsBadFile(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	empty := filepath.Join(e.dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "adir")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(e.dir, "target")
	if err := os.WriteFile(target, []byte("wc_pat_x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{empty, dir, link} {
		raw, created, err := e.svc.EnsureAdmin(ctx, path)
		if err == nil || raw != "" || created {
			t.Errorf("EnsureAdmin(%s) = %q, %v, %v; want an error", filepath.Base(path), raw, created, err)
		}
	}
	if list, err := e.svc.ListTokens(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListTokens = %v, %v; want no token created", list, err)
	}
}

func TestEnsureAdminConcurrent(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	path := filepath.Join(e.dir, auth.AdminTokenFile)
	const n = 8
	var wg sync.WaitGroup
	raws := make([]string, n)
	createds := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { raws[i], createds[i], errs[i] = e.svc.EnsureAdmin(ctx, path) })
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("EnsureAdmin #%d: %v", i, errs[i])
		}
		if raws[i] != raws[0] {
			t.Errorf("EnsureAdmin #%d returned a different token", i)
		}
		if createds[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d callers report created, want exactly 1", winners)
	}
	content, err := os.ReadFile(path)
	if err != nil || string(content) != raws[0]+"\n" {
		t.Errorf("file = %q, %v; want the returned token", content, err)
	}
	list, err := e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, tok := range list {
		if !tok.Revoked() {
			live++
		}
	}
	if live != 1 {
		t.Errorf("%d live admin tokens after concurrent first starts, want 1", live)
	}
	if _, err := e.svc.Authenticate(ctx, raws[0]); err != nil {
		t.Errorf("the winning token does not authenticate: %v", err)
	}
}

func TestEnsureAdminPropagatesStoreErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, auth.AdminTokenFile)
	raw, created, err := e.svc.EnsureAdmin(ctx, path)
	if err == nil || raw != "" || created {
		t.Fatalf("EnsureAdmin on a closed store = %q, %v, %v; want an error", raw, created, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("admin-token written although no token was stored: %v", err)
	}
}
