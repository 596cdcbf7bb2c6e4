package workflow

import (
	"fmt"
	"unicode/utf8"
)

// isFingerprint reports whether s is a lowercase hex SHA-256.
func isFingerprint(s string) bool { return len(s) == 64 && lowerHex(s) }

// lowerHex reports whether s is made of lowercase hex digits only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidateSession checks that a stored or imported header is well formed.
// Restore and import discard a row that fails it rather than admit it.
func ValidateSession(s Session) error {
	if _, err := ParseSessionID(s.ID); err != nil {
		return fmt.Errorf("session_id: malformed")
	}
	if s.Project == "" || len(s.Project) > 256 {
		return fmt.Errorf("project: missing or too long")
	}
	if !s.Mode.Valid() {
		return fmt.Errorf("mode: %q is not normal or read_only", s.Mode)
	}
	if s.Lifecycle != Active && s.Lifecycle != Closed {
		return fmt.Errorf("lifecycle: %q is not active or closed", s.Lifecycle)
	}
	if (s.Lifecycle == Closed) != (s.ClosedAt != nil) {
		return fmt.Errorf("closed_at: must be set exactly when lifecycle is closed")
	}
	if !isFingerprint(s.OwnerFingerprint) {
		return fmt.Errorf("owner_authority_fingerprint: not a lowercase SHA-256")
	}
	if err := s.ExecutionContext.Validate(); err != nil {
		return fmt.Errorf("execution_context: %v", err)
	}
	if utf8.RuneCountInString(s.Title) > TitleMaxChars {
		return fmt.Errorf("title: longer than %d characters", TitleMaxChars)
	}
	if s.CreatedAt.IsZero() || s.UpdatedAt.Before(s.CreatedAt) {
		return fmt.Errorf("timestamps: created_at missing or after updated_at")
	}
	if len(s.JobMarkers) > MaxJobMarkers {
		return fmt.Errorf("job_markers: more than %d", MaxJobMarkers)
	}
	for _, m := range s.JobMarkers {
		if m == "" || len(m) > 64 {
			return fmt.Errorf("job_markers: empty or too long marker")
		}
	}
	if s.EventsObserved < 0 || s.Counters.ToolCalls < 0 || s.Counters.ToolFailures < 0 ||
		s.Counters.Instructions < 0 || s.Counters.GuardDenials < 0 || s.Counters.Replays < 0 {
		return fmt.Errorf("counters: negative")
	}
	switch {
	case s.EventsPurged < 0 || s.EventsPurged > s.EventsObserved:
		return fmt.Errorf("events_purged: must be 0 to events_observed")
	case s.EventsPurged > 0 && !s.RetentionTruncated:
		return fmt.Errorf("events_purged: set while retention_truncated is false")
	}
	return nil
}

// ValidateEvent checks that a stored or imported event is well formed and
// within the ledger's bounds.
func ValidateEvent(e Event) error {
	if e.Seq < 1 {
		return fmt.Errorf("seq: must be >= 1")
	}
	if !e.Kind.Valid() {
		return fmt.Errorf("kind: unknown %q", e.Kind)
	}
	switch e.Role {
	case "", RoleRecorder, RoleBusiness:
	default:
		return fmt.Errorf("role: unknown %q", e.Role)
	}
	switch e.Outcome {
	case "", OutcomeOK, OutcomeFailed, OutcomeDenied, OutcomeInterrupted, OutcomeCancelled, OutcomeUnknown:
	default:
		return fmt.Errorf("outcome: unknown %q", e.Outcome)
	}
	if e.At.IsZero() {
		return fmt.Errorf("at: missing")
	}
	if utf8.RuneCountInString(e.Text) > InstructionMaxChars {
		return fmt.Errorf("text: longer than %d characters", InstructionMaxChars)
	}
	if len(e.ObservedPaths) > MaxEventPaths || len(e.ChangedPaths) > MaxEventPaths {
		return fmt.Errorf("paths: more than %d", MaxEventPaths)
	}
	if len(e.Facts) > MaxFacts {
		return fmt.Errorf("facts: more than %d", MaxFacts)
	}
	for _, v := range e.Facts {
		if utf8.RuneCountInString(v) > FactMaxChars {
			return fmt.Errorf("facts: value longer than %d characters", FactMaxChars)
		}
	}
	if err := checkReplay(e); err != nil {
		return err
	}
	if (e.Kind == EventValidationRecorded) != (e.Validation != nil) {
		return fmt.Errorf("validation: present exactly on validation_recorded events")
	}
	if e.Validation != nil {
		return e.Validation.Validate()
	}
	return nil
}
