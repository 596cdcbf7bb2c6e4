package app

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
)

// TaskExpireInterval is how often a serving process expires the Agent Task
// attempts whose lease lapsed (agenttask.Service.Expire), reopening their
// tasks. A lapsed attempt is refused its heartbeat and completion from the
// instant its lease ends, whether or not this loop has run yet; the loop
// only makes the task's state say so.
const TaskExpireInterval = 10 * time.Second

// newTasks is the Agent Task service over tasks.db (or schema tasks), or
// nil for an app without stores (a registry built only to list the tools).
func newTasks(s *Stores) *agenttask.Service {
	if s == nil || s.Tasks == nil {
		return nil
	}
	return agenttask.NewService(s.Tasks)
}

// startTaskExpiry runs svc.Expire every TaskExpireInterval until ctx is
// done, then closes done.
func startTaskExpiry(ctx context.Context, a *App, svc *agenttask.Service, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(TaskExpireInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			expired, err := svc.Expire(ctx, now)
			if err != nil && ctx.Err() == nil {
				a.Log.Warn("agent tasks: expiring lapsed attempts", "err", err)
			}
			if len(expired) > 0 {
				a.Log.Info("agent tasks: lapsed attempts expired", "count", len(expired))
			}
		}
	}
}
