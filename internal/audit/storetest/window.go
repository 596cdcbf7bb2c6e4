package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
)

// ergonomicsLoopCallsRelations: Ergonomics returns the newest
// model_ergonomics records, newest first, with how many are stored (a
// JSON null is none); LoopCalls the newest meaningful calls with their
// window facts; WindowRelations a window's relations, most recent first,
// each counted once however often it was observed.
func ergonomicsLoopCallsRelations(t *testing.T, open func(*testing.T) Backend) {
	st := open(t).Store
	var evs []audit.Event
	for i := range 5 {
		ev := audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("e%d", i), SessionID: "s", Status: audit.EventSuccess,
			EndedAt: int64(1_800_000_000 + i)}}
		switch i {
		case 0, 2, 3:
			ev.Summary = map[string]any{audit.SummaryErgonomics: map[string]any{"schema_version": 6, "tool_name": fmt.Sprintf("tool%d", i), "success": true}}
		case 1:
			ev.Summary = map[string]any{audit.SummaryErgonomics: nil}
		}
		if i >= 2 {
			ev.Window = audit.WindowFacts{ClientWindow: "w1", Principal: "fp", Meaningful: i != 3, StartedAtMS: int64(1000 * i), EndedAtMS: int64(1000*i + 10),
				Relations: []audit.WindowRelation{{Kind: audit.RelationRecording, SessionID: fmt.Sprintf("wc_sess_%d", i%2)}}}
		}
		evs = append(evs, ev)
	}
	evs = append(evs, audit.Event{EventView: audit.EventView{EventID: "e5", SessionID: "s", Status: audit.EventSuccess, EndedAt: 1_800_000_010},
		Window: audit.WindowFacts{Meaningful: true, StartedAtMS: 7000}})
	if err := st.AppendEvents(ctx, evs, 0, time.Unix(1_800_000_010, 0)); err != nil {
		t.Fatal(err)
	}
	erg, n, err := st.Ergonomics(ctx, 2)
	if err != nil || n != 3 || len(erg) != 2 || erg[0].ToolName != "tool3" || erg[1].ToolName != "tool2" || erg[0].SchemaVersion != 6 {
		t.Fatalf("ergonomics %+v of %d, %v; want tool3, tool2 of 3", erg, n, err)
	}
	calls, n, err := st.LoopCalls(ctx, 10)
	want := []audit.LoopCall{{StartedAtMS: 7000}, {ClientWindow: "w1", Principal: "fp", StartedAtMS: 4000, EndedAtMS: 4010},
		{ClientWindow: "w1", Principal: "fp", StartedAtMS: 2000, EndedAtMS: 2010}}
	if err != nil || n != 3 || !slices.Equal(calls, want) {
		t.Fatalf("loop calls %+v of %d, %v; want %+v", calls, n, err, want)
	}
	rels, err := st.WindowRelations(ctx, "fp", "w1")
	wantRels := []audit.WindowRelation{{Kind: audit.RelationRecording, SessionID: "wc_sess_0"}, {Kind: audit.RelationRecording, SessionID: "wc_sess_1"}}
	if err != nil || !slices.Equal(rels, wantRels) {
		t.Fatalf("relations %+v %v, want %+v", rels, err, wantRels)
	}
	if rels, err := st.WindowRelations(ctx, "other", "w1"); err != nil || len(rels) != 0 {
		t.Fatalf("another principal's window: %+v %v", rels, err)
	}
}
