package intent

import (
	"context"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/pendingcache"
	"github.com/webcodex/webcodex/internal/redact"
)

// MaxWritePaths bounds the changed paths of one call that WriteNotice
// compares with the declared globs (the rest are not compared).
const MaxWritePaths = 256

// Service is the intent API. Every call takes the current time from its
// caller, so expiry is a function of the now passed in.
type Service struct {
	store Store
	open  func(ctx context.Context, sessionID string) bool
	// clean remembers the sessions Deliver found without notices; it is
	// told of the notices this Service's Declare made and of those
	// another process signals (WatchChanges).
	clean *pendingcache.Cache
}

// MaxCleanSessions bounds the sessions a Service remembers as having no
// pending notice; past it the memory is cleared and each session's next
// Deliver reads the store once again.
const MaxCleanSessions = 4096

// NewService returns a Service over store. open reports whether a
// Workflow Session is still open; an intent of a session it reports
// closed is treated as expired everywhere (nil: every session is open).
func NewService(store Store, open func(ctx context.Context, sessionID string) bool) *Service {
	return &Service{store: store, open: open, clean: pendingcache.New(MaxCleanSessions)}
}

// WatchChanges gives s the signal of notices other processes made:
// subscribe returns a channel closed at the next such notice (or when
// some may have been missed) and a function that ends the subscription.
// On PostgreSQL it is the listener's topic of intentpg.Channel. Deliver
// takes a signal that has arrived in first, without waiting. Call it
// before s is used; Close ends it.
func (s *Service) WatchChanges(subscribe func() (<-chan struct{}, func())) { s.clean.Watch(subscribe) }

// Close ends the subscription WatchChanges took.
func (s *Service) Close() { s.clean.Close() }

func stamp(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

func (s *Service) isOpen(ctx context.Context, id string) bool {
	return s.open == nil || s.open(ctx, id)
}

// DeclareParams is one declaration: the caller has authorized SessionID
// (an open session of Owner on Project).
type DeclareParams struct {
	Owner, Project, SessionID string
	Globs                     []string
	Note                      string
	// TTL is the intent's lifetime (0: DefaultTTL; MinTTL-MaxTTL).
	TTL time.Duration
}

// CheckGlobs validates and canonicalizes globs (1-MaxGlobs, each
// CanonicalGlob), dropping repeats: failure.InvalidArguments naming the
// first bad glob.
func CheckGlobs(globs []string) ([]string, error) {
	if len(globs) == 0 || len(globs) > MaxGlobs {
		return nil, errorf("paths must hold 1-%d globs, not %d", MaxGlobs, len(globs))
	}
	out := make([]string, 0, len(globs))
	for _, g := range globs {
		c, err := CanonicalGlob(g)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Declare validates p and stores it as p.SessionID's intent, replacing an
// earlier one, and returns it with the other live sessions' intents it
// overlaps (also stored as notices for both sessions). Errors:
// failure.InvalidArguments for a bad glob, count, note or TTL;
// failure.Conflict when the project already holds MaxProjectIntents live
// intents of other sessions. Nothing is stored on error.
func (s *Service) Declare(ctx context.Context, p DeclareParams, now time.Time) (Intent, []Overlap, error) {
	globs, err := CheckGlobs(p.Globs)
	if err != nil {
		return Intent{}, nil, err
	}
	if utf8.RuneCountInString(p.Note) > NoteMaxChars {
		return Intent{}, nil, errorf("note must be at most %d characters", NoteMaxChars)
	}
	ttl := p.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return Intent{}, nil, errorf("ttl_seconds must be %d-%d", int(MinTTL.Seconds()), int(MaxTTL.Seconds()))
	}
	now = stamp(now)
	in := Intent{SessionID: p.SessionID, Owner: p.Owner, Project: p.Project, Globs: globs,
		Note: redact.Bounded(p.Note, NoteMaxChars), DeclaredAt: now, ExpiresAt: now.Add(ttl)}
	// Whether the other sessions are open is asked before the store's
	// transaction, so it holds no connection while the ledger is read;
	// a session that declared in between is asked inside.
	open, err := s.openSessions(ctx, p.Owner, p.Project, now)
	if err != nil {
		return Intent{}, nil, err
	}
	var mine []Overlap
	made := false
	err = s.store.Declare(ctx, in, now, func(others []Intent) ([]StoredNotice, error) {
		mine, made = nil, false
		var notices []StoredNotice
		live := 0
		for _, o := range others {
			isOpen, known := open[o.SessionID]
			if !known {
				isOpen = s.isOpen(ctx, o.SessionID)
			}
			if !isOpen {
				continue
			}
			live++
			if live >= MaxProjectIntents {
				return nil, failure.New(failure.Conflict, "project %s already holds %d live intents of other sessions", in.Project, live)
			}
			theirs, ours := overlapping(o.Globs, in.Globs)
			if len(theirs) == 0 {
				continue
			}
			toMe := Overlap{SessionID: o.SessionID, Kind: KindIntent, Globs: theirs, Paths: ours}
			toThem := Overlap{SessionID: in.SessionID, Kind: KindIntent, Globs: ours, Paths: theirs}
			mine = append(mine, toMe)
			notices = append(notices,
				StoredNotice{Recipient: in.SessionID, Owner: in.Owner, Project: in.Project, Overlap: toMe, CreatedAt: now},
				StoredNotice{Recipient: o.SessionID, Owner: in.Owner, Project: in.Project, Overlap: toThem, CreatedAt: now})
		}
		made = len(notices) > 0
		return notices, nil
	})
	if made || (err != nil && failure.KindOf(err) == failure.Unavailable) {
		// After the commit (an unavailable store may hide one): a
		// Deliver that read the epoch before it reads the store again.
		s.clean.Changed()
	}
	if err != nil {
		return Intent{}, nil, err
	}
	if mine == nil {
		mine = []Overlap{}
	}
	return in, mine, nil
}

// openSessions reports for each session with a live intent of owner on
// project whether it is open.
func (s *Service) openSessions(ctx context.Context, owner, project string, now time.Time) (map[string]bool, error) {
	ins, err := s.store.List(ctx, owner, project, now, MaxProjectIntents+1)
	if err != nil {
		return nil, err
	}
	open := make(map[string]bool, len(ins))
	for _, in := range ins {
		open[in.SessionID] = s.isOpen(ctx, in.SessionID)
	}
	return open, nil
}

// overlapping returns the globs of a and of b that overlap some glob of
// the other, each bounded by MaxNoticeGlobs (none when they do not meet).
func overlapping(a, b []string) (fromA, fromB []string) {
	inB := map[string]bool{}
	for _, x := range a {
		hit := false
		for _, y := range b {
			if GlobsOverlap(x, y) {
				hit = true
				inB[y] = true
			}
		}
		if hit && len(fromA) < MaxNoticeGlobs {
			fromA = append(fromA, x)
		}
	}
	for _, y := range b {
		if inB[y] && len(fromB) < MaxNoticeGlobs {
			fromB = append(fromB, y)
		}
	}
	return fromA, fromB
}

// Listed is a live intent with the other sessions whose live intents
// overlap it.
type Listed struct {
	Intent
	Overlaps []string `json:"overlaps"`
}

// List returns owner's live intents on project (at most
// MaxProjectIntents, oldest first), each with the sessions it overlaps.
func (s *Service) List(ctx context.Context, owner, project string, now time.Time) ([]Listed, error) {
	ins, err := s.live(ctx, owner, project, now)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(ins))
	for i, a := range ins {
		out[i] = Listed{Intent: a, Overlaps: []string{}}
		for j, b := range ins {
			if i != j {
				if x, _ := overlapping(a.Globs, b.Globs); len(x) > 0 {
					out[i].Overlaps = append(out[i].Overlaps, b.SessionID)
				}
			}
		}
	}
	return out, nil
}

func (s *Service) live(ctx context.Context, owner, project string, now time.Time) ([]Intent, error) {
	ins, err := s.store.List(ctx, owner, project, stamp(now), MaxProjectIntents)
	if err != nil {
		return nil, err
	}
	out := ins[:0]
	for _, in := range ins {
		if s.isOpen(ctx, in.SessionID) {
			out = append(out, in)
		}
	}
	return out, nil
}

// Get returns session sessionID's intent as stored (live or not); ok is
// false when it has none.
func (s *Service) Get(ctx context.Context, sessionID string) (Intent, bool, error) {
	return s.store.Get(ctx, sessionID)
}

// Deliver returns the notices pending for session sessionID and deletes
// them, so each is delivered once; nil when there are none. A session
// Deliver found without notices costs nothing until a notice may exist
// (this Service's Declare made one, or another process signalled one:
// seen once its signal has arrived), then one read, and a write only
// when something is pending.
func (s *Service) Deliver(ctx context.Context, sessionID string) (*Notice, error) {
	clean, epoch := s.clean.Clean(sessionID)
	if clean {
		return nil, nil
	}
	ok, err := s.store.Pending(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.clean.Found(sessionID, epoch)
		return nil, nil
	}
	ns, err := s.store.Take(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	overlaps := make([]Overlap, 0, len(ns))
	for _, n := range ns {
		overlaps = append(overlaps, n.Overlap)
	}
	return notice(overlaps), nil
}

// WriteNotice names the live intents of owner's other sessions on
// project (every session but those in self) that declare one of changed
// (the first MaxWritePaths are compared), or nil when none does.
func (s *Service) WriteNotice(ctx context.Context, owner, project string, self []string, changed []string, now time.Time) (*Notice, error) {
	if len(changed) == 0 {
		return nil, nil
	}
	changed = changed[:min(len(changed), MaxWritePaths)]
	ins, err := s.live(ctx, owner, project, now)
	if err != nil {
		return nil, err
	}
	var overlaps []Overlap
	for _, in := range ins {
		if slices.Contains(self, in.SessionID) {
			continue
		}
		var globs, paths []string
		for _, p := range changed {
			for _, g := range in.Globs {
				if Match(g, p) {
					if len(paths) < MaxNoticeGlobs {
						paths = append(paths, p)
					}
					if !slices.Contains(globs, g) && len(globs) < MaxNoticeGlobs {
						globs = append(globs, g)
					}
					break
				}
			}
		}
		if len(paths) > 0 {
			overlaps = append(overlaps, Overlap{SessionID: in.SessionID, Kind: KindWrite, Globs: globs, Paths: paths})
		}
	}
	return notice(overlaps), nil
}

// Merge joins two notices into one within the bounds (nil when both are
// empty).
func Merge(a, b *Notice) *Notice {
	if a.Empty() {
		return b
	}
	if b.Empty() {
		return a
	}
	n := notice(append(append([]Overlap{}, a.Overlaps...), b.Overlaps...))
	n.Omitted += a.Omitted + b.Omitted
	return n
}

// Coverage is what a session's intent says about the paths it changed:
// Untouched are its globs no changed path matched, Undeclared the changed
// paths no glob matched (each bounded by MaxNoticeGlobs, with totals).
type Coverage struct {
	Globs           []string `json:"globs"`
	Untouched       []string `json:"untouched_globs"`
	UntouchedTotal  int      `json:"untouched_total"`
	Undeclared      []string `json:"undeclared_paths"`
	UndeclaredTotal int      `json:"undeclared_total"`
}

// Cover compares in's globs with the paths its session changed.
func Cover(in Intent, changed []string) Coverage {
	c := Coverage{Globs: in.Globs, Untouched: []string{}, Undeclared: []string{}}
	touched := map[string]bool{}
	for _, p := range changed {
		hit := false
		for _, g := range in.Globs {
			if Match(g, p) {
				touched[g], hit = true, true
			}
		}
		if !hit {
			c.UndeclaredTotal++
			if len(c.Undeclared) < MaxNoticeGlobs {
				c.Undeclared = append(c.Undeclared, p)
			}
		}
	}
	for _, g := range in.Globs {
		if !touched[g] {
			c.UntouchedTotal++
			if len(c.Untouched) < MaxNoticeGlobs {
				c.Untouched = append(c.Untouched, g)
			}
		}
	}
	return c
}
