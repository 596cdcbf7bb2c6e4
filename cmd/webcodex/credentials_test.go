package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/project"
)

// created is the --json output of a token-making command.
type created struct {
	Token  string
	Record auth.Token
}

func mustCreate(t *testing.T, args ...string) created {
	t.Helper()
	var c created
	out := mustRun(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), &c); err != nil || !strings.HasPrefix(c.Token, auth.TokenPrefix) {
		t.Fatalf("%v: %v %s", args, err, out)
	}
	return c
}

func tokenCount(t *testing.T, data string) int {
	t.Helper()
	var l struct{ Tokens []auth.Token }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "list", "--json")), &l)
	return len(l.Tokens)
}

func TestProjectCredentialAndShareCommands(t *testing.T) {
	data := t.TempDir()
	mustRun(t, "--data-dir", data, "project", "add", "demo="+t.TempDir())
	ctx := context.Background()
	st, err := app.OpenStores(ctx, app.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := project.NewRegistry(st.Projects, nil).RegisterRunner(ctx, "box", "alice", "api", "/srv/api"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	before := time.Now()
	cred := mustCreate(t, "--data-dir", data, "token", "create", "--project", "demo")
	r := cred.Record
	if r.Kind != auth.KindProjectCredential || r.Project != "agent:local:demo" || r.Owner != auth.DefaultOwner ||
		r.ExpiresAt == nil || r.ExpiresAt.Before(before.Add(auth.DefaultProjectCredentialTTL)) || r.ExpiresAt.After(time.Now().Add(auth.DefaultProjectCredentialTTL)) ||
		joinScopes(r.Scopes) != joinScopes(auth.ProjectScopes) {
		t.Fatalf("project credential %+v", r)
	}
	// A runner's project: the credential belongs to the runner's group.
	runnerCred := mustCreate(t, "--data-dir", data, "token", "create", "--project", "agent:box:api", "--name", "api", "--expires", "2h", "--scopes", "project:read")
	if r := runnerCred.Record; r.Owner != "alice" || r.Name != "api" || r.ExpiresAt.After(time.Now().Add(2*time.Hour)) {
		t.Fatalf("runner project credential %+v", r)
	}
	share := mustCreate(t, "--data-dir", data, "project", "share", "agent:box:api", "--with", "bob", "--scopes", "project:read", "--expires", "72h")
	if r := share.Record; r.Kind != auth.KindProjectShare || r.Owner != "bob" || r.Project != "agent:box:api" || r.ExpiresAt == nil {
		t.Fatalf("project share %+v", r)
	}
	open := mustCreate(t, "--data-dir", data, "project", "share", "demo", "--with", "carol")
	if r := open.Record; r.ExpiresAt != nil || r.Project != "agent:local:demo" {
		t.Fatalf("project share without expiry %+v", r)
	}

	n := tokenCount(t, data)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--project", "demo", "--scopes", "project:read,memory:read"}, "memory:read"},
		{[]string{"token", "create", "--project", "demo", "--scopes", "admin"}, "admin"},
		{[]string{"token", "create", "--project", "demo", "--expires", "200h"}, "at most"},
		{[]string{"token", "create", "--project", "nope"}, "not registered"},
		{[]string{"token", "create", "--project", "demo", "--tools", "core"}, "--tools"},
		{[]string{"token", "create", "--project", "agent:box:api", "--owner", "bob"}, "project share"},
		{[]string{"token", "create", "--scopes", "project:read"}, "--name"},
		{[]string{"token", "create", "--name", "x", "--expires", "1h"}, "--expires"},
		{[]string{"project", "share", "demo"}, "with"},
		{[]string{"project", "share", "demo", "--with", "bob", "--scopes", "memory:manage"}, "memory:manage"},
		{[]string{"project", "share", "demo", "--with", "bob", "--expires", "-1h"}, "future"},
		{[]string{"project", "share", "nope", "--with", "bob"}, "not registered"},
	} {
		out, err := run(t, append([]string{"--data-dir", data}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %q\n%s", c.args, err, c.want, out)
		}
	}
	if got := tokenCount(t, data); got != n {
		t.Fatalf("refused commands made tokens: %d, then %d", n, got)
	}

	table := mustRun(t, "--data-dir", data, "token", "list")
	for _, want := range []string{"KIND", "PROJECT", "EXPIRES", "project-credential", "project-share", "agent:local:demo", "agent:box:api"} {
		if !strings.Contains(table, want) {
			t.Errorf("token list lacks %q:\n%s", want, table)
		}
	}
	for _, raw := range []string{cred.Token, share.Token} {
		if strings.Contains(table, raw) {
			t.Fatal("token list shows a raw token")
		}
	}
	mustRun(t, "--data-dir", data, "token", "revoke", share.Record.ID)
	var l struct{ Tokens []auth.Token }
	json.Unmarshal([]byte(mustRun(t, "--data-dir", data, "token", "list", "--json")), &l)
	for _, tok := range l.Tokens {
		if tok.ID == share.Record.ID && !tok.Revoked() {
			t.Fatal("the revoked share is not revoked")
		}
	}
}
