package handoff

import (
	"slices"

	"github.com/webcodex/webcodex/internal/workflow"
)

// Bounds of the unknown-outcome call lists.
const (
	// MaxUnknownCalls bounds the calls session_summary and
	// finish_coding_task list.
	MaxUnknownCalls = 20
	// BriefMaxUnknownCalls bounds progress.may_have_changed.
	BriefMaxUnknownCalls = 5
)

// UnknownOutcomeCalls lists a session's finished calls whose outcome is
// unknown (interrupted by a shutdown, cancelled by the caller, or
// recovered as outcome_unknown after a crash), newest first: a mutating
// one among them may have made changes no event records.
type UnknownOutcomeCalls struct {
	Items []workflow.UnknownCall `json:"items"`
	// Total counts every such call among the retained events.
	Total     int  `json:"total"`
	Returned  int  `json:"returned"`
	Truncated bool `json:"truncated"`
	// Tools are the distinct tools of all Total calls, sorted.
	Tools []string `json:"tools"`
	// Complete is false when retention removed older events, which may
	// hold more such calls.
	Complete bool `json:"complete"`
}

// UnknownOutcomes projects the unknown-outcome calls of a session from its
// retained events (ascending seq), listing at most max of them.
func UnknownOutcomes(s workflow.Session, events []workflow.Event, max int) UnknownOutcomeCalls {
	all := workflow.UnknownCalls(events)
	out := UnknownOutcomeCalls{Items: []workflow.UnknownCall{}, Tools: []string{}, Total: len(all), Complete: !evicted(s, events)}
	for _, c := range all {
		if !slices.Contains(out.Tools, c.Tool) {
			out.Tools = append(out.Tools, c.Tool)
		}
	}
	slices.Sort(out.Tools)
	n := min(len(all), max)
	out.Items = append(out.Items, all[:n]...)
	out.Returned, out.Truncated = n, n < len(all)
	return out
}
