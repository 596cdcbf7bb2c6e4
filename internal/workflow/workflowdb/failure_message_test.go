package workflowdb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/workflow"
)

// A validation record's failure messages are redacted and bounded before
// they are written: at most MaxValidationMessages, each at most
// ValidationMessageMaxChars characters, a credential in one never stored.
func TestFailureMessagesStoredRedactedAndBounded(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "workflow.db"))
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	const key = "AKIAIOSFODNN7EXAMPLE"
	var msgs []workflow.FailureMessage
	var ids []string
	for i := range workflow.MaxValidationMessages + 2 {
		id := fmt.Sprintf("p.Test%d", i)
		ids = append(ids, id)
		msgs = append(msgs, workflow.FailureMessage{ID: id, Message: "login with " + key + " failed: " + strings.Repeat("é", workflow.ValidationMessageMaxChars)})
	}
	v := &workflow.Validation{Tool: "go_test", ScopeID: "validation_scope:v1:" + strings.Repeat("a", 64), Failed: len(ids), FailuresTotal: len(ids),
		Failures: ids, FailureMessages: msgs, Verdict: workflow.VerdictFailed, Expectation: "success"}
	if _, _, err := st.Update(ctx, s.ID, func(*workflow.Session) ([]workflow.Event, error) {
		return []workflow.Event{{Kind: workflow.EventValidationRecorded, Tool: "go_test", Validation: v}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := evs[len(evs)-1].Validation
	if got == nil || len(got.FailureMessages) != workflow.MaxValidationMessages {
		t.Fatalf("stored %+v, want %d messages", got, workflow.MaxValidationMessages)
	}
	for i, m := range got.FailureMessages {
		if m.ID != ids[i] || strings.Contains(m.Message, key) || !strings.HasPrefix(m.Message, "login with "+redact.Marker+" failed: ") ||
			utf8.RuneCountInString(m.Message) != workflow.ValidationMessageMaxChars {
			t.Fatalf("message %d stored as %q (%d characters)", i, m.Message[:min(len(m.Message), 80)], utf8.RuneCountInString(m.Message))
		}
	}
	// A record over the bound is refused as a stored record.
	over := *got
	over.FailureMessages = msgs
	if err := over.Validate(); err == nil {
		t.Fatal("a record with too many failure messages validates")
	}
}
