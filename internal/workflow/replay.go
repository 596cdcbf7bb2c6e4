package workflow

import "fmt"

// MaxReplayOfChars bounds Replay.Of (and an event's replay_of): the id of
// an original effect, such as a wc_msg_ or wc_cmp_ id.
const MaxReplayOfChars = 128

// A Replay is the domain's verdict that a call repeated an earlier one
// under an idempotency key (a post's delivery_key, a completion's
// completion_key) with the same payload, and returned that call's result
// while changing nothing. The domain that holds the key decides it, from
// what its store proves, and names the original effect; the kernel records
// it on the call's tool_call_finished event and evidence record. The zero
// Replay is a call that was no replay.
type Replay struct {
	// Of is the id of the original effect the replay returned, as the
	// store holds it: the message id of a replayed post, the completion id
	// of a replayed completion. Never an invocation id: the board does not
	// record which call made a message; the original call's finished
	// event carries this id as a fact (message_id, completion_id).
	Of string
}

// Replayed reports whether the call was a replay.
func (r Replay) Replayed() bool { return r.Of != "" }

// Check reports whether the ledger can store r as it is: Of at most
// MaxReplayOfChars bytes. A replay that fails it is a defect of the domain
// that decided it, never of the caller.
func (r Replay) Check() error {
	if len(r.Of) > MaxReplayOfChars {
		return fmt.Errorf("replay_of: longer than %d bytes", MaxReplayOfChars)
	}
	return nil
}

// checkReplay checks the replay fields of an event: replayed exactly when
// it names its original, only on a successful tool_call_finished, and
// bounded.
func checkReplay(e Event) error {
	switch {
	case e.Replayed != (e.ReplayOf != ""):
		return fmt.Errorf("replayed: set exactly when replay_of names the original")
	case !e.Replayed:
		return nil
	case e.Kind != EventToolCallFinished || e.Outcome != OutcomeOK:
		return fmt.Errorf("replayed: only on a tool_call_finished with outcome ok")
	}
	return Replay{Of: e.ReplayOf}.Check()
}

// Replay returns the replay verdict of a completion: the completion id of
// the original when this call replayed it.
func (c Completion) Replay() Replay {
	if !c.Replayed {
		return Replay{}
	}
	return Replay{Of: c.Todo.CompletionID}
}

// PostReplay returns the replay verdict of a post: the original message
// when replayed (Board.Post's second result) is true.
func PostReplay(m Message, replayed bool) Replay {
	if !replayed {
		return Replay{}
	}
	return Replay{Of: m.ID}
}
