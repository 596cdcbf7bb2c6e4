package memory

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// BootstrapEntry is one entry of the memory.bootstrap projection.
type BootstrapEntry struct {
	MemoryKey string    `json:"memory_key"`
	Revision  string    `json:"revision"`
	Tags      []string  `json:"tags"`
	Pinned    bool      `json:"pinned"`
	UpdatedAt time.Time `json:"updated_at"`
	Body      string    `json:"body"`
	// BodyTruncated reports that Body is cut (memory_read has it whole).
	BodyTruncated bool `json:"body_truncated,omitempty"`
}

// Bootstrap is the memory.bootstrap material: a bounded projection of a
// scope's entries, pinned first, then newest first. Its JSON encoding is
// at most MaxBootstrapBytes.
type Bootstrap struct {
	Project string           `json:"project"`
	Entries []BootstrapEntry `json:"entries"`
	// Total is the scope's entry count; Included how many Entries holds.
	Total    int `json:"total"`
	Included int `json:"included"`
	// Truncated reports that entries were left out or a body was cut.
	Truncated bool `json:"truncated"`
}

// minBodyRoom is the least room worth cutting a body into; with less, the
// projection stops before the entry instead.
const minBodyRoom = 256

// Bootstrap projects scope into at most MaxBootstrapBytes of JSON.
func (s *Service) Bootstrap(ctx context.Context, scope Scope) (Bootstrap, error) {
	b := Bootstrap{Project: scope.Project, Entries: []BootstrapEntry{}}
	total, err := s.store.Count(ctx, scope.ID)
	if err != nil {
		return Bootstrap{}, err
	}
	b.Total = total
	b.Truncated = true // until the last entry fits
	// size is the encoding's size so far: the envelope with the largest
	// counts and truncated:false (the longer of the two booleans) plus the
	// entries and their separators.
	base := envelopeSize(b)
	size := base
	seen := 0
	err = s.store.Each(ctx, scope.ID, func(e Entry) bool {
		seen++
		be := BootstrapEntry{MemoryKey: e.MemoryKey, Revision: e.Revision, Tags: e.Tags, Pinned: e.Pinned(), UpdatedAt: e.UpdatedAt, Body: e.Body}
		n := jsonSize(be)
		if len(b.Entries) > 0 {
			n++ // the comma
		}
		if size+n <= MaxBootstrapBytes {
			b.Entries = append(b.Entries, be)
			size += n
			return true
		}
		// Cut the body to what is left, when enough is.
		room := MaxBootstrapBytes - size - (n - jsonSize(be.Body)) - len(`,"body_truncated":true`) - 2
		if room >= minBodyRoom {
			be.Body, be.BodyTruncated = cutJSON(be.Body, room), true
			b.Entries = append(b.Entries, be)
		}
		return false
	})
	if err != nil {
		return Bootstrap{}, err
	}
	b.Included = len(b.Entries)
	last := len(b.Entries) == 0 || !b.Entries[len(b.Entries)-1].BodyTruncated
	b.Truncated = b.Included < total || !last || seen < total
	return b, nil
}

// envelopeSize is the encoding size of b without entries, counted with
// the widest values its counts can take.
func envelopeSize(b Bootstrap) int {
	b.Entries = []BootstrapEntry{}
	b.Included, b.Truncated = b.Total, false
	return jsonSize(b)
}

func jsonSize(v any) int {
	raw, _ := json.Marshal(v)
	return len(raw)
}

// cutJSON returns the longest prefix of s (whole runes) whose JSON string
// encoding is at most room bytes.
func cutJSON(s string, room int) string {
	lo, hi := 0, len(s)
	for lo < hi { // the largest prefix length that fits
		mid := (lo + hi + 1) / 2
		p := s[:mid]
		for !utf8.ValidString(p) && len(p) > 0 {
			p = p[:len(p)-1]
		}
		if jsonSize(p) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	p := s[:lo]
	for !utf8.ValidString(p) && len(p) > 0 {
		p = p[:len(p)-1]
	}
	return p
}
