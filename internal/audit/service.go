package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/redact"
)

// Service applies the audit rules (affinity, sanitizing, bounds) over a
// Store, and owns the group commit of Submit (see [Service.Start]).
type Service struct {
	store Store
	now   func() time.Time
	newID func() string

	failures atomic.Int64
	writer   writer
	affinity affinityCache
	names    atomic.Pointer[ClientNames]
}

// ClientNames returns the display names of the OAuth clients ids names
// (by id); an id it does not know is absent. It must not fail the caller:
// a client it cannot name keeps an empty Name.
type ClientNames func(ctx context.Context, ids []string) map[string]string

// NameClients sets the lookup Stats fills OAuthClientUsage.Name with (the
// built-in authorization server's client store); nil leaves names empty.
// It is safe to call at any time.
func (s *Service) NameClients(f ClientNames) {
	if f == nil {
		s.names.Store(nil)
		return
	}
	s.names.Store(&f)
}

// NewService returns a Service over store. now may be nil (time.Now).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now, newID: NewID}
}

// Store returns the underlying store.
func (s *Service) Store() Store { return s.store }

// NewID returns a random (version 4) UUID string.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// workflowSessionPrefix starts every Workflow Session id (the workflow
// domain's SessionIDPrefix; this package must not import it).
const workflowSessionPrefix = "wc_sess_"

// ValidateSessionID trims an explicit audit id and checks it; it is the one
// place that decides whether a client-supplied audit id is acceptable, for
// creating a session (Affinity) and for reading or closing one. An empty
// result means "no explicit id". Refused with failure.InvalidArguments,
// by a message that never repeats the id:
//   - more than MaxSessionIDChars characters, or a control or non-printable
//     character;
//   - a Workflow Session id (wc_sess_…, any case): audit sessions are a
//     separate namespace and a workflow id is never reused as one;
//   - an id shaped like a credential (anything the redact package would
//     redact: wc_pat_, ghp_, github_pat_, sk-, xoxb-, AKIA…, bearer
//     tokens, key=value secrets), so that a secret pasted as an id is
//     never stored or echoed back.
func ValidateSessionID(raw string) (string, error) {
	id := strings.TrimSpace(raw)
	if n := len([]rune(id)); n > MaxSessionIDChars {
		return "", failure.New(failure.InvalidArguments, "audit session id is %d characters; the limit is %d", n, MaxSessionIDChars)
	}
	for _, r := range id {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || !unicode.IsPrint(r) {
			return "", failure.New(failure.InvalidArguments, "audit session id contains a control or non-printable character")
		}
	}
	if len(id) >= len(workflowSessionPrefix) && strings.EqualFold(id[:len(workflowSessionPrefix)], workflowSessionPrefix) {
		return "", failure.New(failure.InvalidArguments, "audit session id is a Workflow Session id (%s…); audit sessions are separate: "+
			"pass a Workflow Session as session_id or recording_session_id of a tool call, and choose another audit id or none", workflowSessionPrefix)
	}
	if redact.String(id) != id {
		return "", failure.New(failure.InvalidArguments, "audit session id looks like a credential (a token or key); it was refused and not stored: "+
			"never send a secret as an audit id, and revoke it if it was real")
	}
	return id, nil
}

// Affinity selects the audit session of a request by principal (the
// caller's authority fingerprint, "" for an unauthenticated caller).
// explicit is the raw x-action-session-id / x-webcodex-session-id header
// or action_session_id query value ("" when absent). Sessions belong to
// the principal that created them, and a request only ever resolves to
// one of its principal's sessions:
//   - An explicit id is validated and its session used (created when
//     unknown). An id that names another principal's session is never
//     joined: the request gets a session of its own for that id (created
//     once, then reused for the same principal and id), whose id — not
//     the one asked for — is returned (decision 0049).
//   - Otherwise the principal's most recent open session idle for less
//     than IdleReuse is reused, or a new UUID session is created.
//     Concurrent calls of one principal never create more than one
//     idle-reuse session.
func (s *Service) Affinity(ctx context.Context, principal, explicit string) (id string, explicitGiven bool, err error) {
	id, err = ValidateSessionID(explicit)
	if err != nil {
		return "", true, err
	}
	explicitGiven = id != ""
	now := s.now()
	if cached := s.affinity.lookup(principal, id, now); cached != "" {
		return cached, explicitGiven, nil
	}
	r, err := s.store.Resolve(ctx, ResolveRequest{Principal: principal, Explicit: id, Now: now, NewID: s.newID})
	if err != nil {
		return "", explicitGiven, err
	}
	s.affinity.store(principal, id, r, now)
	return r.ID, explicitGiven, nil
}

// Record sanitizes ev and appends it to session id with attribution,
// updating the session counters in the same transaction; it returns when
// the event is durable. Missing EventID, StartedAt or EndedAt are filled
// in. A failure is counted in WriteFailures and returned; the caller must
// never let it change the audited call's outcome.
func (s *Service) Record(ctx context.Context, id string, ev Event, attr Attribution) error {
	ev, err := s.prepare(id, ev, attr)
	if err != nil {
		return err
	}
	if err := s.store.AppendEvents(ctx, []Event{ev}, MaxEventsPerSession, s.now()); err != nil {
		s.failures.Add(1)
		return err
	}
	return nil
}

// prepare validates, completes and sanitizes an event for session id.
func (s *Service) prepare(id string, ev Event, attr Attribution) (Event, error) {
	if id == "" {
		return Event{}, failure.New(failure.InvalidArguments, "audit session id is required")
	}
	now := s.now()
	s.affinity.touch(id, now)
	ev.SessionID = id
	ev.Attribution = attr
	if ev.EventID == "" {
		ev.EventID = s.newID()
	}
	if ev.EndedAt == 0 {
		ev.EndedAt = now.Unix()
	}
	if ev.StartedAt == 0 {
		ev.StartedAt = ev.EndedAt - ev.DurationMS/1000
	}
	if ev.DurationMS < 0 {
		ev.DurationMS = 0
	}
	return Sanitize(ev), nil
}

// WriteFailures is how many events failed to be written since start
// (synchronous and background writes).
func (s *Service) WriteFailures() int64 { return s.failures.Load() }

// CloseSession closes session id; closing a closed session is a no-op.
func (s *Service) CloseSession(ctx context.Context, id string) (Session, error) {
	id, err := ValidateSessionID(id)
	if err != nil {
		return Session{}, err
	}
	if id == "" {
		return Session{}, failure.New(failure.InvalidArguments, "session_id is required")
	}
	sess, err := s.store.CloseSession(ctx, id, s.now())
	s.affinity.forget()
	return sess, err
}

// ClampLimit applies the limit rule: 0 => def, > max => max, < 0 =>
// failure.InvalidArguments.
func ClampLimit(n, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, failure.New(failure.InvalidArguments, "limit must not be negative")
	case n == 0:
		return def, nil
	case n > max:
		return max, nil
	}
	return n, nil
}

// ListSessions lists sessions newest activity first; status is "", open
// or closed; limit defaults to DefaultSessionsLimit, max MaxSessionsLimit.
func (s *Service) ListSessions(ctx context.Context, status Status, limit int) ([]Session, error) {
	switch status {
	case "", StatusOpen, StatusClosed:
	default:
		return nil, failure.New(failure.InvalidArguments, "status must be open or closed")
	}
	limit, err := ClampLimit(limit, DefaultSessionsLimit, MaxSessionsLimit)
	if err != nil {
		return nil, err
	}
	return s.store.ListSessions(ctx, status, limit)
}

// SessionWithEvents returns one session and its newest events (oldest
// first) as public views; eventsLimit defaults to DefaultEventsLimit, max
// MaxEventsLimit. Unknown id: failure.NotFound.
func (s *Service) SessionWithEvents(ctx context.Context, id string, eventsLimit int) (Session, []EventView, error) {
	id, err := ValidateSessionID(id)
	if err != nil {
		return Session{}, nil, err
	}
	if id == "" {
		return Session{}, nil, failure.New(failure.InvalidArguments, "session_id is required")
	}
	eventsLimit, err = ClampLimit(eventsLimit, DefaultEventsLimit, MaxEventsLimit)
	if err != nil {
		return Session{}, nil, err
	}
	sess, evs, err := s.store.Session(ctx, id, eventsLimit)
	if err != nil {
		return Session{}, nil, err
	}
	views := make([]EventView, len(evs))
	for i, e := range evs {
		views[i] = e.View()
	}
	return sess, views, nil
}

// Stats aggregates one session (sessionID != "", up to
// MaxStatsEventsOneSession events) or the newest limit sessions (default
// DefaultStatsSessions, max MaxStatsSessions; up to
// MaxStatsEventsPerSession events each).
func (s *Service) Stats(ctx context.Context, sessionID string, limit int) (Stats, error) {
	sessionID, err := ValidateSessionID(sessionID)
	if err != nil {
		return Stats{}, err
	}
	limit, err = ClampLimit(limit, DefaultStatsSessions, MaxStatsSessions)
	if err != nil {
		return Stats{}, err
	}
	q := StatsQuery{SessionID: sessionID, Sessions: limit, EventsPerSession: MaxStatsEventsPerSession}
	if sessionID != "" {
		q.Sessions, q.EventsPerSession = 1, MaxStatsEventsOneSession
	}
	st, err := s.store.Stats(ctx, q)
	if err != nil {
		return Stats{}, err
	}
	s.nameClients(ctx, st.Attribution.ByOAuthClient)
	return st, nil
}

// nameClients fills the Name of each usage entry the ClientNames lookup
// knows.
func (s *Service) nameClients(ctx context.Context, usage []OAuthClientUsage) {
	f := s.names.Load()
	if f == nil || len(usage) == 0 {
		return
	}
	ids := make([]string, len(usage))
	for i, u := range usage {
		ids[i] = u.ClientID
	}
	names := (*f)(ctx, ids)
	for i := range usage {
		usage[i].Name = names[usage[i].ClientID]
	}
}

// Tools aggregates the newest limit model_ergonomics records per tool
// (limit defaults to DefaultToolReportEvents, max MaxToolReportEvents).
func (s *Service) Tools(ctx context.Context, limit int) (ToolReport, error) {
	limit, err := ClampLimit(limit, DefaultToolReportEvents, MaxToolReportEvents)
	if err != nil {
		return ToolReport{}, err
	}
	ms, available, err := s.store.Ergonomics(ctx, limit)
	if err != nil {
		return ToolReport{}, err
	}
	calls, callsAvailable, err := s.store.LoopCalls(ctx, limit)
	if err != nil {
		return ToolReport{}, err
	}
	loop := BuildLoopTiming(calls)
	loop.CallsAvailable = callsAvailable
	return ToolReport{
		Tools:           BuildToolReport(ms),
		LoopTiming:      loop,
		EventsScanned:   int64(len(ms)),
		EventsAvailable: available,
		Truncated:       int64(len(ms)) < available,
	}, nil
}

// WindowRelations returns the Window↔Workflow Session relations of
// principal's window (observational; they confer nothing).
func (s *Service) WindowRelations(ctx context.Context, principal, window string) ([]WindowRelation, error) {
	return s.store.WindowRelations(ctx, principal, window)
}
