package storetest

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/webcodex/webcodex/internal/evidence"
)

//go:embed testdata/tamper/*.toml
var vectorFiles embed.FS

// Vector is one file of testdata/tamper: a named mutation of a fresh
// journal (10 records, a checkpoint at size 10) and exactly what
// `webcodex evidence verify` and opening the journal must then report.
// Each journal's tests apply the mutation to their own storage (see
// testdata/tamper/README.md) and check the outcome with Check and Opened.
type Vector struct {
	Name        string `toml:"-"`
	Description string `toml:"description"`
	Mutation    struct {
		// Op names the mutation.
		Op     string `toml:"op"`
		Index  uint64 `toml:"index"`
		With   uint64 `toml:"with"`
		Column string `toml:"column"`
		Value  string `toml:"value"`
		Count  int    `toml:"count"`
		// WithPublicKeys: foreign_key also replaces the journal's public
		// keys with the other journal's.
		WithPublicKeys bool `toml:"with_public_keys"`
	} `toml:"mutation"`
	Expect struct {
		// Findings is the exact multiset of (scope, kind, index).
		Findings []WantFinding `toml:"findings"`
		// OK and Unanchored are the report's counts.
		OK         int64  `toml:"ok"`
		Unanchored uint64 `toml:"unanchored"`
		// Purged is the report's count of purged records.
		Purged int64 `toml:"purged"`
		// Open is what opening the journal then does: "ok",
		// "refused_key" (evidence.ErrForeignKey) or "refused" (any other
		// error).
		Open string `toml:"open"`
	} `toml:"expect"`
}

// WantFinding is one expected finding.
type WantFinding struct {
	Scope string  `toml:"scope"`
	Kind  string  `toml:"kind"`
	Index *uint64 `toml:"index"`
}

func (f WantFinding) String() string {
	if f.Index == nil {
		return f.Scope + "/" + f.Kind
	}
	return fmt.Sprintf("%s/%s@%d", f.Scope, f.Kind, *f.Index)
}

// MutableColumns are the record columns a vector may set.
var MutableColumns = []string{"tool", "outcome", "error_kind", "key_id", "claim_project", "session_binding", "duration_ms"}

// Vectors parses every tamper vector (strictly: an unknown field fails t).
func Vectors(t *testing.T) []Vector {
	t.Helper()
	names, err := fs.Glob(vectorFiles, "testdata/tamper/*.toml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	var out []Vector
	for _, name := range names {
		b, err := vectorFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var v Vector
		dec := toml.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v.Description == "" || v.Expect.Open == "" {
			t.Fatalf("%s: description and expect.open are required", name)
		}
		v.Name = strings.TrimSuffix(strings.TrimPrefix(name, "testdata/tamper/"), ".toml")
		out = append(out, v)
	}
	return out
}

// Check fails t unless rep has exactly v's findings, totals and counts.
func (v Vector) Check(t *testing.T, rep evidence.Report) {
	t.Helper()
	var got, want []string
	for _, f := range rep.Findings {
		got = append(got, WantFinding{Scope: f.Scope, Kind: string(f.Kind), Index: f.Index}.String())
	}
	for _, f := range v.Expect.Findings {
		want = append(want, f.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || rep.FindingsTruncated {
		t.Fatalf("findings\n got %v\nwant %v\n%s", got, want, Dump(rep))
	}
	var total int64
	for _, n := range rep.Totals {
		total += n
	}
	if total != int64(len(want)) || rep.Clean != (len(want) == 0) {
		t.Fatalf("totals %v, clean %v", rep.Totals, rep.Clean)
	}
	if rep.OK != v.Expect.OK || rep.Unanchored != v.Expect.Unanchored || rep.Purged != v.Expect.Purged {
		t.Fatalf("ok %d unanchored %d purged %d, want %d, %d and %d", rep.OK, rep.Unanchored, rep.Purged, v.Expect.OK, v.Expect.Unanchored, v.Expect.Purged)
	}
}

// CheckOpen fails t unless err, what opening the tampered journal
// returned, is what v expects.
func (v Vector) CheckOpen(t *testing.T, err error) {
	t.Helper()
	opened := "ok"
	switch {
	case err == nil:
	case errors.Is(err, evidence.ErrForeignKey):
		opened = "refused_key"
	default:
		opened = "refused"
	}
	if opened != v.Expect.Open {
		t.Fatalf("open: %s (%v), want %s", opened, err, v.Expect.Open)
	}
}
