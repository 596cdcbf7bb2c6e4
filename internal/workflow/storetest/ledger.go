package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/workflow"
)

// knownProj accepts only proj, as the project registry of a data directory
// where proj alone is registered would.
func knownProj(_ context.Context, id string) error {
	if id != proj {
		return failure.New(failure.UnknownProject, "project %q is not registered", id)
	}
	return nil
}

func importLedger(st workflow.Store, doc string) (int, error) {
	return workflow.ImportLedger(context.Background(), st, strings.NewReader(doc), knownProj)
}

// reimport imports the ledger data (of session s) into a store on a new
// ledger, checks that it makes one session and that s exported from
// there is data again, and returns the new store.
func reimport(t *testing.T, l env, data []byte, s workflow.Session) Store {
	t.Helper()
	st2 := l.fresh(t).Open(t)
	if n, err := importLedger(st2, string(data)); err != nil || n != 1 {
		t.Fatalf("import: n=%d err=%v", n, err)
	}
	l2, _ := workflow.Export(context.Background(), st2, []string{s.ID}, s.CreatedAt)
	data2, _ := json.Marshal(l2)
	if string(data) != string(data2) {
		t.Fatalf("re-export differs:\n%s\n%s", data, data2)
	}
	return st2
}

func ledgerRoundTrip(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	s := start(t, svc)
	svc.UpdateContext(ctx, s.ID, workflow.ExecutionContext{DefaultCwd: "cmd", DefaultShell: workflow.ShellBash})
	svc.Close(ctx, s.ID)
	lg, err := workflow.Export(ctx, st, []string{s.ID}, s.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(lg)
	st2 := reimport(t, l, data, s)
	if _, err := importLedger(st2, string(data)); failure.KindOf(err) != failure.Conflict || !strings.Contains(err.Error(), "row 1, session "+s.ID) {
		t.Fatalf("second import: got %v, want conflict naming the row", err)
	}
}

// ledgerCarriesReplays: a replayed call's finish (replayed, replay_of) is
// exported, imported and exported again unchanged, and read back as a
// replay.
func ledgerCarriesReplays(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	s := start(t, workflow.NewService(st, nil))
	lg, err := workflow.Export(ctx, st, []string{s.ID}, s.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	const of = "wc_msg_0123456789abcdef0123456789abcdef"
	row := &lg.Sessions[0]
	at := row.UpdatedAt
	n := row.EventsObserved
	row.Events = append(row.Events,
		workflow.Event{Seq: n + 1, At: at, Kind: workflow.EventToolCallStarted, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness},
		workflow.Event{Seq: n + 2, At: at, Kind: workflow.EventToolCallFinished, Tool: "post_session_message", CallID: "call_1", InvocationID: "inv_1", Role: workflow.RoleBusiness,
			Outcome: workflow.OutcomeOK, Replayed: true, ReplayOf: of})
	row.EventsObserved = n + 2
	data, _ := json.Marshal(lg)
	if !strings.Contains(string(data), `"replayed":true,"replay_of":"`+of+`"`) {
		t.Fatalf("the ledger does not say replayed: %s", data)
	}
	st2 := reimport(t, l, data, s)
	evs := events(t, st2, s.ID)
	if e := evs[len(evs)-1]; !e.Replayed || e.ReplayOf != of {
		t.Fatalf("imported finish read back as %+v", e)
	}
}

func ledgerImportRejects(t *testing.T, l env) {
	ctx := context.Background()
	st := l.Open(t)
	svc := workflow.NewService(st, nil)
	first, second := start(t, svc), start(t, svc)
	lg, _ := workflow.Export(ctx, st, []string{first.ID, second.ID}, first.CreatedAt)
	data, _ := json.Marshal(lg)
	mutate := func(f func(doc, row map[string]any)) string {
		var d map[string]any
		json.Unmarshal(data, &d)
		r := d["sessions"].([]any)[1].(map[string]any)
		f(d, r)
		b, _ := json.Marshal(d)
		return string(b)
	}
	unchanged := func(t *testing.T, st Store) {
		t.Helper()
		if s, err := st.Status(ctx); err != nil || s.Sessions != 0 || s.Events != 0 {
			t.Fatalf("store after a refused import: %+v %v, want empty", s, err)
		}
	}
	// Each case runs on one fresh store: a refused import leaves it empty
	// for the next.
	target := l.fresh(t).Open(t)
	cases := []struct {
		name string
		f    func(d, r map[string]any)
		kind failure.Kind
		msg  string
	}{
		{"ErrOldVersion", func(d, r map[string]any) { d["version"] = 1 }, failure.InvalidLedger, "version 1 is not supported"},
		// Marshalled with sorted keys, "version" follows "sessions": a
		// row it cannot read still reports the version.
		{"ErrOldVersionBadRow", func(d, r map[string]any) { d["version"] = 1; r["mode"] = "inspect" }, failure.InvalidLedger, "version 1 is not supported"},
		{"ErrUnknownTop", func(d, r map[string]any) { d["extra"] = 1 }, failure.InvalidLedger, `unknown top-level member "extra"`},
		{"ErrUnknownMember", func(d, r map[string]any) { r["surprise"] = true }, failure.InvalidLedger, "row 2"},
		{"ErrInspectMode", func(d, r map[string]any) { r["mode"] = "inspect" }, failure.InvalidLedger, "row 2"},
		{"ErrMissingFP", func(d, r map[string]any) { delete(r, "owner_authority_fingerprint") }, failure.InvalidLedger, `missing member "owner_authority_fingerprint"`},
		{"ErrMissingEvents", func(d, r map[string]any) { delete(r, "events") }, failure.InvalidLedger, `missing member "events"`},
		{"ErrBadEventKind", func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["kind"] = "nope"
		}, failure.InvalidLedger, "row 2"},
		{"ErrEventUnknownMember", func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["stdout"] = "x"
		}, failure.InvalidLedger, "row 2"},
		{"ErrReplayedWithoutOriginal", func(d, r map[string]any) {
			r["events"].([]any)[0].(map[string]any)["replayed"] = true
		}, failure.InvalidLedger, "replayed: set exactly when replay_of names the original"},
		{"ErrReplayNotAFinish", func(d, r map[string]any) {
			e := r["events"].([]any)[0].(map[string]any)
			e["replayed"], e["replay_of"] = true, "wc_msg_0123456789abcdef0123456789abcdef"
		}, failure.InvalidLedger, "replayed: only on a tool_call_finished with outcome ok"},
		{"ErrUnregisteredProject", func(d, r map[string]any) { r["project"] = "agent:local:elsewhere" }, failure.UnknownProject, `project "agent:local:elsewhere" is not registered`},
		{"ErrEventsObservedContradicted", func(d, r map[string]any) { r["events_observed"] = 5 }, failure.InvalidLedger, "events_observed is 5 but 2 events are retained"},
		{"ErrTruncatedContradicted", func(d, r map[string]any) { r["retention_truncated"] = true }, failure.InvalidLedger, "retention_truncated is true"},
		{"ErrEventsPurgedNegative", func(d, r map[string]any) { r["retention_truncated"], r["events_purged"] = true, -1 }, failure.InvalidLedger, "events_purged: must be 0 to events_observed"},
		{"ErrEventsPurgedUntruncated", func(d, r map[string]any) { r["events_purged"] = 1 }, failure.InvalidLedger, "events_purged: set while retention_truncated is false"},
		{"ErrEventsPurgedBeyondObserved", func(d, r map[string]any) {
			r["retention_truncated"], r["events_observed"], r["events_purged"] = true, 3, 2
		}, failure.InvalidLedger, "events_purged is 2 but only 1 observed events are not retained"},
		{"ErrDuplicateID", func(d, r map[string]any) {
			r["session_id"] = d["sessions"].([]any)[0].(map[string]any)["session_id"]
		}, failure.Conflict, "earlier in this ledger"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := importLedger(target, mutate(c.f))
			if failure.KindOf(err) != c.kind || !strings.Contains(err.Error(), c.msg) || n != 0 {
				t.Fatalf("got n=%d %v, want %s containing %q", n, err, c.kind, c.msg)
			}
			unchanged(t, target)
		})
	}
	t.Run("ErrNotJSON", func(t *testing.T) {
		if _, err := importLedger(target, "[1,2"); failure.KindOf(err) != failure.InvalidLedger {
			t.Fatalf("got %v", err)
		}
		unchanged(t, target)
	})
	t.Run("ErrTruncatedDocument", func(t *testing.T) {
		if _, err := importLedger(target, string(data[:len(data)-3])); failure.KindOf(err) != failure.InvalidLedger {
			t.Fatalf("got %v", err)
		}
		unchanged(t, target)
	})
	// A member kept for compatibility is accepted.
	if n, err := importLedger(target, mutate(func(d, r map[string]any) { r["context_revision"] = 7 })); err != nil || n != 2 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}
