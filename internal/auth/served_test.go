package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

// TestServedBootstrap: a serving process records the digest of its
// bootstrap credential (0600, never the value), a verb's Service built
// from that record accepts exactly that credential as the bootstrap admin
// and its own stored tokens as themselves, and a server without one
// removes the record.
func TestServedBootstrap(t *testing.T) {
	ctx := context.Background()
	const boot = "served-SECRET-0123456789-abcdef"
	path := filepath.Join(t.TempDir(), auth.ServedBootstrapFile)
	if d, err := auth.ReadServedBootstrap(path); err != nil || d != "" {
		t.Fatalf("no record: %q %v", d, err)
	}
	if err := auth.RecordServedBootstrap(path, boot); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(b), boot) {
		t.Fatalf("the record holds the credential, or cannot be read: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode: %v %v", fi.Mode(), err)
	}
	digest, err := auth.ReadServedBootstrap(path)
	if err != nil || digest != auth.BootstrapDigest(boot) {
		t.Fatalf("read back %q %v", digest, err)
	}
	e := newEnv(t, auth.Options{BootstrapDigest: digest})
	if p, err := e.svc.Authenticate(ctx, boot); err != nil || p.Kind != auth.KindBootstrap || p.ID != auth.BootstrapID {
		t.Fatalf("the served credential: %+v %v", p, err)
	}
	raw, tok, err := e.svc.CreateToken(ctx, "agent", "alice", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(ctx, raw); err != nil || p.Kind != auth.KindAPIToken || p.ID != tok.ID || p.Owner != "alice" {
		t.Fatalf("a stored token next to the served credential: %+v %v", p, err)
	}
	for _, other := range []string{boot + "x", "another-long-credential-value"} {
		_, err := e.svc.Authenticate(ctx, other)
		wantKind(t, other, err, failure.Unauthenticated)
	}
	for _, bad := range []string{"zz", digest[:10], digest + "00"} {
		_, err := auth.NewService(nil, auth.Options{BootstrapDigest: bad})
		wantKind(t, "digest "+bad, err, failure.InvalidArguments)
	}
	if err := auth.RecordServedBootstrap(path, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a server without a bootstrap credential left the record: %v", err)
	}
	if err := auth.RecordServedBootstrap(path, ""); err != nil {
		t.Fatalf("removing a missing record: %v", err)
	}
}
