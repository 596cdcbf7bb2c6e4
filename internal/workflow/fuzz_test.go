package workflow_test

import (
	"bytes"
	"io"
	"regexp"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

var wantIDRE = regexp.MustCompile(`^wc_sess_[0-9a-f]{32}$`)

func FuzzParseSessionID(f *testing.F) {
	for _, s := range []string{workflow.NewSessionID(), "wc_sess_", "wc_sess_ABCDEF0123456789abcdef0123456789", "~s1", "wc_sess_0123456789abcdef0123456789abcdef\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := workflow.ParseSessionID(s)
		if wantIDRE.MatchString(s) {
			if err != nil || id != s {
				t.Fatalf("valid id %q rejected: %v", s, err)
			}
			return
		}
		if failure.KindOf(err) != failure.InvalidSessionID {
			t.Fatalf("invalid id %q: got %v, want invalid_session_id", s, err)
		}
	})
}

func FuzzLedgerReader(f *testing.F) {
	f.Add([]byte(`{"version":2,"kind":"webcodex.workflow_ledger","exported_at":"2026-01-01T00:00:00Z","sessions":[]}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":2,"kind":"webcodex.workflow_ledger","sessions":[{"session_id":"wc_sess_0123456789abcdef0123456789abcdef","project":"p","mode":"normal","lifecycle":"active","owner_authority_fingerprint":"` + string(bytes.Repeat([]byte("a"), 64)) + `","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","events_observed":1,"events":[{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"task_instruction","text":"x"}]}]}`))
	// A row with a board: one todo whose digest the fuzzer may or may not
	// keep intact.
	f.Add([]byte(`{"version":2,"kind":"webcodex.workflow_ledger","sessions":[{"session_id":"wc_sess_0123456789abcdef0123456789abcdef","project":"p","mode":"normal","lifecycle":"active","owner_authority_fingerprint":"` + string(bytes.Repeat([]byte("a"), 64)) + `","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","events_observed":1,"events":[{"seq":1,"at":"2026-01-01T00:00:00Z","kind":"task_instruction","text":"x"}],` +
		`"board":{"posted":1,"retained":1,"removed":0,"observation_revision":1,"observation_low_watermark":0,"messages":[{"message_id":"wc_msg_0123456789abcdef0123456789abcdef","seq":1,"created_at":"2026-01-01T00:00:00Z","kind":"todo","status":"open","priority":"normal","message":"do it","tags":[],"reply_to":"","author_session_id":"","requires_ack":false,"resolution":"","resolved_by_message_id":"","completion_id":"","delivery_key":"","delivery_fingerprint":"","completion_key":"","completion_fingerprint":"","observation_revision":1,"assignment_revision":0,"replies_posted":0,"replies_removed":0,"digest":""}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lr := workflow.NewLedgerReader(bytes.NewReader(data))
		for {
			r, err := lr.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if failure.KindOf(err) != failure.InvalidLedger {
					t.Fatalf("error kind %q, want invalid_ledger", failure.KindOf(err))
				}
				return
			}
			if err := workflow.ValidateSession(r.Session); err != nil {
				t.Fatalf("accepted an invalid session: %v", err)
			}
			for _, e := range r.Events {
				if err := workflow.ValidateEvent(e); err != nil {
					t.Fatalf("accepted an invalid event: %v", err)
				}
			}
			if b := r.Restored; b != nil {
				st := b.State
				if st.Retained != int64(len(b.Messages)) || st.Posted != st.Retained+st.Removed ||
					st.ObservationLowWatermark > st.ObservationRevision || st.Generation == 0 {
					t.Fatalf("restored a board that contradicts itself: %+v with %d messages", st, len(b.Messages))
				}
				for _, m := range b.Messages {
					if workflow.ParseMessageID("message_id", m.ID) != nil || !m.Kind.Valid() || m.ObservationRevision > st.ObservationRevision {
						t.Fatalf("restored an invalid message: %+v", m)
					}
				}
			}
		}
	})
}
