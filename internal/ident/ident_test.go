package ident

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, s := range []string{"a", "box", "my-project_2.0", strings.Repeat("x", MaxBytes)} {
		if !Valid(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", ".hidden", "-x", "_x", "a b", "a/b", "../x", "é", strings.Repeat("x", MaxBytes+1), "a\n"} {
		if Valid(s) {
			t.Errorf("%q accepted", s)
		}
	}
}
