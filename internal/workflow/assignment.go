package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// FencePrefix starts every assignment fence.
const FencePrefix = "wsa2_"

// fenceLen is the length of a fence: the prefix and 16 bytes in unpadded
// base64url (8 bytes binding it to the session and todo, 8 bytes of the
// assignment's semantic state).
const fenceLen = len(FencePrefix) + 22

// Reasons a todo is not completable from its assignment snapshot.
const (
	NotCompletableResolved       = "todo_resolved"
	NotCompletableSessionClosed  = "session_closed"
	NotCompletableRepliesRemoved = "replies_removed_by_retention"
	NotCompletableTooManyReplies = "too_many_replies"
)

// An Assignment is one atomic snapshot of a todo and its direct replies.
type Assignment struct {
	Todo Message `json:"todo"`
	// Replies are the retained direct replies, oldest first (at most
	// MaxAssignmentReplies).
	Replies []Message `json:"replies"`
	// RepliesComplete is true when Replies holds every direct reply ever
	// posted to the todo.
	RepliesComplete bool `json:"replies_complete"`
	// Completable says whether complete_session_message can complete the
	// todo from this snapshot; Reason says why not.
	Completable bool   `json:"completable"`
	Reason      string `json:"not_completable_reason,omitempty"`
	// Fence is the assignment_fence to pass to complete_session_message;
	// only a completable snapshot has one.
	Fence string `json:"assignment_fence,omitempty"`
	// Fetch is the todo's recorded assignment fetch before this one
	// (zero when none; internal, see [Board.RecordFetch]).
	Fetch TodoFetch `json:"-"`
}

func fenceBind(session, todo string) []byte {
	h := sha256.Sum256([]byte("webcodex assignment fence bind v2\x00" + session + "\x00" + todo))
	return h[:8]
}

// fenceState digests the assignment-local semantic state: the todo's
// text, tags, priority and status, its reply counters and assignment
// revision, and every retained direct reply.
func fenceState(todo Message, replies []Message) []byte {
	rs := make([]any, len(replies))
	for i, r := range replies {
		rs[i] = []any{r.ID, r.Kind, r.Status, r.Priority, r.Tags, r.Body, r.Resolution}
	}
	d := digest("webcodex assignment fence state v2", []any{todo.SessionID, todo.ID, todo.AssignmentRevision,
		todo.Body, todo.Tags, todo.Priority, todo.Status, todo.RepliesPosted, todo.RepliesRemoved, rs})
	return d[:8]
}

func makeFence(todo Message, replies []Message) string {
	b := append(fenceBind(todo.SessionID, todo.ID), fenceState(todo, replies)...)
	return FencePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// parseFence returns the binding and state parts of a fence, or
// invalid_assignment_fence when it is not one.
func parseFence(f string) (bind, state []byte, err error) {
	rest, ok := strings.CutPrefix(f, FencePrefix)
	if ok && len(f) == fenceLen {
		if b, derr := base64.RawURLEncoding.Strict().DecodeString(rest); derr == nil && len(b) == 16 {
			return b[:8], b[8:], nil
		}
	}
	return nil, nil, failure.New(failure.InvalidAssignmentFence, "expected_assignment_fence is not an assignment fence; call get_session_assignment")
}

// snapshot builds the assignment of todo id from r.
func snapshot(r BoardReader, id string) (Assignment, error) {
	st, err := r.State()
	if err != nil {
		return Assignment{}, err
	}
	todo, ok, err := r.Message(id)
	if err != nil {
		return Assignment{}, err
	}
	if !ok {
		return Assignment{}, unknownMessage(id)
	}
	if todo.Kind != MessageTodo {
		return Assignment{}, failure.New(failure.SessionMessageNotTodo, "message %s is a %s, not a todo", id, todo.Kind)
	}
	replies, err := r.Replies(id, MaxAssignmentReplies+1)
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{Todo: todo, Replies: replies}
	if len(replies) > MaxAssignmentReplies {
		a.Replies = replies[:MaxAssignmentReplies]
	}
	a.RepliesComplete = todo.RepliesRemoved == 0 && len(replies) <= MaxAssignmentReplies
	switch {
	case todo.Status != MessageOpen:
		a.Reason = NotCompletableResolved
	case st.Lifecycle != Active:
		a.Reason = NotCompletableSessionClosed
	case todo.RepliesRemoved > 0:
		a.Reason = NotCompletableRepliesRemoved
	case len(replies) > MaxAssignmentReplies:
		a.Reason = NotCompletableTooManyReplies
	default:
		a.Completable = true
		a.Fence = makeFence(todo, replies)
	}
	if a.Replies == nil {
		a.Replies = []Message{}
	}
	return a, nil
}

// Assignment returns one atomic snapshot of todo messageID in session id:
// the todo, its retained direct replies and, when it is completable, a
// fresh assignment fence. Only assignment-local changes (the todo's own
// status, its direct replies and their status, retention of a reply)
// stale the fence; other board traffic and ACK bookkeeping do not.
func (b *Board) Assignment(ctx context.Context, id, messageID string) (Assignment, error) {
	if err := ParseMessageID("message_id", messageID); err != nil {
		return Assignment{}, err
	}
	var a Assignment
	err := b.store.ViewBoard(ctx, id, func(r BoardReader) error {
		var err error
		if a, err = snapshot(r, messageID); err != nil {
			return err
		}
		f, err := r.Fetches([]string{messageID})
		a.Fetch = f[messageID]
		return err
	})
	return a, err
}

// CompleteParams describe the completion of a todo.
type CompleteParams struct {
	SessionID string
	MessageID string
	Answer    string
	// CompletionKey correlates one completion intent across retries.
	CompletionKey string
	// Fence is the expected_assignment_fence from get_session_assignment.
	Fence    string
	Tags     []string
	Priority Priority
	// Author is the verified recorder's session id, or "".
	Author string
}

func (p *CompleteParams) check() error {
	if p.Priority == "" {
		p.Priority = PriorityNormal
	}
	if err := ParseMessageID("message_id", p.MessageID); err != nil {
		return err
	}
	if !p.Priority.Valid() {
		return failure.New(failure.InvalidArguments, "priority must be low, normal or high")
	}
	if err := checkText("answer", p.Answer, MessageMinChars, MessageMaxChars); err != nil {
		return err
	}
	if err := checkText("completion_key", p.CompletionKey, 1, MaxIdempotencyKeyChars); err != nil {
		return err
	}
	if err := checkTags(p.Tags); err != nil {
		return err
	}
	p.Tags = normTags(p.Tags)
	_, _, err := parseFence(p.Fence)
	return err
}

func (p CompleteParams) fingerprint() string {
	return fingerprint("webcodex completion v1", []any{p.MessageID, p.Answer, p.Tags, p.Priority})
}

// A Completion is a completed todo and its answer.
type Completion struct {
	Todo     Message `json:"todo"`
	Answer   Message `json:"answer"`
	Replayed bool    `json:"replayed"`
}

var errStale = errors.New("stale assignment fence")

// Complete atomically posts one answer reply to an open todo and resolves
// the todo, and returns only once both are durable. The same
// completion_key with the same payload returns the original completion
// with Replayed (also after a restart); with another payload it is
// idempotency_conflict. Another key on a completed todo is
// already_completed (with the completion's identity as detail). A fence
// that does not match the current assignment is stale_precondition with
// detail assignment: the current snapshot, with a fresh fence when it is
// completable. A fence for another session or todo is
// invalid_assignment_fence. When the commit's outcome cannot be
// established the error is completion_persistence_uncertain: retry the
// same call.
func (b *Board) Complete(ctx context.Context, p CompleteParams) (Completion, error) {
	if err := p.check(); err != nil {
		return Completion{}, err
	}
	bind, state, _ := parseFence(p.Fence)
	fp := p.fingerprint()
	var out Completion
	ran := false
	err := b.store.UpdateBoard(ctx, p.SessionID, func(w BoardWriter) error {
		st, err := activeState(w, p.SessionID)
		if err != nil {
			return err
		}
		todo, ok, err := w.Message(p.MessageID)
		if err != nil {
			return err
		}
		if !ok {
			return unknownMessage(p.MessageID)
		}
		if todo.Kind != MessageTodo {
			return failure.New(failure.SessionMessageNotTodo, "message %s is a %s, not a todo", todo.ID, todo.Kind)
		}
		if string(bind) != string(fenceBind(p.SessionID, p.MessageID)) {
			return failure.New(failure.InvalidAssignmentFence, "expected_assignment_fence was issued for another session or todo; call get_session_assignment for this one")
		}
		if todo.CompletionID != "" {
			return b.replay(w, todo, p.CompletionKey, fp, &out)
		}
		cur, err := snapshot(w, p.MessageID)
		if err != nil {
			return err
		}
		if !cur.Completable || string(state) != string(fenceState(cur.Todo, cur.Replies)) {
			return errStale
		}
		now := b.now().UTC()
		answer := Message{
			ID: NewMessageID(), SessionID: p.SessionID, CreatedAt: now, Kind: MessageAnswer,
			Status: MessageOpen, Priority: p.Priority, Body: redact.String(p.Answer), Tags: redactAll(p.Tags),
			ReplyTo: todo.ID, AuthorSessionID: p.Author,
		}
		todo.RepliesPosted++
		todo.AssignmentRevision++
		todo.Status, todo.ResolvedAt = MessageResolved, &now
		todo.ResolvedByMessageID, todo.CompletionID = answer.ID, newCompletionID()
		todo.CompletionKey, todo.CompletionFingerprint = p.CompletionKey, fp
		// One observable change each: the todo's resolution, then the
		// answer's creation.
		st.ObservationRevision++
		todo.ObservationRevision = st.ObservationRevision
		if err := w.Save(todo); err != nil {
			return err
		}
		if err := b.insert(w, &st, &answer, todo.ID); err != nil {
			return err
		}
		if err := w.SetState(st); err != nil {
			return err
		}
		out = Completion{Todo: todo, Answer: answer}
		ran = true
		return nil
	})
	switch {
	case errors.Is(err, errStale):
		return Completion{}, b.stale(ctx, p)
	case err != nil && ran:
		return Completion{}, failure.Wrap(failure.CompletionPersistenceUncertain, err,
			"the completion's commit could not be confirmed; retry the same call with the same completion_key").
			WithDetail("retry_same_completion", true)
	case err == nil && !out.Replayed:
		b.notify.Notify(p.SessionID)
	}
	return out, err
}

// replay answers a completion call on a completed todo.
func (b *Board) replay(r BoardReader, todo Message, key, fp string, out *Completion) error {
	if todo.CompletionKey != key {
		return failure.New(failure.AlreadyCompleted, "todo %s was already completed by another completion", todo.ID).
			WithDetail("completion_id", todo.CompletionID).WithDetail("answer_message_id", todo.ResolvedByMessageID)
	}
	if todo.CompletionFingerprint != fp {
		return failure.New(failure.IdempotencyConflict, "completion_key was already used with another answer for this todo").
			WithDetail("completion_id", todo.CompletionID)
	}
	answer, ok, err := r.Message(todo.ResolvedByMessageID)
	if err != nil {
		return err
	}
	if !ok {
		return failure.New(failure.AlreadyCompleted, "todo %s was completed with this completion_key, but its answer is no longer retained", todo.ID).
			WithDetail("completion_id", todo.CompletionID).WithDetail("answer_message_id", todo.ResolvedByMessageID)
	}
	*out = Completion{Todo: todo, Answer: answer, Replayed: true}
	return nil
}

// stale is the failure of a completion whose fence no longer matches: the
// current committed assignment, with a fresh fence when it is completable.
func (b *Board) stale(ctx context.Context, p CompleteParams) error {
	a, err := b.Assignment(ctx, p.SessionID, p.MessageID)
	if err != nil {
		return err
	}
	return failure.New(failure.StalePrecondition, "the assignment changed since its fence was issued; nothing was completed. Re-read the assignment and retry with its fence").
		WithDetail("assignment", a)
}
