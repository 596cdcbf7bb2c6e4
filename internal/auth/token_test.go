package auth_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
)

func TestParseBearer(t *testing.T) {
	cases := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer wc_pat_abc", "wc_pat_abc", true},
		{"bearer wc_pat_abc", "wc_pat_abc", true},
		{"BEARER wc_pat_abc", "wc_pat_abc", true},
		{"  Bearer   wc_pat_abc  ", "wc_pat_abc", true},
		{"Bearer\twc_pat_abc", "wc_pat_abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearerwc_pat_abc", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Token wc_pat_abc", "", false},
		{"Bearer a b", "", false},
		{"wc_pat_abc", "", false},
	}
	for _, c := range cases {
		got, ok := auth.ParseBearer(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

func TestHashTokenDomainSeparated(t *testing.T) {
	h := auth.HashToken("wc_pat_x")
	if len(h) != 64 {
		t.Fatalf("hash %q: want 64 hex digits", h)
	}
	// SHA-256("webcodex.token.v1\x00wc_pat_x"), computed independently.
	const want = "2d6e67a11fbaf2ea9a2cf47dabcd6daa37303e884f800e85c7ceeb3f90dfebf7"
	// Plain SHA-256("wc_pat_x"), which the domain prefix must avoid.
	const plain = "9bbf16ebd754c6e6277969d7f87241719d07dec6ca01e687eeec112bf674450d"
	if h != want || h == plain {
		t.Errorf("HashToken(wc_pat_x) = %s, want %s (plain digest %s)", h, want, plain)
	}
	if h == auth.HashToken("wc_pat_y") {
		t.Errorf("different tokens share hash %s", h)
	}
}

func TestNormalizeScopes(t *testing.T) {
	got, err := auth.ParseScopes(" admin,project:read  project:read,job:run ")
	if err != nil {
		t.Fatalf("ParseScopes: %v", err)
	}
	want := []auth.Scope{auth.ScopeProjectRead, auth.ScopeJobRun, auth.ScopeAdmin}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseScopes (-want +got):\n%s", diff)
	}
	_, err = auth.ParseScopes("project:read,root")
	if failure.KindOf(err) != failure.InvalidArguments || failure.DetailOf(err)["scope"] != "root" {
		t.Errorf("ParseScopes unknown = %v (detail %v), want invalid_arguments naming root", err, failure.DetailOf(err))
	}
	if _, err := auth.ParseScopes(" , "); failure.KindOf(err) != failure.InvalidArguments {
		t.Errorf("ParseScopes empty = %v, want invalid_arguments", err)
	}
	all, err := auth.NormalizeScopes(auth.AllScopes)
	if err != nil || !cmp.Equal(all, auth.AllScopes) {
		t.Errorf("NormalizeScopes(AllScopes) = %v, %v", all, err)
	}
}

func TestTokenIDAndFormat(t *testing.T) {
	for id, want := range map[string]bool{
		"tok_0123456789abcdef":  true,
		"tok_0123456789abcdeF":  false,
		"tok_0123456789abcdef0": false,
		"tok0123456789abcdef":   false,
		"":                      false,
	} {
		if got := auth.ValidTokenID(id); got != want {
			t.Errorf("ValidTokenID(%q) = %v, want %v", id, got, want)
		}
	}
	// 43 base64url characters encode 258 bits; the last character must
	// carry zero padding bits for a canonical 32-byte value.
	canonical := "wc_pat_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	nonCanonical := "wc_pat_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"
	if !auth.WellFormedToken(canonical) || auth.WellFormedToken(nonCanonical) {
		t.Errorf("WellFormedToken canonical=%v nonCanonical=%v; want true, false",
			auth.WellFormedToken(canonical), auth.WellFormedToken(nonCanonical))
	}
}
