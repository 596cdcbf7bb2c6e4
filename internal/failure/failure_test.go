package failure_test

import (
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
)

func TestKinds(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[failure.Kind]bool{}
	for _, k := range failure.Kinds {
		if !snake.MatchString(string(k)) || seen[k] {
			t.Errorf("kind %q is not unique snake_case", k)
		}
		seen[k] = true
	}
}

func TestKindOf(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", failure.New(failure.SessionClosed, "closed"))
	if failure.KindOf(err) != failure.SessionClosed || failure.MessageOf(err) != "closed" {
		t.Fatalf("got %s %q", failure.KindOf(err), failure.MessageOf(err))
	}
	foreign := errors.New("open /secret/path: permission denied")
	if failure.KindOf(foreign) != failure.Internal || failure.MessageOf(foreign) != "internal error" {
		t.Fatal("a foreign error must fold into internal without its text")
	}
	if failure.KindOf(nil) != "" {
		t.Fatal("nil has no kind")
	}
	e := failure.New(failure.EditConflict, "x").WithDetail("conflict_kind", "match_not_found")
	if failure.DetailOf(fmt.Errorf("%w", e))["conflict_kind"] != "match_not_found" {
		t.Fatal("detail lost through wrapping")
	}
}

// TestEveryKindHasAClass: the presentation table covers every kind, and
// every class names a known failure and recovery kind.
func TestEveryKindHasAClass(t *testing.T) {
	for _, k := range failure.Kinds {
		c := failure.ClassOf(k)
		if c.FailureKind == "" || c.RecoveryKind == "" || c.HTTPStatus < 400 || c.HTTPStatus > 599 {
			t.Errorf("kind %s has no complete class: %+v", k, c)
		}
	}
	if got := failure.ClassOf("no_such_kind"); got != failure.ClassOf(failure.Internal) {
		t.Errorf("an unknown kind is presented as %+v, want internal's", got)
	}
	if c := failure.ClassOf(failure.EditConflict); c.FailureKind != failure.ClassStalePrecondition || c.RecoveryKind != failure.RecoverRereadAndRetry {
		t.Errorf("edit_conflict is %+v", c)
	}
}
