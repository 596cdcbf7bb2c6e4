package workflow

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/ident"
	"github.com/webcodex/webcodex/internal/redact"
)

// Service is the Workflow Session API used by the kernel and the tools.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service over store. now may be nil (time.Now).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Store returns the underlying store.
func (s *Service) Store() Store { return s.store }

// StartParams describe a new session.
type StartParams struct {
	Project     string
	Fingerprint string
	Mode        Mode
	Instruction string
	Context     ExecutionContext
}

// ValidateInstruction checks a work_on_project instruction's length.
func ValidateInstruction(text string) error {
	n := utf8.RuneCountInString(strings.TrimSpace(text))
	if n < InstructionMinChars || utf8.RuneCountInString(text) > InstructionMaxChars {
		return failure.New(failure.InvalidCodingInstruction, "instruction must be %d-%d characters", InstructionMinChars, InstructionMaxChars)
	}
	return nil
}

// Start creates a session bound to a project and records its first
// instruction.
func (s *Service) Start(ctx context.Context, p StartParams) (Session, error) {
	if err := ValidateInstruction(p.Instruction); err != nil {
		return Session{}, err
	}
	if p.Mode == "" {
		p.Mode = ModeNormal
	}
	if !p.Mode.Valid() {
		return Session{}, failure.New(failure.InvalidArguments, "mode must be normal or read_only")
	}
	if p.Project == "" || p.Fingerprint == "" {
		return Session{}, failure.New(failure.InvalidArguments, "a session needs a project and an authority")
	}
	now := s.now().UTC()
	sess := Session{
		ID:               NewSessionID(),
		Project:          p.Project,
		Title:            titleOf(p.Instruction),
		Mode:             p.Mode,
		Lifecycle:        Active,
		OwnerFingerprint: p.Fingerprint,
		ExecutionContext: p.Context,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	events := []Event{
		{Kind: EventSessionCreated, At: now, Facts: map[string]string{"mode": string(p.Mode)}},
		{Kind: EventTaskInstruction, At: now, Text: p.Instruction},
	}
	sess, _, err := s.store.Create(ctx, sess, events)
	return sess, err
}

func titleOf(instruction string) string {
	line := strings.TrimSpace(instruction)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	return redact.Bounded(line, TitleMaxChars)
}

// Continue appends a new instruction to an exact, already authorized,
// active session, optionally changing its mode.
func (s *Service) Continue(ctx context.Context, id, instruction string, mode Mode) (Session, error) {
	if err := ValidateInstruction(instruction); err != nil {
		return Session{}, err
	}
	if mode != "" && !mode.Valid() {
		return Session{}, failure.New(failure.InvalidArguments, "mode must be normal or read_only")
	}
	sess, _, err := s.store.Update(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() {
			return nil, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
		}
		ev := Event{Kind: EventTaskInstruction, Text: instruction}
		if mode != "" && mode != sess.Mode {
			ev.Facts = map[string]string{"mode_from": string(sess.Mode), "mode": string(mode)}
			sess.Mode = mode
		}
		return []Event{ev}, nil
	})
	return sess, err
}

// Append records events in an active session.
func (s *Service) Append(ctx context.Context, id string, events ...Event) (Session, []Event, error) {
	return s.store.Update(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() {
			return nil, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
		}
		return events, nil
	})
}

// StartCall records the opening events of a tool call (its
// tool_call_started) in an active session, durably, as Append does.
// claimed is CallWrite.Claimed: the header of a RememberedClaim the call
// was admitted on ("" when its claim read the store).
func (s *Service) StartCall(ctx context.Context, id, claimed string, events ...Event) error {
	return s.store.AppendCall(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() {
			return nil, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
		}
		return events, nil
	}, CallWrite{Claimed: claimed})
}

// AppendFinished records the closing events of a tool call admitted at
// admittedAt. It is allowed while the session is active, and also when the
// session was closed at or after admittedAt (by that very call), so that a
// call which closes its own session still records how it finished.
func (s *Service) AppendFinished(ctx context.Context, id string, admittedAt time.Time, events ...Event) error {
	return s.FinishCall(ctx, id, admittedAt, CallWrite{}, events...)
}

// FinishCall is AppendFinished written as w says (an evidence outbox row
// in the same transaction; queued behind the caller).
func (s *Service) FinishCall(ctx context.Context, id string, admittedAt time.Time, w CallWrite, events ...Event) error {
	return s.store.AppendCall(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() && (sess.ClosedAt == nil || sess.ClosedAt.Before(admittedAt)) {
			return nil, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
		}
		return events, nil
	}, w)
}

// RecordDenial records a refused call in a session regardless of its mode,
// so that a guard denial is itself evidence. Closed sessions record nothing.
func (s *Service) RecordDenial(ctx context.Context, id string, e Event) error {
	_, _, err := s.Append(ctx, id, e)
	return err
}

// UpdateContext replaces a session's execution defaults after validating
// them (an empty context clears them). Filesystem existence of default_cwd
// is checked where it is used, not here.
func (s *Service) UpdateContext(ctx context.Context, id string, ec ExecutionContext) (Session, error) {
	if err := ec.Validate(); err != nil {
		return Session{}, err
	}
	sess, _, err := s.store.Update(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() {
			return nil, failure.New(failure.SessionClosed, "%s", reasonMessage(failure.SessionClosed, id))
		}
		prev := sess.ExecutionContext
		sess.ExecutionContext = ec
		return []Event{{Kind: EventExecutionContextChanged, Facts: map[string]string{
			"default_cwd_from": prev.DefaultCwd, "default_cwd": ec.DefaultCwd,
			"default_shell_from": string(prev.DefaultShell), "default_shell": string(ec.DefaultShell),
			"resource_from": prev.Resource, "resource": ec.Resource,
		}}}, nil
	})
	return sess, err
}

// Close moves an active session to closed. Closing a closed session changes
// nothing and reports changed=false.
func (s *Service) Close(ctx context.Context, id string) (sess Session, changed bool, err error) {
	sess, _, err = s.store.Update(ctx, id, func(sess *Session) ([]Event, error) {
		if !sess.Mutable() {
			return nil, errAlreadyClosed
		}
		now := s.now().UTC()
		sess.Lifecycle = Closed
		sess.ClosedAt = &now
		return []Event{{Kind: EventSessionClosed, At: now}}, nil
	})
	if errors.Is(err, errAlreadyClosed) {
		sess, err = s.store.Get(ctx, id)
		return sess, false, err
	}
	return sess, err == nil, err
}

var errAlreadyClosed = errors.New("already closed")

// Get returns a session header.
func (s *Service) Get(ctx context.Context, id string) (Session, error) { return s.store.Get(ctx, id) }

// List returns the sessions matching f, newest first, with the total count.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Session, int, error) {
	if f.Limit <= 0 || f.Limit > ListMax {
		f.Limit = min(max(f.Limit, 0), ListMax)
		if f.Limit == 0 {
			f.Limit = 20
		}
	}
	return s.store.List(ctx, f)
}

// Summary returns a session and its newest limit events (SummaryDefault when
// limit is 0; at most SummaryMax).
func (s *Service) Summary(ctx context.Context, id string, limit int) (Session, []Event, error) {
	limit = SummaryLimit(limit)
	sess, err := s.store.Get(ctx, id)
	if err != nil {
		return Session{}, nil, err
	}
	evs, err := s.store.Events(ctx, id, limit)
	return sess, evs, err
}

// SummaryLimit clamps a requested summary size to [1, SummaryMax], with 0
// meaning SummaryDefault.
func SummaryLimit(limit int) int {
	switch {
	case limit <= 0:
		return SummaryDefault
	case limit > SummaryMax:
		return SummaryMax
	}
	return limit
}

// Validate checks an execution context: default_shell sh|bash; resource a
// name (1-64 letters, digits, '.', '_', '-'); default_cwd without control
// characters and at most MaxCwdBytes, and, without a resource,
// project-relative with no traversal, absolute or URI form (with one it is
// a path on the remote host, checked there).
func (ec ExecutionContext) Validate() error {
	if ec.DefaultShell != "" && ec.DefaultShell != ShellSh && ec.DefaultShell != ShellBash {
		return failure.New(failure.InvalidExecutionContext, "default_shell must be sh or bash")
	}
	if ec.Resource != "" && !ident.Valid(ec.Resource) {
		return failure.New(failure.InvalidExecutionContext, "resource must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	cwd := ec.DefaultCwd
	if cwd == "" {
		return nil
	}
	if len(cwd) > MaxCwdBytes {
		return failure.New(failure.InvalidExecutionContext, "default_cwd is longer than %d bytes", MaxCwdBytes)
	}
	for _, r := range cwd {
		if r < 0x20 || r == 0x7f {
			return failure.New(failure.InvalidExecutionContext, "default_cwd contains a control character")
		}
	}
	if ec.Resource != "" {
		return nil
	}
	if strings.HasPrefix(cwd, "/") || strings.HasPrefix(cwd, "~") || strings.Contains(cwd, "\\") || strings.Contains(cwd, "://") || (len(cwd) >= 2 && cwd[1] == ':') {
		return failure.New(failure.InvalidExecutionContext, "default_cwd must be relative to the project root")
	}
	for _, part := range strings.Split(cwd, "/") {
		if part == ".." {
			return failure.New(failure.InvalidExecutionContext, "default_cwd must not contain '..'")
		}
	}
	return nil
}
