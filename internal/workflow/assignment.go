package workflow

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Assignment fence format (decision 0057).
const (
	// FencePrefix starts every assignment fence. wsa2_ was the unkeyed
	// format before decision 0057: such a fence is
	// invalid_assignment_fence.
	FencePrefix = "wsa3_"
	// fenceStateBytes is the keyed digest of the assignment's semantic
	// state; fenceTagBytes the tag authenticating it for one session and
	// todo.
	fenceStateBytes = 8
	fenceTagBytes   = 16
	fenceBytes      = fenceStateBytes + fenceTagBytes
	// FenceChars is the length of every fence: the prefix and fenceBytes
	// in unpadded base64url (a multiple of 3 bytes: 4 characters each 3).
	FenceChars = len(FencePrefix) + fenceBytes/3*4
)

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

// fenceKeys are the two keys derived from a store's ObservationKey for
// assignment fences: one digests an assignment's state, the other
// authenticates that digest for a session and todo. Their labels keep
// them independent of the observation token keys derived from the same
// key (decision 0057).
type fenceKeys struct{ state, tag []byte }

func newFenceKeys(key []byte) fenceKeys {
	if len(key) != ObservationKeyBytes {
		panic("workflow: the board store's observation key is not ObservationKeyBytes long")
	}
	derive := func(use string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("webcodex assignment fence v3 " + use))
		return m.Sum(nil)
	}
	return fenceKeys{state: derive("state"), tag: derive("tag")}
}

// fenceState digests the assignment-local semantic state under the key:
// the session and todo ids, the todo's text, tags, priority and status,
// its reply counters and assignment revision, and every retained direct
// reply. Nothing else enters it, so nothing else stales a fence.
func (k fenceKeys) fenceState(todo Message, replies []Message) []byte {
	rs := make([]any, len(replies))
	for i, r := range replies {
		rs[i] = []any{r.ID, r.Kind, r.Status, r.Priority, r.Tags, r.Body, r.Resolution}
	}
	d := digest("webcodex assignment fence state v3", []any{todo.SessionID, todo.ID, todo.AssignmentRevision,
		todo.Body, todo.Tags, todo.Priority, todo.Status, todo.RepliesPosted, todo.RepliesRemoved, rs})
	m := hmac.New(sha256.New, k.state)
	m.Write(d[:])
	return m.Sum(nil)[:fenceStateBytes]
}

// fenceTag authenticates a fence's state digest for session and todo.
func (k fenceKeys) fenceTag(session, todo string, state []byte) []byte {
	m := hmac.New(sha256.New, k.tag)
	m.Write([]byte(session + "\x00" + todo + "\x00"))
	m.Write(state)
	return m.Sum(nil)[:fenceTagBytes]
}

// makeFence is FencePrefix + base64url(state || tag): state is the keyed
// digest of the assignment (fenceState), tag the HMAC-SHA256 of the
// session, the todo and state under the store's key. Without the key a
// fence cannot be computed, so holding one shows that this server issued
// it from get_session_assignment.
func (k fenceKeys) makeFence(todo Message, replies []Message) string {
	state := k.fenceState(todo, replies)
	b := make([]byte, 0, fenceBytes)
	b = append(append(b, state...), k.fenceTag(todo.SessionID, todo.ID, state)...)
	return FencePrefix + base64.RawURLEncoding.EncodeToString(b)
}

func badFence(why string) error {
	return failure.New(failure.InvalidAssignmentFence, "expected_assignment_fence %s; call get_session_assignment for this todo", why)
}

// parseFence returns the state and tag parts of a fence in the current
// format, or invalid_assignment_fence when it is not one (an old unkeyed
// wsa2_ fence included). It does not authenticate the fence: see
// authentic.
func parseFence(f string) (state, tag []byte, err error) {
	rest, ok := strings.CutPrefix(f, FencePrefix)
	if ok && len(f) == FenceChars {
		if b, derr := base64.RawURLEncoding.Strict().DecodeString(rest); derr == nil && len(b) == fenceBytes {
			return b[:fenceStateBytes], b[fenceStateBytes:], nil
		}
	}
	return nil, nil, badFence("is not an assignment fence")
}

// authentic reports whether tag was issued by this store for session,
// todo and state (compared in constant time).
func (k fenceKeys) authentic(session, todo string, state, tag []byte) bool {
	return hmac.Equal(tag, k.fenceTag(session, todo, state))
}

// snapshot builds the assignment of todo id from r, fenced with k.
func (k fenceKeys) snapshot(r BoardReader, id string) (Assignment, error) {
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
		a.Fence = k.makeFence(todo, replies)
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
		if a, err = b.fences.snapshot(r, messageID); err != nil {
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
// with Replayed (also after a restart, not after a restore from an
// export: the restored ledger's key refuses the old fence, decision 0057);
// with another payload it is idempotency_conflict. Another key on a
// completed todo is already_completed (with the completion's identity as
// detail). A fence that is not one this store issued for this session and
// todo (malformed, an old unkeyed wsa2_ fence, edited, forged without the
// key, or another session's or todo's) is invalid_assignment_fence, before
// a replay is judged. An authentic fence that does not match the current
// assignment is stale_precondition with detail assignment: the current
// snapshot, with a fresh fence when it is completable. When the commit's
// outcome cannot be established the error is
// completion_persistence_uncertain: retry the same call.
func (b *Board) Complete(ctx context.Context, p CompleteParams) (Completion, error) {
	if err := p.check(); err != nil {
		return Completion{}, err
	}
	state, tag, _ := parseFence(p.Fence)
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
		if !b.fences.authentic(p.SessionID, p.MessageID, state, tag) {
			return badFence("was not issued by this server for this session and todo")
		}
		if todo.CompletionID != "" {
			return b.replay(w, todo, p.CompletionKey, fp, &out)
		}
		cur, err := b.fences.snapshot(w, p.MessageID)
		if err != nil {
			return err
		}
		if !cur.Completable || !hmac.Equal(state, b.fences.fenceState(cur.Todo, cur.Replies)) {
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
