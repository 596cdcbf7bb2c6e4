package agenttask

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/webcodex/webcodex/internal/cursortoken"
	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of waiting for agent events (decision 0078).
const (
	// EventsTokenPrefix starts every events token.
	EventsTokenPrefix = "wte1_"
	// EventKeyBytes is the size of the store's events token key.
	EventKeyBytes = cursortoken.KeyBytes
	// MaxEventsTokenChars bounds an events token as accepted.
	MaxEventsTokenChars = 128
	// MinEventsWait and MaxEventsWait bound one call's wait.
	MinEventsWait = time.Second
	MaxEventsWait = 60 * time.Second
	// EventsDefault and EventsMax bound the tasks one call returns.
	EventsDefault = 50
	EventsMax     = 100
)

// Why an Events call returned (Events.WaitOutcome), as the board's.
const (
	WaitNone    = "not_waited"
	WaitUpdated = "updated"
	WaitTimeout = "timeout"
)

// eventsFormat is the events token: the feed revision of an owner's
// project, under the store's EventKey.
var eventsFormat = cursortoken.Format{Prefix: EventsTokenPrefix, Label: "webcodex agent events token v1 ",
	Fields: 1, MaxChars: MaxEventsTokenChars}

// A Notifier wakes the waiters of an owner's project (key FeedKey). It
// has the method set of the board's Notifier and is a wake signal only: a
// waiter re-reads the durable feed after every wake, so a spurious or
// missed wake never changes what it returns.
type Notifier interface {
	// Subscribe returns a channel closed by a later Notify of key and a
	// function that ends the subscription.
	Subscribe(key string) (<-chan struct{}, func())
	// Notify wakes the current subscribers of key.
	Notify(key string)
}

// noNotifier wakes nobody: a wait ends at its timeout.
type noNotifier struct{}

func (noNotifier) Subscribe(string) (<-chan struct{}, func()) { return nil, func() {} }
func (noNotifier) Notify(string)                              {}

// FeedKey is the notification key of owner's project: a digest, so that
// it is short and names neither.
func FeedKey(owner, project string) string {
	h := sha256.Sum256([]byte(scope(owner, project)))
	return hex.EncodeToString(h[:16])
}

// scope is what an events token is bound to: owner and project.
func scope(owner, project string) string {
	b, _ := json.Marshal([]string{"agent events", owner, project})
	return string(b)
}

// changed wakes the waiters on t's project after a committed change.
func (s *Service) changed(t Task) { s.notify.Notify(FeedKey(t.Owner, t.Project)) }

// A Change is a task in the state its latest change left it, with its live
// attempt when it has one.
type Change struct {
	Task
	// LiveAttempt is the task's live attempt (claimed tasks); its lease
	// end is as of the read: a heartbeat extends it without a change.
	LiveAttempt *LiveAttempt `json:"live_attempt,omitempty"`
}

// LiveAttempt names a task's live attempt.
type LiveAttempt struct {
	ID         string    `json:"attempt_id"`
	SessionID  string    `json:"session_id"`
	Fence      int64     `json:"fence"`
	LeaseUntil time.Time `json:"lease_until"`
}

// EventsParams describe one Events call.
type EventsParams struct {
	Owner, Project string
	// Token is the events_token of the last call; empty asks for a
	// baseline.
	Token string
	// Wait, only with a token, waits up to this long (MinEventsWait to
	// MaxEventsWait) for a change when there is none yet.
	Wait time.Duration
	// Limit bounds the tasks returned (0: EventsDefault).
	Limit int
	// BeforeWait, when set, is called once right before the call starts
	// to wait; an error ends the call without waiting.
	BeforeWait func() error
}

// Events is one read of a project's task changes after a cursor.
type Events struct {
	// Tasks are the tasks changed after the cursor, in the order of their
	// latest changes, each once in its current state.
	Tasks   []Change `json:"tasks"`
	Changed bool     `json:"changed"`
	// HasMore is true when more changes follow the last task returned;
	// the token then advances only through it.
	HasMore bool `json:"has_more"`
	// HistoryLost is true when changes after the cursor were removed by
	// retention and cannot be shown.
	HistoryLost bool `json:"history_lost"`
	// Baseline is true for a call without a token: no tasks, a token.
	Baseline    bool   `json:"baseline"`
	WaitOutcome string `json:"wait_outcome"`
	Token       string `json:"events_token"`
}

func badEventsToken(why string) error {
	return failure.New(failure.InvalidObservationToken,
		"after_events_token %s; call wait_for_agent_events without a token for a new baseline", why)
}

// Events returns the changes of owner's tasks on a project after p.Token
// (a current-state delta, not an event log), or a baseline token without
// one. A token is refused (failure.InvalidObservationToken) when it is
// malformed, edited, forged, issued for another owner or project, or
// names a revision the feed has not reached. With p.Wait and nothing
// changed it subscribes before reading, waits outside any lock, and
// re-reads the durable feed after every wake; a timeout is a successful,
// unchanged result (WaitTimeout).
func (s *Service) Events(ctx context.Context, p EventsParams) (Events, error) {
	if p.Owner == "" || p.Project == "" {
		return Events{}, errorf("agent events need an owner and a project")
	}
	switch {
	case p.Limit == 0:
		p.Limit = EventsDefault
	case p.Limit < 0 || p.Limit > EventsMax:
		return Events{}, errorf("limit must be 1-%d", EventsMax)
	}
	if p.Wait != 0 && (p.Token == "" || p.Wait < MinEventsWait || p.Wait > MaxEventsWait) {
		return Events{}, errorf("wait_seconds must be %d-%d and needs after_events_token",
			int(MinEventsWait/time.Second), int(MaxEventsWait/time.Second))
	}
	sc := scope(p.Owner, p.Project)
	if p.Token == "" {
		page, err := s.store.Feed(ctx, p.Owner, p.Project, 0, 0)
		if err != nil {
			return Events{}, err
		}
		return Events{Tasks: []Change{}, Baseline: true, WaitOutcome: WaitNone,
			Token: s.tokens.Make(sc, uint64(page.Revision))}, nil
	}
	key := FeedKey(p.Owner, p.Project)
	wake, cancel := s.notify.Subscribe(key)
	defer func() { cancel() }()
	e, err := s.events(ctx, p, sc)
	if err != nil || e.Changed || p.Wait == 0 {
		return e, err
	}
	if p.BeforeWait != nil {
		if err := p.BeforeWait(); err != nil {
			return Events{}, err
		}
	}
	timer := time.NewTimer(p.Wait)
	defer timer.Stop()
	for {
		select {
		case <-wake:
			cancel()
			wake, cancel = s.notify.Subscribe(key)
			if e, err = s.events(ctx, p, sc); err != nil || e.Changed {
				e.WaitOutcome = WaitUpdated
				return e, err
			}
		case <-timer.C:
			// A change no wake carried is still seen here.
			e, err = s.events(ctx, p, sc)
			e.WaitOutcome = WaitTimeout
			if e.Changed {
				e.WaitOutcome = WaitUpdated
			}
			return e, err
		case <-ctx.Done():
			return Events{}, ctx.Err()
		}
	}
}

// events reads the changes after p.Token from one snapshot.
func (s *Service) events(ctx context.Context, p EventsParams, sc string) (Events, error) {
	fields, err := s.tokens.Parse(p.Token, sc)
	switch {
	case errors.Is(err, cursortoken.ErrTooLong):
		return Events{}, badEventsToken(fmt.Sprintf("is longer than %d characters", MaxEventsTokenChars))
	case errors.Is(err, cursortoken.ErrMalformed):
		return Events{}, badEventsToken("is not an events token")
	case err != nil:
		return Events{}, badEventsToken("was not issued for this project")
	}
	after := int64(fields[0])
	page, err := s.store.Feed(ctx, p.Owner, p.Project, max(after, 0), p.Limit+1)
	if err != nil {
		return Events{}, err
	}
	if after < 0 || after > page.Revision {
		return Events{}, badEventsToken("names a revision this project's feed has not reached")
	}
	e := Events{Tasks: page.Changes, WaitOutcome: WaitNone, HistoryLost: after < page.LowWatermark}
	next := page.Revision
	if len(e.Tasks) > p.Limit {
		e.Tasks, e.HasMore = e.Tasks[:p.Limit], true
		next = e.Tasks[p.Limit-1].FeedRevision
	}
	if e.Tasks == nil {
		e.Tasks = []Change{}
	}
	e.Changed = len(e.Tasks) > 0 || e.HistoryLost
	e.Token = s.tokens.Make(sc, uint64(next))
	return e, nil
}
