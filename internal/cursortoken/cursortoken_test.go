package cursortoken_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/cursortoken"
)

var format = cursortoken.Format{Prefix: "tst1_", Label: "test token v1 ", Fields: 2, MaxChars: 96}

func TestBounds(t *testing.T) {
	if cursortoken.KeyBytes != 32 || cursortoken.TagBytes != 16 || cursortoken.MaxFields != 4 {
		t.Fatalf("bounds %d %d %d", cursortoken.KeyBytes, cursortoken.TagBytes, cursortoken.MaxFields)
	}
	for _, f := range []cursortoken.Format{{Fields: 0}, {Fields: cursortoken.MaxFields + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("New accepted %d fields", f.Fields)
				}
			}()
			cursortoken.New(f, make([]byte, cursortoken.KeyBytes))
		}()
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a short key")
		}
	}()
	cursortoken.New(format, make([]byte, cursortoken.KeyBytes-1))
}

// TestRoundTripAndRefusals: a token parses back in its scope only; an
// edited, foreign-key, other-label, oversized or malformed one is refused
// with its reason; the same position always gives the same token.
func TestRoundTripAndRefusals(t *testing.T) {
	key := bytes.Repeat([]byte{7}, cursortoken.KeyBytes)
	k := cursortoken.New(format, key)
	tok := k.Make("scope-a", 42, 3)
	if tok != k.Make("scope-a", 42, 3) || !strings.HasPrefix(tok, "tst1_") || k.Make("scope-a", 43, 3)[len(tok)-8:] == tok[len(tok)-8:] {
		t.Fatalf("token %s", tok)
	}
	if f, err := k.Parse(tok, "scope-a"); err != nil || f[0] != 42 || f[1] != 3 {
		t.Fatalf("parse %v %v", f, err)
	}
	other := cursortoken.New(format, bytes.Repeat([]byte{8}, cursortoken.KeyBytes))
	relabelled := format
	relabelled.Label = "another label "
	edited := []byte(tok)
	edited[len(edited)-2] ^= 1
	for name, c := range map[string]struct {
		tok  string
		want error
	}{
		"another scope": {tok, cursortoken.ErrForeign},
		"another key":   {other.Make("scope-a", 42, 3), cursortoken.ErrForeign},
		"another label": {cursortoken.New(relabelled, key).Make("scope-a", 42, 3), cursortoken.ErrForeign},
		"edited":        {string(edited), cursortoken.ErrForeign},
		"oversized":     {tok + strings.Repeat("A", format.MaxChars), cursortoken.ErrTooLong},
		"no prefix":     {strings.TrimPrefix(tok, "tst1_"), cursortoken.ErrMalformed},
		"short":         {tok[:len(tok)-4], cursortoken.ErrMalformed},
	} {
		scope := "scope-a"
		if name == "another scope" {
			scope = "scope-b"
		}
		if _, err := k.Parse(c.tok, scope); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", name, err, c.want)
		}
	}
}
