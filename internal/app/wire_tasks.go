package app

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskpg"
	"github.com/webcodex/webcodex/internal/workflow"
)

// TaskExpireInterval is how often a serving process expires the Agent Task
// attempts whose lease lapsed (agenttask.Service.Expire), reopening their
// tasks. A lapsed attempt is refused its heartbeat and completion from the
// instant its lease ends, whether or not this loop has run yet; the loop
// only makes the task's state say so.
const TaskExpireInterval = 10 * time.Second

// newTasks is the Agent Task service over tasks.db (or schema tasks), or
// nil for an app without stores (a registry built only to list the tools).
// Its waiters (wait_for_agent_events) are woken by this process's changes
// on a data directory, and on a database by every replica's, through the
// listener's topic of agenttaskpg.Channel.
func newTasks(a *App) *agenttask.Service {
	if a.Stores == nil || a.Stores.Tasks == nil {
		return nil
	}
	var n agenttask.Notifier = workflow.NewLocalNotifier()
	if a.listener != nil {
		n = a.listener.Topic(agenttaskpg.Channel)
	}
	return agenttask.NewService(a.Stores.Tasks).WithNotifier(n)
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
