// Package storetest is the contract suite that every [memory.Store]
// implementation must pass, on SQLite (memorydb) and on PostgreSQL
// (memorypg). Implementation packages call [Run] from their own tests
// with a constructor for a fresh, empty store. Search cases assert match
// sets and coarse ordering, never scores: BM25 and ts_rank differ.
package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/memory"
)

// Backend is a fresh store with the backend-specific views the contract
// needs.
type Backend struct {
	Store memory.Store
	// Snapshot is every stored row as text (to prove a refused call
	// changed nothing and a secret was not stored); it fails t when a
	// scope's kept entry count is not its row count.
	Snapshot func(t *testing.T) string
	// Fill writes entries as newly created in scope, in one transaction
	// (Set would commit each on its own).
	Fill func(t testing.TB, scope memory.Scope, entries []memory.Entry)
	// KeptHistory returns how many superseded revisions of memoryID are
	// stored and how many of them are revision.
	KeptHistory func(t *testing.T, memoryID, revision string) (kept, current int)
}

// Run runs the memory.Store contract against stores returned by open (a
// new, empty store each call, cleaned up by open).
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T) Backend)
	}{
		{"SetCreateReplaceIdempotent", setCreateReplaceIdempotent}, {"RacingSetsOneWins", racingSetsOneWins},
		{"DeleteAndRecreateIsNewIncarnation", deleteAndRecreateIsNewIncarnation}, {"ScopeIsProjectAndRoot", scopeIsProjectAndRoot},
		{"Bounds", bounds}, {"EntriesPerScopeBound", entriesPerScopeBound}, {"Search", search}, {"SearchSyntax", searchSyntax},
		{"SecretNotStored", secretNotStored}, {"Bootstrap", bootstrap}, {"Purge", purge}, {"ListingBounds", listingBounds},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

// ScopeA is the scope the cases write unless they name another.
var ScopeA = memory.ScopeFor("agent:local:a", "/srv/a")

var scopeA = ScopeA

func mustSet(t testing.TB, svc *memory.Service, p memory.SetParams) memory.SetResult {
	t.Helper()
	if p.Scope.ID == "" {
		p.Scope = scopeA
	}
	r, err := svc.Set(context.Background(), p)
	if err != nil {
		t.Fatalf("set %s: %v", p.Key, err)
	}
	return r
}

func wantKind(t *testing.T, err error, k failure.Kind) {
	t.Helper()
	if failure.KindOf(err) != k {
		t.Fatalf("err = %v, want kind %s", err, k)
	}
}

var fillIDs atomic.Int64

// FillEntries returns n entries fill/00000… with bodies body(i), each
// updated a millisecond after the one before.
func FillEntries(n int, body func(i int) string) []memory.Entry {
	now := time.Now()
	out := make([]memory.Entry, n)
	for i := range n {
		out[i] = memory.Entry{MemoryKey: fmt.Sprintf("fill/%05d", i), MemoryID: fmt.Sprintf("wc_mem_%032x", fillIDs.Add(1)),
			Revision: fmt.Sprintf("mrev_1_%024x", i), Body: body(i), Tags: []string{"fill"}, Generation: 1,
			DefinitionHash: fmt.Sprint(i), CreatedAt: now, UpdatedAt: now.Add(time.Duration(i) * time.Millisecond)}
	}
	return out
}

func fill(t testing.TB, be Backend, scope memory.Scope, n int, body func(i int) string) {
	t.Helper()
	be.Fill(t, scope, FillEntries(n, body))
}

// secretNotStored plants a credential in a body and a key: neither a
// read nor any stored row holds it.
func secretNotStored(t *testing.T, open func(*testing.T) Backend) {
	be := open(t)
	svc := memory.NewService(be.Store, nil)
	secret := "ghp_" + strings.Repeat("Z9", 18)
	r := mustSet(t, svc, memory.SetParams{Key: "deploy", Body: "token is " + secret + " and password=hunter2hunter2", Tags: []string{"t"}})
	if !r.Redacted {
		t.Fatal("redaction not reported")
	}
	e, _, _ := svc.Read(context.Background(), memory.ReadParams{Scope: scopeA, Key: "deploy"})
	if strings.Contains(e.Body, secret) || strings.Contains(e.Body, "hunter2hunter2") {
		t.Fatalf("read returned the secret: %q", e.Body)
	}
	_, err := svc.Set(context.Background(), memory.SetParams{Scope: scopeA, Key: "key " + secret, Body: "b"})
	wantKind(t, err, failure.InvalidArguments)
	snap := be.Snapshot(t)
	if !strings.Contains(snap, "deploy") {
		t.Fatal("the snapshot does not hold the entry: the scan saw nothing")
	}
	for _, s := range []string{secret, "hunter2hunter2"} {
		if strings.Contains(snap, s) {
			t.Fatalf("the store holds the planted secret %q", s)
		}
	}
}
