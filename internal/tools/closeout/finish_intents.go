package closeout

import (
	"context"

	"github.com/webcodex/webcodex/internal/intent"
)

// Intent advisories: the session declared an intent (declare_intent) and
// some of its globs matched none of the session's changed paths, or some
// changed path matched none of its globs. A session that declared no
// intent gets neither. They never block: intents are advisory.
const (
	AdvisoryIntentUntouched  = "intent_globs_untouched"
	AdvisoryUndeclaredChange = "changes_not_declared"
)

// judgeIntents compares the session's declared intent (as stored, live or
// expired) with the changed paths the changes block lists (at most
// MaxChangedPaths): nil when the session declared none, intents are not
// wired, or the intent store could not be read.
func (t *Tools) judgeIntents(ctx context.Context, f *findings, sessionID string, changed []string) *intent.Coverage {
	if t.Intents == nil {
		return nil
	}
	in, ok, err := t.Intents.Get(ctx, sessionID)
	if err != nil || !ok {
		return nil
	}
	c := intent.Cover(in, changed)
	if c.UntouchedTotal > 0 {
		f.adv = append(f.adv, AdvisoryIntentUntouched)
	}
	if c.UndeclaredTotal > 0 {
		f.adv = append(f.adv, AdvisoryUndeclaredChange)
	}
	return &c
}
