package app

import (
	"context"
	"slices"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/intent/intentpg"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/workflow"
)

// newIntents is the declared edit intent service over intents.db (or
// schema intents), or nil for an app without stores; on PostgreSQL it
// watches the listener's topic of intentpg.Channel, so a notice another
// replica stored reaches its session's next call here. An intent's session
// is judged open by the Workflow Session ledger when the intent is read:
// a closed or unknown session's intent counts as expired (a ledger read
// that fails counts it open, since a notice is only advisory).
func newIntents(a *App) *intent.Service {
	if a.Stores == nil || a.Stores.Intents == nil {
		return nil
	}
	svc := intent.NewService(a.Stores.Intents, func(ctx context.Context, id string) bool {
		s, err := a.Sessions.Get(ctx, id)
		if err != nil {
			return !failure.Is(err, failure.UnknownSessionID)
		}
		return s.Lifecycle == workflow.Active
	})
	if a.listener != nil {
		topic := a.listener.Topic(intentpg.Channel)
		svc.WatchChanges(func() (<-chan struct{}, func()) { return topic.Subscribe("") })
	}
	return svc
}

// intentOverlap is the Ambient of declared intents: a call of a session
// (its verified recorder and its business session) takes that session's
// pending overlap notices, and a call that changed paths on its project
// names the other live sessions' intents declaring them; both go into the
// call's overlap block. Taking a notice deletes it in one small write
// transaction after the call's effect, only when the session has one
// pending (a session without notices costs one read): the notice is then
// delivered once, whichever of the session's calls reaches it first. A
// store error leaves the block out (it is advisory) and is logged.
type intentOverlap struct{ a *App }

// Project implements kernel.Ambient.
func (o intentOverlap) Project(ctx context.Context, c kernel.AmbientCall, p *kernel.Projections) {
	svc := o.a.Intents
	if svc == nil {
		return
	}
	var sessions []string
	if c.Recorder != nil {
		sessions = append(sessions, c.Recorder.ID)
	}
	if c.BusinessSession != "" && !slices.Contains(sessions, c.BusinessSession) {
		sessions = append(sessions, c.BusinessSession)
	}
	var n *intent.Notice
	for _, id := range sessions {
		d, err := svc.Deliver(ctx, id)
		if err != nil {
			o.a.Log.Warn("intents: delivering overlap notices", "session", id, "err", err)
		}
		n = intent.Merge(n, d)
	}
	if c.Project != "" && len(c.ChangedPaths) > 0 {
		w, err := svc.WriteNotice(ctx, c.Principal.AuthorityFingerprint(), c.Project, sessions, c.ChangedPaths, time.Now())
		if err != nil {
			o.a.Log.Warn("intents: naming declared paths a write changed", "err", err)
		}
		n = intent.Merge(n, w)
	}
	p.Overlap = n
}
