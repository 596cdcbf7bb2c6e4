package audit

import (
	"cmp"
	"slices"
	"time"
)

// Window relation kinds: the closed set of a Window↔Workflow Session
// relation. A relation is observational: it confers no lease, ownership,
// authority or recorder selection, and a window may relate to many
// sessions and a session to many windows.
const (
	// RelationRecording: a call of the window carried an authorized
	// recording_session_id naming the session.
	RelationRecording = "recording"
	// RelationWorkOnProject: a successful work_on_project of the window
	// created or resumed the session.
	RelationWorkOnProject = "work_on_project"
)

// Window relation bounds.
const (
	// MaxWindowRelations bounds the relations one event may carry.
	MaxWindowRelations = 4
	// WindowRelationRetention is how long a relation is kept after its
	// last observation (pruned when relations are written).
	WindowRelationRetention = 7 * 24 * time.Hour
)

// WindowRelation is one Window↔Workflow Session relation an event
// establishes (decided by the kernel's authority path, never inferred).
type WindowRelation struct {
	Kind      string `json:"kind"`
	SessionID string `json:"session_id"`
}

// WindowFacts are the window facts of one audited MCP tool call, stored
// with the event and never part of its [EventView]. ClientWindow is the
// principal-bound hash (never a raw host value); Principal is the
// canonical principal correlation (authority fingerprint). Meaningful is
// window.Meaningful of the call. The millisecond times bound the loop
// gaps: from one call's response to the next call's request.
type WindowFacts struct {
	ClientWindow string
	Principal    string
	Meaningful   bool
	StartedAtMS  int64
	EndedAtMS    int64
	Relations    []WindowRelation
}

// LoopCall is a meaningful MCP tool call as loop timing reads it back,
// newest first. ClientWindow "" means the host sent no usable window.
type LoopCall struct {
	ClientWindow string
	Principal    string
	StartedAtMS  int64
	EndedAtMS    int64
}

// LoopTiming is the agent-loop timing over the scanned meaningful MCP
// calls: the gap between one call's response and the next request of the
// same window and principal. A gap is not a model turn: WebCodex has no
// turn id and infers none. Calls without window metadata have no loop
// timing (Unavailable counts them); they are never paired by any other
// identity. Overlapping counts adjacent pairs whose next request started
// before the previous response (concurrent calls of one window): they are
// not gaps.
type LoopTiming struct {
	Pairs       int64 `json:"pairs"`
	P50MS       int64 `json:"p50_gap_ms"`
	P90MS       int64 `json:"p90_gap_ms"`
	P95MS       int64 `json:"p95_gap_ms"`
	MaxMS       int64 `json:"max_gap_ms"`
	Overlapping int64 `json:"overlapping_pairs"`
	Unavailable int64 `json:"calls_without_window"`
	CallsSeen   int64 `json:"calls_scanned"`
	// CallsAvailable is how many meaningful MCP calls are retained;
	// older ones than the scanned were left out when it is larger.
	CallsAvailable int64 `json:"calls_available"`
}

// BuildLoopTiming pairs adjacent calls of the same (window, principal)
// in request order and aggregates their gaps (nearest-rank percentiles).
func BuildLoopTiming(calls []LoopCall) LoopTiming {
	lt := LoopTiming{CallsSeen: int64(len(calls))}
	type key struct{ w, p string }
	by := map[key][]LoopCall{}
	for _, c := range calls {
		if c.ClientWindow == "" || c.Principal == "" {
			lt.Unavailable++
			continue
		}
		k := key{c.ClientWindow, c.Principal}
		by[k] = append(by[k], c)
	}
	var gaps []int64
	for _, cs := range by {
		slices.SortFunc(cs, func(a, b LoopCall) int {
			return cmp.Or(cmp.Compare(a.StartedAtMS, b.StartedAtMS), cmp.Compare(a.EndedAtMS, b.EndedAtMS))
		})
		for i := 1; i < len(cs); i++ {
			gap := cs[i].StartedAtMS - cs[i-1].EndedAtMS
			if gap < 0 {
				lt.Overlapping++
				continue
			}
			gaps = append(gaps, gap)
		}
	}
	lt.Pairs = int64(len(gaps))
	if len(gaps) > 0 {
		lt.P50MS, lt.P90MS, lt.P95MS = percentile(gaps, 50), percentile(gaps, 90), percentile(gaps, 95)
		lt.MaxMS = slices.Max(gaps)
	}
	return lt
}

// sanitized is the write-time form of w: hashes that are not 64 lowercase
// hex characters are dropped (never a raw value), relations outside the
// closed set or beyond MaxWindowRelations dropped, session ids bounded.
func (w WindowFacts) sanitized() WindowFacts {
	if !isDigest(w.ClientWindow) || !isDigest(w.Principal) {
		w.ClientWindow, w.Principal, w.Relations = "", "", nil
	}
	var rels []WindowRelation
	for _, r := range w.Relations {
		if len(rels) == MaxWindowRelations {
			break
		}
		if (r.Kind == RelationRecording || r.Kind == RelationWorkOnProject) && r.SessionID != "" && len(r.SessionID) <= MaxFieldChars && isLabelID(r.SessionID) {
			rels = append(rels, r)
		}
	}
	w.Relations = rels
	return w
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isLabelID reports whether s is an id of letters, digits and underscores
// (wc_sess_...).
func isLabelID(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}
