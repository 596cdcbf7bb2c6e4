package workflow

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func markerSession() Session {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return Session{ID: NewSessionID(), Project: "p", Mode: ModeNormal, Lifecycle: Active,
		OwnerFingerprint: strings.Repeat("a", 64), CreatedAt: t0, UpdatedAt: t0}
}

func TestJobMarkersAreBoundedAndOptional(t *testing.T) {
	s := markerSession()
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "job_markers") {
		t.Fatal("an empty marker set is written")
	}
	if err := ValidateSession(s); err != nil {
		t.Fatal(err)
	}
	for i := range MaxJobMarkers {
		s.JobMarkers = append(s.JobMarkers, fmt.Sprintf("wc_job_%032x", i))
	}
	if err := ValidateSession(s); err != nil {
		t.Fatalf("%d markers: %v", MaxJobMarkers, err)
	}
	s.JobMarkers = append(s.JobMarkers, "one_more")
	if err := ValidateSession(s); err == nil {
		t.Fatalf("%d markers accepted", len(s.JobMarkers))
	}
	// A ledger row without the member restores an empty set; one with it
	// round-trips.
	s.JobMarkers = s.JobMarkers[:2]
	for _, sess := range []Session{markerSession(), s} {
		doc, _ := json.Marshal(Ledger{Version: LedgerVersion, Kind: LedgerKind, Sessions: []LedgerRow{{Session: sess, Events: []Event{}}}})
		lr := NewLedgerReader(strings.NewReader(string(doc)))
		row, err := lr.Next()
		if err != nil || len(row.JobMarkers) != len(sess.JobMarkers) {
			t.Fatalf("ledger: %v %+v", err, row)
		}
		if _, err := lr.Next(); err != io.EOF {
			t.Fatalf("after the only row: %v, want io.EOF", err)
		}
	}
}

func TestSyntheticEventsDoNotAdvanceActivityToNow(t *testing.T) {
	s := markerSession()
	now := s.CreatedAt.Add(time.Hour)
	finished := s.CreatedAt.Add(time.Minute)
	out, _ := Apply(&s, []Event{{Kind: EventValidationRecorded, At: finished, Synthetic: true}}, now, 0)
	if !s.UpdatedAt.Equal(finished) || !out[0].At.Equal(finished) {
		t.Fatalf("updated_at %v, at %v", s.UpdatedAt, out[0].At)
	}
	// An older synthetic event never moves activity back.
	Apply(&s, []Event{{Kind: EventValidationRecorded, At: s.CreatedAt, Synthetic: true}}, now, 1)
	if !s.UpdatedAt.Equal(finished) {
		t.Fatalf("moved back to %v", s.UpdatedAt)
	}
	Apply(&s, []Event{{Kind: EventToolCallStarted}}, now, 2)
	if !s.UpdatedAt.Equal(now) {
		t.Fatalf("ordinary append: %v", s.UpdatedAt)
	}
}
