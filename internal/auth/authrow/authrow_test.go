package authrow_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authrow"
)

// TestStoredForm pins what both stores write: JSON text, Unix
// nanoseconds, NULL for an unset time or project, an empty kind as an API
// token, and no tool profile as [].
func TestStoredForm(t *testing.T) {
	created := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	tok := auth.Token{ID: "tok_0000000000000001", Name: "n", Owner: "local", Scopes: []auth.Scope{auth.ScopeProjectRead}, CreatedAt: created}
	r, err := authrow.Encode(tok)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{tok.ID, "n", "local", `["project:read"]`, created.UnixNano(), nil, nil, "[]", "", string(auth.KindAPIToken), nil, nil}
	if diff := cmp.Diff(want, r.Args()); diff != "" {
		t.Errorf("Args (-want +got):\n%s", diff)
	}
	got, err := r.Decode()
	if err != nil {
		t.Fatal(err)
	}
	tok.Kind = auth.KindAPIToken
	if diff := cmp.Diff(tok, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}

	expires := created.Add(time.Hour)
	tok.Kind, tok.Project, tok.ExpiresAt, tok.Tools = auth.KindProjectCredential, "demo", &expires, []string{"read_files"}
	r, err = authrow.Encode(tok)
	if err != nil {
		t.Fatal(err)
	}
	args := r.Args()
	if args[7] != `["read_files"]` || args[10] != "demo" || args[11] != expires.UnixNano() {
		t.Errorf("Args of a project credential = %v", args)
	}
	if got, err := r.Decode(); err != nil || !cmp.Equal(tok, got) {
		t.Errorf("Decode = %+v, %v; want %+v", got, err, tok)
	}
}
