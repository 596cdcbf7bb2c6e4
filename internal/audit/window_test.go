package audit

import (
	"strings"
	"testing"
)

func TestBuildLoopTiming(t *testing.T) {
	wa, wb := strings.Repeat("a", 64), strings.Repeat("b", 64)
	p, q := strings.Repeat("1", 64), strings.Repeat("2", 64)
	calls := []LoopCall{
		// window a, principal p: responses at 100, 300, 1000; requests
		// at 0, 150, 400 → gaps 50 and 100 (given out of order: newest
		// first, as the store returns them).
		{wa, p, 400, 1000},
		{wa, p, 150, 300},
		{wa, p, 0, 100},
		// The same window hash under another principal is another loop:
		// never paired with p's calls.
		{wa, q, 120, 130},
		{wa, q, 2130, 2200}, // gap 2000
		// Window b overlaps itself: not a gap.
		{wb, p, 0, 500},
		{wb, p, 200, 600},
		// No window: unavailable, never paired by anything else.
		{"", p, 0, 10},
		{"", p, 20, 30},
	}
	lt := BuildLoopTiming(calls)
	want := LoopTiming{Pairs: 3, P50MS: 100, P90MS: 2000, P95MS: 2000, MaxMS: 2000, Overlapping: 1, Unavailable: 2, CallsSeen: 9}
	if lt != want {
		t.Fatalf("loop timing %+v, want %+v", lt, want)
	}
	if empty := BuildLoopTiming(nil); empty != (LoopTiming{}) {
		t.Fatalf("no calls: %+v", empty)
	}
}

func TestWindowFactsSanitized(t *testing.T) {
	good := strings.Repeat("c", 64)
	w := WindowFacts{ClientWindow: "raw window value", Principal: good, Relations: []WindowRelation{{RelationRecording, "wc_sess_1"}}}.sanitized()
	if w.ClientWindow != "" || w.Principal != "" || w.Relations != nil {
		t.Fatalf("a non-hash window was kept: %+v", w)
	}
	w = WindowFacts{ClientWindow: good, Principal: good, Relations: []WindowRelation{
		{RelationRecording, "wc_sess_1"}, {"owner", "wc_sess_2"}, {RelationWorkOnProject, "bad id!"}, {RelationWorkOnProject, "wc_sess_3"},
	}}.sanitized()
	if len(w.Relations) != 2 || w.Relations[1].SessionID != "wc_sess_3" {
		t.Fatalf("relations %+v", w.Relations)
	}
}
