package window

import (
	"context"
	"slices"

	"github.com/webcodex/webcodex/internal/auth"
)

// MaxAwarenessPeers bounds the peer ids a peer_awareness hint names (the
// most recently active first; RecentPeers counts them all, up to
// MaxPeers).
const MaxAwarenessPeers = 4

// Awareness is the peer_awareness hint: other windows of the caller's
// principal had meaningful activity on this exact project within Recent
// ("recent", never "online"). It is shown when that set of windows
// changes (the set last shown is retained with the window's activity), not
// on every call.
type Awareness struct {
	RecentPeers int      `json:"recent_peers"`
	PeerIDs     []string `json:"peer_ids"`
	Hint        string   `json:"hint"`
}

const awarenessHint = "other windows of yours were active on this project in the last 10 minutes (recent, not online); list_peers names them, post_peer_message reaches one"

// Aware returns the peer_awareness hint of a meaningful call of p's
// window on project, or nil: when no peer is recent, when the set of
// recent peers is the one last shown to this window on this project, or
// when the store cannot be read. The set shown is recorded behind the
// caller (never waited for); a lost write only shows the hint once more.
func (s *Service) Aware(ctx context.Context, p auth.Principal, window, tool, project string) *Awareness {
	if s == nil || window == "" || !Meaningful(tool, project, false) {
		return nil
	}
	pr := PrincipalOf(p)
	now := s.now()
	ids, err := s.store.Peers(ctx, pr, window, project, now.Add(-Recent), MaxPeers)
	if err != nil {
		s.log.Warn("peer awareness not projected", "err", err)
		return nil
	}
	shown, err := s.store.Awareness(ctx, pr, window, project)
	if err != nil {
		s.log.Warn("peer awareness not projected", "err", err)
		return nil
	}
	d := ""
	if len(ids) > 0 {
		set := slices.Sorted(slices.Values(ids))
		d = digest(append([]string{"webcodex.peer-awareness.v1"}, set...)...)
	}
	if d == shown {
		return nil
	}
	t := Touch{Principal: pr, Window: window, PeerID: PeerID(pr, window), Project: project, At: now}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TouchQueueWait)
	defer cancel()
	if err := s.store.SetAwareness(qctx, t, d, func(err error) {
		if err != nil {
			s.log.Warn("peer awareness not recorded", "err", err)
		}
	}); err != nil {
		s.log.Warn("peer awareness not recorded", "err", err)
	}
	if d == "" {
		return nil
	}
	a := &Awareness{RecentPeers: len(ids), Hint: awarenessHint}
	a.PeerIDs = ids[:min(len(ids), MaxAwarenessPeers)]
	return a
}
