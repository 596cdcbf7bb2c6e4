package workflow

import "context"

// SnapshotFence is the handoff snapshot fence over one Workflow Session:
// its two independent mutation dimensions, read together in one store
// snapshot. Each is monotonic, so equal fences read before and after
// gathering prove that neither the ledger nor the board changed between
// them.
type SnapshotFence struct {
	// EventsObserved is the ledger dimension (the session's cumulative
	// event count).
	EventsObserved int64 `json:"events_observed"`
	// MessageObservationRevision is the board dimension (the board's
	// message-observation revision; 0 before its first message).
	MessageObservationRevision int64 `json:"message_observation_revision"`
}

// CollaborationCounts are a board's open collaboration counts, as the
// handoff brief and the closeout report them.
type CollaborationCounts struct {
	OpenGuidance  int `json:"open_guidance"`
	OpenQuestions int `json:"open_questions"`
	OpenRisks     int `json:"open_risks"`
	OpenTodos     int `json:"open_todos"`
	// UnresolvedAckRequired counts the open messages posted with
	// requires_ack (whether or not an ACK was ever observed: an ACK never
	// resolves).
	UnresolvedAckRequired int `json:"unresolved_ack_required"`
}

// SessionSnapshot is one consistent read of a session's fence and its
// board's collaboration counts: the counts are those of the board at
// Fence.MessageObservationRevision.
type SessionSnapshot struct {
	Fence         SnapshotFence
	Collaboration CollaborationCounts
}

// SnapshotReader reads a [SessionSnapshot] in one store snapshot
// (failure.UnknownSessionID when the session does not exist). It sees
// every acknowledged call of the session, as Store.Get does.
type SnapshotReader interface {
	SessionSnapshot(ctx context.Context, id string) (SessionSnapshot, error)
}
