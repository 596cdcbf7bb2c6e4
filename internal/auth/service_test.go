package auth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authdb"
	"github.com/webcodex/webcodex/internal/failure"
)

// env is a Service over a real auth.db in a temporary directory.
type env struct {
	dir   string
	store *authdb.Store
	svc   *auth.Service
	clock *clock
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newEnv(t *testing.T, opts auth.Options) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := authdb.Open(context.Background(), filepath.Join(dir, authdb.FileName))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{now: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	if opts.Now == nil {
		opts.Now = c.Now
	}
	svc, err := auth.NewService(st, opts)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	return &env{dir: dir, store: st, svc: svc, clock: c}
}

// dbBytes returns the concatenated bytes of the database file and its WAL
// and shared-memory companions, so that nothing committed escapes the scan.
func (e *env) dbBytes(t *testing.T) []byte {
	t.Helper()
	var all []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(e.dir, authdb.FileName+suffix))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func wantKind(t *testing.T, what string, err error, k failure.Kind) {
	t.Helper()
	if got := failure.KindOf(err); got != k {
		t.Errorf("%s: kind %q (%v), want %q", what, got, err, k)
	}
}

func TestTokenLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	created := e.clock.Now()

	raw, tok, err := e.svc.CreateToken(ctx, "ci bot", "team-a",
		[]auth.Scope{auth.ScopeJobRun, auth.ScopeProjectRead, auth.ScopeJobRun})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if !strings.HasPrefix(raw, auth.TokenPrefix) || len(raw) != len(auth.TokenPrefix)+43 || !auth.WellFormedToken(raw) {
		t.Errorf("raw token %q: want %s + 43 base64url characters", raw, auth.TokenPrefix)
	}
	if !auth.ValidTokenID(tok.ID) {
		t.Errorf("token id %q: want tok_ + 16 hex", tok.ID)
	}
	want := auth.Token{
		ID: tok.ID, Name: "ci bot", Owner: "team-a",
		Scopes:    []auth.Scope{auth.ScopeProjectRead, auth.ScopeJobRun}, // deduplicated, canonical order
		CreatedAt: created,
		Kind:      auth.KindAPIToken,
	}
	if diff := cmp.Diff(want, tok); diff != "" {
		t.Errorf("CreateToken record (-want +got):\n%s", diff)
	}

	list, err := e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if diff := cmp.Diff([]auth.Token{want}, list); diff != "" {
		t.Errorf("ListTokens (-want +got):\n%s", diff)
	}

	e.clock.Advance(time.Minute)
	p, err := e.svc.Authenticate(ctx, raw)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	wantP := auth.Principal{Kind: auth.KindAPIToken, ID: tok.ID, Owner: "team-a", Scopes: want.Scopes}
	if diff := cmp.Diff(wantP, p); diff != "" {
		t.Errorf("principal (-want +got):\n%s", diff)
	}
	if !p.Has(auth.ScopeJobRun) || p.Has(auth.ScopeProjectWrite) {
		t.Errorf("principal scopes %v: want job:run without project:write", p.Scopes)
	}

	list, err = e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if got := list[0].LastUsedAt; got == nil || !got.Equal(e.clock.Now()) {
		t.Errorf("LastUsedAt = %v after Authenticate, want %v", got, e.clock.Now())
	}

	e.clock.Advance(time.Minute)
	revokedAt := e.clock.Now()
	r, err := e.svc.RevokeToken(ctx, tok.ID)
	if err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if r.RevokedAt == nil || !r.RevokedAt.Equal(revokedAt) || !r.Revoked() {
		t.Errorf("RevokedAt = %v, want %v", r.RevokedAt, revokedAt)
	}
	_, err = e.svc.Authenticate(ctx, raw)
	wantKind(t, "Authenticate revoked token", err, failure.Unauthenticated)

	e.clock.Advance(time.Minute)
	r, err = e.svc.RevokeToken(ctx, tok.ID)
	if err != nil {
		t.Fatalf("RevokeToken again: %v, want idempotent success", err)
	}
	if r.RevokedAt == nil || !r.RevokedAt.Equal(revokedAt) {
		t.Errorf("RevokedAt after second revoke = %v, want first %v", r.RevokedAt, revokedAt)
	}

	// The raw token never reaches the database; its hash does.
	db := e.dbBytes(t)
	if bytes.Contains(db, []byte(raw)) {
		t.Errorf("auth.db files contain the raw token")
	}
	if bytes.Contains(db, []byte(raw[len(auth.TokenPrefix):])) {
		t.Errorf("auth.db files contain the token secret")
	}
	if !bytes.Contains(db, []byte(auth.HashToken(raw))) {
		t.Errorf("auth.db files do not contain the token hash; the scan would not see stored values")
	}
}

func TestTokensAreDistinct(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raws := map[string]bool{}
	ids := map[string]bool{}
	for range 20 {
		raw, tok, err := e.svc.CreateToken(ctx, "t", "local", []auth.Scope{auth.ScopeRuntimeRead})
		if err != nil {
			t.Fatal(err)
		}
		if raws[raw] || ids[tok.ID] {
			t.Fatalf("duplicate token or id after %d tokens", len(raws))
		}
		raws[raw], ids[tok.ID] = true, true
	}
}

func TestCreateTokenInvalid(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	read := []auth.Scope{auth.ScopeProjectRead}
	cases := []struct {
		name, tokName, owner string
		scopes               []auth.Scope
		msgHas               string
	}{
		{"unknown scope", "x", "local", []auth.Scope{auth.ScopeProjectRead, "project:delete"}, `"project:delete"`},
		{"empty scopes", "x", "local", []auth.Scope{}, "scope"},
		{"nil scopes", "x", "local", nil, "scope"},
		{"empty scope string", "x", "local", []auth.Scope{""}, `""`},
		{"empty name", "", "local", read, "name"},
		{"long name", strings.Repeat("n", auth.MaxTokenName+1), "local", read, "name"},
		{"control in name", "a\nb", "local", read, "name"},
		{"padded name", " a", "local", read, "name"},
		{"invalid utf8 name", "\xff", "local", read, "name"},
		{"empty owner", "x", "", read, "owner"},
		{"long owner", "x", strings.Repeat("o", auth.MaxOwner+1), read, "owner"},
	}
	for _, c := range cases {
		raw, _, err := e.svc.CreateToken(ctx, c.tokName, c.owner, c.scopes)
		wantKind(t, c.name, err, failure.InvalidArguments)
		if raw != "" {
			t.Errorf("%s: returned a raw token with an error", c.name)
		}
		if msg := failure.MessageOf(err); !strings.Contains(msg, c.msgHas) {
			t.Errorf("%s: message %q does not mention %s", c.name, msg, c.msgHas)
		}
	}
	// 64 characters (not bytes) is the name limit.
	if _, _, err := e.svc.CreateToken(ctx, strings.Repeat("é", auth.MaxTokenName), "local", read); err != nil {
		t.Errorf("64-character name: %v, want ok", err)
	}
	list, err := e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("ListTokens = %d tokens, want only the valid one", len(list))
	}
}

func TestRevokeTokenErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	_, err := e.svc.RevokeToken(ctx, "tok_0123456789abcdef")
	wantKind(t, "revoke unknown id", err, failure.NotFound)
	for _, id := range []string{"", "bootstrap", "tok_", "tok_0123456789ABCDEF", "tok_0123456789abcde", "x_0123456789abcdef"} {
		_, err := e.svc.RevokeToken(ctx, id)
		wantKind(t, "revoke malformed id "+id, err, failure.InvalidArguments)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raw, _, err := e.svc.CreateToken(ctx, "x", "local", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	unknown, _, err := e.svc.CreateToken(ctx, "y", "local", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	// Make "unknown" a well-formed token that is not in the store by
	// changing one character of its secret.
	b := []byte(unknown)
	i := len(auth.TokenPrefix)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	unknown = string(b)
	if !auth.WellFormedToken(unknown) {
		t.Fatalf("test token %q is not well formed", unknown)
	}
	for name, cred := range map[string]string{
		"empty":         "",
		"garbage":       "hello",
		"prefix only":   auth.TokenPrefix,
		"too short":     raw[:len(raw)-1],
		"too long":      raw + "A",
		"bad alphabet":  raw[:len(raw)-1] + "+",
		"wrong prefix":  "wc_pxt_" + raw[len(auth.TokenPrefix):],
		"padded":        " " + raw,
		"unknown token": unknown,
		"hash":          auth.HashToken(raw),
	} {
		_, err := e.svc.Authenticate(ctx, cred)
		wantKind(t, name, err, failure.Unauthenticated)
		if cred != "" && strings.Contains(err.Error(), cred) {
			t.Errorf("%s: error %q echoes the credential", name, err)
		}
	}
}

func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	const boot = "boot-SECRET-0123456789-abcdefXYZ"
	e := newEnv(t, auth.Options{Bootstrap: boot})
	if !e.svc.BootstrapEnabled() {
		t.Fatal("BootstrapEnabled = false")
	}
	p, err := e.svc.Authenticate(ctx, boot)
	if err != nil {
		t.Fatalf("Authenticate bootstrap: %v", err)
	}
	want := auth.Principal{Kind: auth.KindBootstrap, ID: auth.BootstrapID, Owner: auth.DefaultOwner, Scopes: []auth.Scope{auth.ScopeAdmin}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("bootstrap principal (-want +got):\n%s", diff)
	}
	for _, near := range []string{boot[:len(boot)-1], boot + "Z", strings.ToLower(boot), " " + boot} {
		_, err := e.svc.Authenticate(ctx, near)
		wantKind(t, "near-miss bootstrap "+near, err, failure.Unauthenticated)
	}

	// Ordinary tokens still work next to the bootstrap credential.
	raw, tok, err := e.svc.CreateToken(ctx, "x", "local", []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(ctx, raw); err != nil || p.ID != tok.ID {
		t.Errorf("Authenticate token with bootstrap set = %+v, %v", p, err)
	}

	// The bootstrap credential is never stored: not as a token, not in any
	// byte of the database files, and neither is the raw token.
	list, err := e.svc.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != tok.ID {
		t.Errorf("ListTokens = %+v, want only %s", list, tok.ID)
	}
	db := e.dbBytes(t)
	for what, secret := range map[string]string{"bootstrap credential": boot, "raw token": raw} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("auth.db files contain the %s", what)
		}
	}
	if !bytes.Contains(db, []byte(tok.ID)) {
		t.Errorf("auth.db files do not contain the token id; the scan would not see stored values")
	}
}

func TestBootstrapValidation(t *testing.T) {
	for name, v := range map[string]string{
		"short":      "short-secret",
		"space":      "abcdefgh ijklmnopqrstu",
		"newline":    "abcdefghijklmnopqrstu\n",
		"control":    "abcdefghijkl\x01mnopqrstu",
		"just short": strings.Repeat("x", auth.MinBootstrapLen-1),
	} {
		_, err := auth.NewService(nil, auth.Options{Bootstrap: v})
		wantKind(t, name, err, failure.InvalidArguments)
		if err != nil && strings.Contains(err.Error(), strings.TrimSpace(v)) {
			t.Errorf("%s: error %q contains the bootstrap value", name, err)
		}
	}
	svc, err := auth.NewService(nil, auth.Options{Bootstrap: strings.Repeat("x", auth.MinBootstrapLen)})
	if err != nil || !svc.BootstrapEnabled() {
		t.Errorf("minimum-length bootstrap: %v", err)
	}
	svc, err = auth.NewService(nil, auth.Options{})
	if err != nil || svc.BootstrapEnabled() {
		t.Errorf("no bootstrap: enabled=%v err=%v", svc != nil && svc.BootstrapEnabled(), err)
	}
}

func TestLastUsedGranularity(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raw, _, err := e.svc.CreateToken(ctx, "x", "local", []auth.Scope{auth.ScopeRuntimeRead})
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		t.Helper()
		list, err := e.svc.ListTokens(ctx)
		if err != nil || len(list) != 1 || list[0].LastUsedAt == nil {
			t.Fatalf("ListTokens = %+v, %v; want one token with LastUsedAt", list, err)
		}
		return *list[0].LastUsedAt
	}
	first := e.clock.Now()
	if _, err := e.svc.Authenticate(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(first) {
		t.Fatalf("LastUsedAt = %v, want %v", got, first)
	}
	e.clock.Advance(auth.LastUsedGranularity - time.Second)
	if _, err := e.svc.Authenticate(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(first) {
		t.Errorf("LastUsedAt = %v within the granularity, want unchanged %v", got, first)
	}
	e.clock.Advance(time.Second)
	if _, err := e.svc.Authenticate(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(e.clock.Now()) {
		t.Errorf("LastUsedAt = %v after the granularity, want %v", got, e.clock.Now())
	}
}

// faultyStore fails selected operations of a real store.
type faultyStore struct {
	auth.Store
	findErr, touchErr error
}

func (f faultyStore) FindByHash(ctx context.Context, hash string) (auth.Token, error) {
	if f.findErr != nil {
		return auth.Token{}, f.findErr
	}
	return f.Store.FindByHash(ctx, hash)
}

func (f faultyStore) Touch(ctx context.Context, id string, at time.Time) error {
	if f.touchErr != nil {
		return f.touchErr
	}
	return f.Store.Touch(ctx, id, at)
}

func TestAuthenticateStoreFailures(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{})
	raw, tok, err := e.svc.CreateToken(ctx, "x", "local", []auth.Scope{auth.ScopeRuntimeRead})
	if err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	svc, err := auth.NewService(faultyStore{Store: e.store, touchErr: errors.New("disk full")},
		auth.Options{Now: e.clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, raw)
	if err != nil || p.ID != tok.ID {
		t.Fatalf("Authenticate with failing Touch = %+v, %v; want success", p, err)
	}
	if !strings.Contains(logs.String(), tok.ID) || !strings.Contains(logs.String(), "disk full") {
		t.Errorf("log %q does not report the failed update for %s", logs.String(), tok.ID)
	}
	if strings.Contains(logs.String(), raw) {
		t.Errorf("log contains the raw token")
	}

	svc, err = auth.NewService(faultyStore{Store: e.store, findErr: errors.New("database is locked")}, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, raw)
	wantKind(t, "Authenticate with failing store", err, failure.Unavailable)
}

func TestFingerprint(t *testing.T) {
	ctx := context.Background()
	const boot = "bootstrap-credential-for-tests"
	e := newEnv(t, auth.Options{Bootstrap: boot})
	rawA, _, err := e.svc.CreateToken(ctx, "a", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead})
	if err != nil {
		t.Fatal(err)
	}
	rawB, _, err := e.svc.CreateToken(ctx, "b", "someone-else", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	pa, err := e.svc.Authenticate(ctx, rawA)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := e.svc.Authenticate(ctx, rawB)
	if err != nil {
		t.Fatal(err)
	}
	pboot, err := e.svc.Authenticate(ctx, boot)
	if err != nil {
		t.Fatal(err)
	}
	local := auth.LocalUser()

	fp := pa.AuthorityFingerprint()
	if len(fp) != 64 || strings.Trim(fp, "0123456789abcdef") != "" {
		t.Errorf("fingerprint %q: want 64 lowercase hex digits", fp)
	}
	for name, p := range map[string]auth.Principal{"bootstrap": pboot, "local user": local} {
		if got := p.AuthorityFingerprint(); got != fp {
			t.Errorf("%s fingerprint %s, want the same as another local credential %s", name, got, fp)
		}
	}
	if again := auth.Fingerprint(auth.DefaultOwner); again != fp {
		t.Errorf("Fingerprint not stable: %s then %s", fp, again)
	}
	if pb.AuthorityFingerprint() == fp {
		t.Errorf("different owners share fingerprint %s", fp)
	}
	if auth.Fingerprint("") == auth.Fingerprint("local") || auth.Fingerprint("ab") == auth.Fingerprint("a") {
		t.Errorf("distinct owners collide")
	}
}

// TestTokenToolProfile: a token's tool profile is checked at creation (a
// refused one creates nothing), stored, and carried by its principal.
func TestTokenToolProfile(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, auth.Options{CheckTools: func(tools []string) error {
		for _, n := range tools {
			if n != "read_files" && n != "core" {
				return errors.New("unknown tool " + n)
			}
		}
		return nil
	}})
	for _, bad := range [][]string{{"read_files", "nope"}, {"read_files", "read_files"}, {""}} {
		_, _, err := e.svc.CreateTokenWithTools(ctx, "t", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, bad)
		if !failure.Is(err, failure.InvalidArguments) {
			t.Fatalf("tools %q: %v", bad, err)
		}
	}
	if _, _, err := e.svc.CreateTokenWithTools(ctx, "t", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, []string{"nope"}); err == nil ||
		!strings.Contains(err.Error(), "unknown tool nope") {
		t.Fatalf("the refusal does not name the tool: %v", err)
	}
	if toks, _ := e.svc.ListTokens(ctx); len(toks) != 0 {
		t.Fatalf("refused profiles created %d tokens", len(toks))
	}
	raw, tok, err := e.svc.CreateTokenWithTools(ctx, "t", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, []string{"read_files"})
	if err != nil || !slices.Equal(tok.Tools, []string{"read_files"}) {
		t.Fatalf("create: %+v %v", tok, err)
	}
	p, err := e.svc.Authenticate(ctx, raw)
	if err != nil || !slices.Equal(p.Tools, []string{"read_files"}) {
		t.Fatalf("principal: %+v %v", p, err)
	}
	// A service that cannot check profiles creates none.
	plain := newEnv(t, auth.Options{})
	if _, _, err := plain.svc.CreateTokenWithTools(ctx, "t", auth.DefaultOwner, []auth.Scope{auth.ScopeProjectRead}, []string{"core"}); !failure.Is(err, failure.InvalidArguments) {
		t.Fatalf("unchecked profile: %v", err)
	}
}
