// Package shell manages persistent shells: one real, long-lived sh or bash
// process per Workflow Session, to which commands are sent one at a time.
// Unlike a one-shot execution, the shell's cwd, exports, unset state,
// umask, functions and ordinary variables persist from one command to the
// next.
//
// # Process
//
// Each shell is started like a runner execution: its own process group,
// runner's scrubbed environment (never the server's credentials), the
// confined initial cwd, and stdin a private pipe from which the shell reads
// commands. Three more pipes are inherited: fd 3 is the control channel
// (written by the shell, read only by the Manager), fds 4 and 5 are second
// descriptors on the stdout and stderr pipes, used only by the framing.
// The shell starts with
//
//	trap 'case ${__wc_in-} in 1) return 130;; esac' INT
//
// so that an interrupt ends the running command (see below) instead of the
// non-interactive shell.
//
// # Framing
//
// Completion is never detected by scanning output for a marker. For each
// command the Manager draws three fresh 128-bit random values: the control
// token and a stdout and a stderr sentinel. It writes one wrapper to the
// shell's stdin:
//
//	__wc_c='<command, single-quoted>'
//	__wc_run() { __wc_in=1; \command eval "$__wc_c"; }
//	__wc_run "$@" 3>&- 4>&- 5>&- </dev/null; __wc_s=$?; __wc_in=; \command unset __wc_c
//	\command printf '%s%s' '<half>' '<half>' >&4                 (stdout sentinel)
//	\command printf '%s%s' '<half>' '<half>' >&5                 (stderr sentinel)
//	\command printf '%s%s %d\n' '<half>' '<half>' "$__wc_s" >&3   (token and status)
//
// (one line, separated by ";"). The command is data: it reaches the shell
// as one quoted string and is eval'ed in the shell process itself, so cd,
// export, umask, variables and function definitions persist, a syntax
// error is an ordinary exit status 2 (neither the end of the wrapper nor of
// the shell), and a trailing comment, backslash or unbalanced quote cannot
// swallow the framing. The command's stdin is /dev/null, so nothing it runs
// can read the shell's command pipe; fds 3-5 are closed for the command and
// everything it starts, so the control channel is the shell's alone. The
// exit status is taken only from the fd 3 line carrying the token; the
// command cannot forge it, and whatever it prints on stdout or stderr
// (including text that looks like framing) is plain output.
//
// The sentinels are printed after the command finished and before the
// token, through the same pipes as stdout and stderr, so once the token has
// arrived each pipe holds the command's complete output followed by its
// sentinel: each stream is cut exactly there (see stream), which makes the
// output of consecutive commands exactly their own. Output that background
// processes write between commands belongs to no command and is dropped;
// written during a command it is part of that command's output. Sentinels
// and token are split into two printf arguments so that set -x and set -v
// never echo them whole. The `\command` prefix skips user functions and
// aliases named like the builtins.
//
// Running the command inside the function __wc_run has three visible
// effects, all documented for callers: `return` ends the command with its
// status, positional parameters are readable but `set --` and `shift` do
// not persist, and `local` is accepted.
//
// # Timeouts, loss and release
//
// On timeout (or cancellation) the Manager sends SIGINT to the shell's
// process group, which ends the foreground process, and the trap returns
// from the command's function; the interrupt is repeated a few times
// within ResyncWait (each returns from one function level). If the token
// arrives, the shell survived: the result is returned with TimedOut set
// and the shell stays usable with its state. Otherwise synchronization
// cannot be proved (the command ignores SIGINT, loops in builtins, or
// closed the control channel): the whole group is killed, the shell is
// marked lost and the call fails with shell_reset_required; nothing is ever
// written to that process again. A command that ends the shell (exit,
// exec, a failure under set -e) returns its result with ShellExited set and
// the shell's exit status, and the shell is lost. Closing a shell, closing
// its session or project, idle expiry and Manager.Close release the process
// group (TERM, then KILL after runner.KillGrace), kill every other process
// the shell started (runner.Unit.Kill: setsid, double-forked and daemonized
// ones too) and close every pipe.
//
// Memory is bounded: each stream keeps a tail of at most TailBytes per
// command, and at most MaxRememberedEnded ended shells are remembered so
// that their ids keep answering as terminal.
//
// # Remote shells
//
// A shell opened with OpenSpec.Remote runs on an SSH resource: its process
// is the ssh client, fd 3 does not cross ssh, and each command's status is
// framed on the shell's stdout after a fresh token instead; its interrupt
// and release are kill commands sent over the same connection. See
// remote.go and docs/decisions/0066-remote-shell-framing.md.
package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/runner"
)

// Bounds and defaults.
const (
	// MaxCommandBytes bounds one command's text, in UTF-8 bytes
	// (DESIGN.md §5, shared with run_shell and run_job).
	MaxCommandBytes = 16000
	// DefaultMaxShells is the most live shells a Manager holds.
	DefaultMaxShells = 8
	// DefaultIdleTimeout releases a shell that ran nothing for this long.
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultTimeout is a command's timeout when the caller sets none.
	DefaultTimeout = 60 * time.Second
	// MaxTimeout is the longest timeout a command may ask for.
	MaxTimeout = time.Hour
	// DefaultResyncWait is how long after the interrupt a timed-out
	// command has to let the shell report its token.
	DefaultResyncWait = 2 * time.Second
	// MaxRememberedEnded bounds the ended shells whose ids still answer
	// as closed or lost (beyond it an ended id is simply unknown; random
	// ids are never reused either way).
	MaxRememberedEnded = 1024
	// IDPrefix starts every shell id.
	IDPrefix = "wc_shell_"

	// openTimeout bounds the start-up handshake.
	openTimeout = 10 * time.Second
	// syncWait bounds the wait for the output sentinels once the token
	// arrived; they are already in the pipes, so this only absorbs
	// scheduling delay.
	syncWait = 2 * time.Second
	// outputDrain bounds the wait for output after a shell ended.
	outputDrain = 500 * time.Millisecond
	// writeTimeout bounds writing one wrapper to an idle shell.
	writeTimeout = 10 * time.Second
)

// Dialect names the shell program.
type Dialect string

// Dialects.
const (
	Sh   Dialect = "sh"
	Bash Dialect = "bash"
)

// State is a shell's state. Closed and Lost are terminal.
type State string

// States.
const (
	// Ready: idle, accepting a command.
	Ready State = "ready"
	// Busy: running a command (or starting).
	Busy State = "busy"
	// Closed: released on purpose (close, session close, idle expiry,
	// shutdown).
	Closed State = "closed"
	// Lost: the process ended or could not be kept in sync; it has been
	// released and nothing is written to it again.
	Lost State = "lost"
)

// Terminal reports whether s is closed or lost.
func (s State) Terminal() bool { return s == Closed || s == Lost }

// Reasons a shell ended.
const (
	EndClosed        = "closed"
	EndSessionClosed = "session_closed"
	EndProjectClosed = "project_closed"
	EndIdleExpired   = "idle_expired"
	EndShutdown      = "shutdown"
	EndExited        = "exited"
	EndResyncFailed  = "resync_failed"
	EndDesync        = "control_channel_damaged"
	EndProcessLimit  = "process_limit_exceeded"
	EndOpenFailed    = "open_failed"
	// EndConnectionLost: a remote shell's ssh client ended with
	// ExitConnectionLost (its connection or master ended; see Remote).
	EndConnectionLost = "connection_lost"
)

// Options configure a Manager. Zero values select the defaults.
type Options struct {
	MaxShells   int
	IdleTimeout time.Duration
	// JanitorInterval is how often idle shells are looked for (default
	// IdleTimeout/2, at most a minute).
	JanitorInterval time.Duration
	// TailBytes is the output kept per stream per command (default
	// runner.DefaultTailBytes, at most runner.MaxTailBytes).
	TailBytes  int
	ResyncWait time.Duration
	// Getenv reads the server environment shells may inherit (nil:
	// os.Getenv); only runner's allow-list of names is read.
	Getenv func(string) string
	// Sandbox confines every shell (and so everything it runs); nil
	// confines none (each Info says off).
	Sandbox *runner.Policy
	Now     func() time.Time
	// Contain contains each shell's processes (nil: runner.Setup's); the
	// shell id is its unit's marker.
	Contain *runner.Containment
	// CapTimeout, when positive, caps every command's timeout (a runner's
	// max_timeout_secs): a longer one is shortened to it, never refused.
	CapTimeout time.Duration
	// Holder names the process that holds the shells, in the message of
	// an unknown shell id: "server" (the default) or "runner". A
	// restarted holder has lost its shells.
	Holder string
}

// OpenSpec describes a shell to open. The caller has authorized the
// session and confined Cwd to the project.
type OpenSpec struct {
	SessionID string
	Project   string
	// ProjectRoot is the canonical absolute project root.
	ProjectRoot string
	// Cwd is the absolute initial directory, inside ProjectRoot.
	Cwd   string
	Shell Dialect
	// Sandbox is what the shell asks of its confinement (the project's
	// mode and root).
	Sandbox runner.Sandbox
	// Remote, when set, runs the shell on an SSH resource (remote.go):
	// the local process is the ssh client, started in Cwd (then any
	// directory of the project, usually its root).
	Remote *Remote
}

// Info describes a shell.
type Info struct {
	ShellID   string
	SessionID string
	Project   string
	Shell     Dialect
	// Cwd is the initial directory, project-relative; for a shell on an
	// SSH resource, the remote directory the caller chose ("" when left
	// to the resource's default, then the login directory).
	Cwd string
	// Resource is the name of the SSH resource the shell runs on, ""
	// for a shell of this machine.
	Resource   string
	State      State
	EndReason  string
	OpenedAt   time.Time
	LastUsedAt time.Time
	EndedAt    time.Time
	// Sandbox is the sandbox mode in force for the shell.
	Sandbox     runner.Mode
	CommandsRun int64
}

// Result is a finished command.
type Result struct {
	// ExitCode is the command's status; when the command ended the
	// shell, the shell's exit status (-1 when a signal ended it).
	ExitCode int
	Stdout   runner.Output
	Stderr   runner.Output
	Duration time.Duration
	// Sandbox is the sandbox mode in force for the shell that ran it.
	Sandbox runner.Mode
	// TimedOut is set when the timeout interrupted the command;
	// Cancelled when the caller's context did.
	TimedOut  bool
	Cancelled bool
	// ShellExited is set when the command ended the shell.
	ShellExited bool
	// Cwd is the shell's directory after the command, project-relative;
	// empty with CwdOutsideProject set when it is outside the project, or
	// empty when unknown (always, for a shell on an SSH resource).
	Cwd               string
	CwdOutsideProject bool
	// State is the shell's state after the command.
	State State
}

// Manager owns the persistent shells of one server.
type Manager struct {
	opt      Options
	newToken func() string

	mu        sync.Mutex
	shells    map[string]*shell // live and remembered ended shells
	bySession map[string]*shell // live shells
	live      int
	ended     []string // ended ids, oldest first
	closed    bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewManager returns a Manager and starts its idle janitor; Close stops
// it.
func NewManager(o Options) *Manager {
	if o.MaxShells <= 0 {
		o.MaxShells = DefaultMaxShells
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.JanitorInterval <= 0 {
		o.JanitorInterval = min(o.IdleTimeout/2, time.Minute)
		o.JanitorInterval = max(o.JanitorInterval, 5*time.Millisecond)
	}
	if o.TailBytes <= 0 {
		o.TailBytes = runner.DefaultTailBytes
	}
	o.TailBytes = min(o.TailBytes, runner.MaxTailBytes)
	if o.ResyncWait <= 0 {
		o.ResyncWait = DefaultResyncWait
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Holder == "" {
		o.Holder = "server"
	}
	m := &Manager{
		opt: o, newToken: randomHex,
		shells: map[string]*shell{}, bySession: map[string]*shell{},
		stop: make(chan struct{}),
	}
	m.wg.Add(1)
	go m.janitor()
	return m
}

func randomHex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("shell: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

var shellIDRE = regexp.MustCompile(`^wc_shell_[0-9a-f]{32}$`)

// ValidID reports whether id has the form of a shell id.
func ValidID(id string) bool { return shellIDRE.MatchString(id) }

// ValidateID fails with failure.InvalidArguments when id does not have the
// form of a shell id.
func ValidateID(id string) error {
	if !ValidID(id) {
		return failure.New(failure.InvalidArguments, "shell_id must be wc_shell_ followed by 32 lowercase hex digits")
	}
	return nil
}

// ValidateCommand checks a command's bounds: 1 to MaxCommandBytes bytes of
// UTF-8 without NUL.
func ValidateCommand(command string) error {
	if strings.TrimSpace(command) == "" || len(command) > MaxCommandBytes || !utf8.ValidString(command) || strings.ContainsRune(command, 0) {
		return failure.New(failure.InvalidArguments, "command must be 1-%d bytes of UTF-8 without NUL", MaxCommandBytes)
	}
	return nil
}

// Open starts a shell for a session. A session has at most one live shell
// (failure.Conflict, with the live shell's id as detail shell_id); the
// Manager holds at most MaxShells (failure.Unavailable). A shell that
// cannot be started fails with failure.NotStarted.
func (m *Manager) Open(ctx context.Context, sp OpenSpec) (Info, error) {
	if sp.Shell == "" {
		sp.Shell = Sh
	}
	if sp.Shell != Sh && sp.Shell != Bash {
		return Info{}, failure.New(failure.InvalidArguments, "shell must be sh or bash")
	}
	if sp.SessionID == "" || !filepath.IsAbs(sp.ProjectRoot) || !filepath.IsAbs(sp.Cwd) {
		return Info{}, failure.New(failure.InvalidArguments, "a shell needs a session, an absolute project root and cwd")
	}
	rel, err := filepath.Rel(sp.ProjectRoot, sp.Cwd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Info{}, failure.New(failure.PermissionDenied, "cwd is outside the project")
	}
	if st, err := os.Stat(sp.Cwd); err != nil || !st.IsDir() {
		return Info{}, failure.New(failure.NotStarted, "cwd %q is not an existing directory", filepath.ToSlash(rel))
	}
	if r := sp.Remote; r != nil && (r.Resource == "" || r.Argv == nil || r.Command == nil) {
		return Info{}, failure.New(failure.InvalidArguments, "a remote shell needs its resource's name and argv builders")
	}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Info{}, failure.New(failure.Unavailable, "the server is shutting down")
	}
	if cur := m.bySession[sp.SessionID]; cur != nil {
		m.mu.Unlock()
		return Info{}, failure.New(failure.Conflict, "session %s already has an open shell %s; close it first", sp.SessionID, cur.id).
			WithDetail("shell_id", cur.id)
	}
	if m.live >= m.opt.MaxShells {
		m.mu.Unlock()
		return Info{}, failure.New(failure.Unavailable, "at most %d persistent shells may be open; close one first", m.opt.MaxShells)
	}
	now := m.opt.Now()
	s := &shell{
		m: m, id: IDPrefix + randomHex(), session: sp.SessionID, project: sp.Project,
		root: sp.ProjectRoot, dialect: sp.Shell, cwdRel: filepath.ToSlash(rel), sandbox: sp.Sandbox,
		openedAt: now, lastUsed: now, state: Busy, remote: sp.Remote,
	}
	if sp.Remote != nil {
		s.cwdRel = sp.Remote.Cwd
	}
	if err := s.start(sp.Cwd); err != nil {
		m.mu.Unlock()
		return Info{}, err
	}
	m.shells[s.id] = s
	m.bySession[s.session] = s
	m.live++
	m.mu.Unlock()

	// Handshake: the interrupt trap, then one framed no-op proves that
	// the control channel works (a remote shell's tells its pid).
	hctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := s.handshake(hctx); err != nil {
		m.end(s, Lost, EndOpenFailed, false)
		if failure.Is(err, failure.ShellClosed) {
			return Info{}, failure.New(failure.Unavailable, "the shell was closed while it started")
		}
		if sp.Remote != nil && !failure.Is(err, failure.ShellResetRequired) {
			return Info{}, err // classified by handshake, naming only the resource
		}
		return Info{}, failure.Wrap(failure.NotStarted, err, "the %s shell did not start", sp.Shell)
	}
	s.mu.Lock()
	if s.state == Busy {
		s.state = Ready
	}
	s.mu.Unlock()
	return s.info(), nil
}

// lookup finds a shell and checks that it belongs to sessionID.
func (m *Manager) lookup(shellID, sessionID string) (*shell, error) {
	if err := ValidateID(shellID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	s := m.shells[shellID]
	m.mu.Unlock()
	if s == nil {
		return nil, failure.New(failure.NotFound, "no shell %s on this %s: it was lost with a previous run of the %s that held it "+
			"(a restart loses its shells), or it ended long ago; open a new one", shellID, m.opt.Holder, m.opt.Holder)
	}
	if s.session != sessionID {
		return nil, failure.New(failure.PermissionDenied, "shell %s does not belong to session %s", shellID, sessionID)
	}
	return s, nil
}

// Exec runs command in the shell and waits for it. Commands are serialized:
// a shell already running one fails at once with failure.ShellBusy. A
// closed shell fails with failure.ShellClosed and a lost one with
// failure.ShellResetRequired; neither runs anything. timeout 0 selects
// DefaultTimeout.
//
// A command that completes (even timed out and interrupted) returns a
// Result and no error. When synchronization is lost the Result holds the
// partial output and the error is failure.ShellResetRequired.
func (m *Manager) Exec(ctx context.Context, shellID, sessionID, command string, timeout time.Duration) (Result, error) {
	if err := ValidateCommand(command); err != nil {
		return Result{}, err
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < 0 || timeout > MaxTimeout {
		return Result{}, failure.New(failure.InvalidArguments, "timeout must be at most %s", MaxTimeout)
	}
	if m.opt.CapTimeout > 0 {
		timeout = min(timeout, m.opt.CapTimeout)
	}
	s, err := m.lookup(shellID, sessionID)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	switch s.state {
	case Closed:
		s.mu.Unlock()
		return Result{}, failure.New(failure.ShellClosed, "shell %s is closed (%s); open a new one", s.id, s.endReason)
	case Lost:
		s.mu.Unlock()
		return Result{}, failure.New(failure.ShellResetRequired, "shell %s was lost (%s); open a new one", s.id, s.endReason)
	case Busy:
		s.mu.Unlock()
		return Result{}, failure.New(failure.ShellBusy, "shell %s is running another command", s.id)
	}
	s.state = Busy
	s.lastUsed = m.opt.Now()
	s.mu.Unlock()

	res, err := s.run(ctx, command, timeout, "")

	s.mu.Lock()
	if s.state == Busy {
		s.state = Ready
	}
	s.commands++
	s.lastUsed = m.opt.Now()
	res.State = s.state
	s.mu.Unlock()
	res.Sandbox = s.mode
	return res, err
}

// Status describes a shell of sessionID, live or ended.
func (m *Manager) Status(shellID, sessionID string) (Info, error) {
	s, err := m.lookup(shellID, sessionID)
	if err != nil {
		return Info{}, err
	}
	return s.info(), nil
}

// CloseShell closes a shell of sessionID, killing a running command. It is
// idempotent: an ended shell reports its state with changed false.
func (m *Manager) CloseShell(shellID, sessionID string) (info Info, changed bool, err error) {
	s, err := m.lookup(shellID, sessionID)
	if err != nil {
		return Info{}, false, err
	}
	changed = m.end(s, Closed, EndClosed, true)
	return s.info(), changed, nil
}

// CloseSession releases the live shell of a session, if any (session
// close). It reports whether a shell was closed.
func (m *Manager) CloseSession(sessionID string) bool {
	m.mu.Lock()
	s := m.bySession[sessionID]
	ok := s != nil && m.endLocked(s, Closed, EndSessionClosed, true)
	m.mu.Unlock()
	return ok
}

// CloseProject releases every live shell of a project (project disabled
// or unregistered) and returns how many it closed.
func (m *Manager) CloseProject(project string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.bySession {
		if s.project == project && m.endLocked(s, Closed, EndProjectClosed, true) {
			n++
		}
	}
	return n
}

// Live returns the number of live shells.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Close releases every shell, stops the janitor and waits until every
// process group has been killed and every pipe closed. It is idempotent.
// Later Opens fail with failure.Unavailable.
func (m *Manager) Close() error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.stop)
		for _, s := range m.bySession {
			m.endLocked(s, Closed, EndShutdown, true)
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// end moves s to a terminal state and starts its release; it reports
// whether s was live.
func (m *Manager) end(s *shell, st State, reason string, graceful bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endLocked(s, st, reason, graceful)
}

// endLocked is end with m.mu held.
func (m *Manager) endLocked(s *shell, st State, reason string, graceful bool) bool {
	return m.endLockedIf(s, st, reason, graceful, nil)
}

// endLockedIf is endLocked when cond, evaluated with s.mu held, is nil or
// true.
func (m *Manager) endLockedIf(s *shell, st State, reason string, graceful bool, cond func() bool) bool {
	s.mu.Lock()
	if s.state.Terminal() || (cond != nil && !cond()) {
		s.mu.Unlock()
		return false
	}
	s.state, s.endReason, s.endedAt = st, reason, m.opt.Now()
	s.mu.Unlock()
	if m.bySession[s.session] == s {
		delete(m.bySession, s.session)
	}
	m.live--
	m.ended = append(m.ended, s.id)
	if len(m.ended) > MaxRememberedEnded {
		delete(m.shells, m.ended[0])
		m.ended = append(m.ended[:0:0], m.ended[1:]...)
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.release(graceful)
	}()
	return true
}

func (m *Manager) janitor() {
	defer m.wg.Done()
	t := time.NewTicker(m.opt.JanitorInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.expireIdle()
		}
	}
}

func (m *Manager) expireIdle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	cutoff := m.opt.Now().Add(-m.opt.IdleTimeout)
	for _, s := range m.bySession {
		m.endLockedIf(s, Closed, EndIdleExpired, true, func() bool {
			return s.state == Ready && s.lastUsed.Before(cutoff)
		})
	}
}
