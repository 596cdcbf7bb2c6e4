package app

import (
	"context"

	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetpg"
)

// newReadSets is the read-set Tracker over readsets.db (or schema
// readsets), or nil for an app without stores. On PostgreSQL it watches
// the listener's topic of readsetpg.Channel, so that a notice another
// replica made reaches its session's next call here.
func newReadSets(a *App) *readset.Tracker {
	if a.Stores == nil || a.Stores.ReadSets == nil {
		return nil
	}
	t := readset.NewTracker(a.Stores.ReadSets, a.Log)
	if a.listener != nil {
		topic := a.listener.Topic(readsetpg.Channel)
		t.WatchChanges(func() (<-chan struct{}, func()) { return topic.Subscribe("") })
	}
	return t
}

// readSetNotices is the Ambient of read sets (decision 0080): a project
// call's observed digests (kernel.AmbientCall.Digests, and its changed
// paths whose digest it did not report) are queued for the Tracker
// behind the response, and the call's session (verified recorder, else
// business session) gets its pending changed_since_read block.
type readSetNotices struct{ a *App }

// Project implements kernel.Ambient.
func (r readSetNotices) Project(ctx context.Context, c kernel.AmbientCall, p *kernel.Projections) {
	t := r.a.ReadSets
	if t == nil || c.Project == "" || r.a.ReadSetsOff.Load() {
		return
	}
	session := c.BusinessSession
	if c.Recorder != nil {
		session = c.Recorder.ID
	}
	obs, seen := observations(c, session)
	t.Record(obs)
	n, err := t.Take(ctx, session, c.Project, seen)
	if err != nil {
		r.a.Log.Warn("read set: delivering changed_since_read", "session", session, "err", err)
		return
	}
	p.ChangedSinceRead = n
}

// observations turns a call's digests into readset observations, and its
// changed paths without a reported digest into writes of an unknown
// digest; seen names every path the call observed.
func observations(c kernel.AmbientCall, session string) ([]readset.Observation, map[string]bool) {
	if len(c.Digests) == 0 && len(c.ChangedPaths) == 0 {
		return nil, nil
	}
	owner := c.Principal.AuthorityFingerprint()
	seen := make(map[string]bool, len(c.Digests)+len(c.ChangedPaths))
	obs := make([]readset.Observation, 0, len(c.Digests)+len(c.ChangedPaths))
	for _, d := range c.Digests {
		seen[d.Path] = true
		obs = append(obs, readset.Observation{Owner: owner, Project: c.Project, Session: session, Path: d.Path,
			SHA256: d.SHA256, Wrote: d.Wrote, At: c.Began})
	}
	for _, path := range c.ChangedPaths {
		if !seen[path] {
			seen[path] = true
			obs = append(obs, readset.Observation{Owner: owner, Project: c.Project, Session: session, Path: path, Wrote: true, At: c.Began})
		}
	}
	return obs, seen
}
