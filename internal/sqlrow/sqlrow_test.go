package sqlrow_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/sqlrow"
)

func TestDollar(t *testing.T) {
	if got := sqlrow.Dollar("SELECT a FROM t WHERE b = ? AND c IN (?, ?)"); got != "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)" {
		t.Fatalf("Dollar: %s", got)
	}
	if got := sqlrow.Dollar("SELECT 1"); got != "SELECT 1" {
		t.Fatalf("Dollar without placeholders: %s", got)
	}
}
