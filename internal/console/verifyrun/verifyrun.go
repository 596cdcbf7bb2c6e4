// Package verifyrun runs the offline evidence verifier in the background,
// one run at a time, and publishes its progress and findings. The verifier
// itself is injected (the composition root passes evidencedb.Verify over
// the data directory), so a run checks exactly what `webcodex evidence
// verify` checks and reports the same evidence.Report.
//
// Watchers read a [State] and a channel that is closed at the next change
// ([Runner.Watch]); a slow watcher only misses intermediate progress, it
// never holds the verifier back, and no watcher is registered anywhere, so
// a watcher that goes away leaks nothing.
package verifyrun

import (
	"context"
	"sync"
	"time"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/failure"
)

// VerifyFunc verifies the journal (evidencedb.Verify over the data
// directory); opts.Progress is set by the runner.
type VerifyFunc func(ctx context.Context, opts evidence.VerifyOptions) (evidence.Report, error)

// Phase is where a run is.
type Phase string

// Phases. A run is running until the verifier returns: finished with a
// report (clean or not), or failed when the journal could not be read
// (including a run cut off by Close, ErrKind cancelled).
const (
	PhaseIdle     Phase = "idle" // no run yet
	PhaseRunning  Phase = "running"
	PhaseFinished Phase = "finished"
	PhaseFailed   Phase = "failed"
)

// State is a snapshot of the newest run. Done and Total are the rows
// verified and the rows to verify, as the verifier last reported them.
type State struct {
	Run        int64     `json:"run"`
	Phase      Phase     `json:"phase"`
	Done       uint64    `json:"done"`
	Total      uint64    `json:"total"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Report is the verifier's report (PhaseFinished only).
	Report *evidence.Report `json:"report,omitempty"`
	// ErrKind and Err say why the run failed (PhaseFailed only).
	ErrKind failure.Kind `json:"error_kind,omitempty"`
	Err     string       `json:"error,omitempty"`
}

// Runner owns at most one verification run at a time.
type Runner struct {
	verify VerifyFunc
	now    func() time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	state   State
	changed chan struct{} // closed (and replaced) at every change
	closed  bool
}

// New returns a runner over verify; now stamps the runs (time.Now when
// nil).
func New(verify VerifyFunc, now func() time.Time) *Runner {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{verify: verify, now: now, ctx: ctx, cancel: cancel, state: State{Phase: PhaseIdle}, changed: make(chan struct{})}
}

// Start begins a run and returns its first state. While a run is running
// it starts nothing and fails with failure.Conflict; after Close with
// failure.Unavailable.
func (r *Runner) Start() (State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return State{}, failure.New(failure.Unavailable, "the server is shutting down")
	}
	if r.state.Phase == PhaseRunning {
		return r.state, failure.New(failure.Conflict, "verification run %d is still running", r.state.Run)
	}
	r.set(State{Run: r.state.Run + 1, Phase: PhaseRunning, StartedAt: r.now()})
	run := r.state.Run
	r.wg.Add(1)
	go r.run(run)
	return r.state, nil
}

func (r *Runner) run(run int64) {
	defer r.wg.Done()
	rep, err := r.verify(r.ctx, evidence.VerifyOptions{Progress: func(done, total uint64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		st := r.state
		st.Done, st.Total = done, total
		r.set(st)
	}})
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state
	st.FinishedAt = r.now()
	if err != nil {
		st.Phase, st.ErrKind, st.Err = PhaseFailed, failure.KindOf(err), failure.MessageOf(err)
	} else {
		st.Phase, st.Report = PhaseFinished, &rep
		st.Done, st.Total = uint64(rep.Records), uint64(rep.Records)
	}
	r.set(st)
}

// set replaces the state and wakes every watcher; r.mu is held.
func (r *Runner) set(st State) {
	r.state = st
	close(r.changed)
	r.changed = make(chan struct{})
}

// Watch returns the current state and a channel closed at the next change.
func (r *Runner) Watch() (State, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, r.changed
}

// Close cancels a running run, waits for it to end (it ends failed,
// cancelled) and refuses later starts.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
