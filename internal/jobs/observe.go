// Observation: one bounded wait over 1-MaxObserveJobs jobs, woken by their
// supervisors, returning committed records and new output by cursor.

package jobs

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// WakeOn says what ends an observe wait early.
type WakeOn string

// Wake conditions. Whatever the condition, a wait also ends as soon as
// every observed job is terminal (nothing more can change).
const (
	// WakeChange: any state change, or output beyond the caller's cursor
	// (or beyond what existed when the wait began, without a cursor).
	WakeChange WakeOn = "change"
	// WakeTerminal: any observed job is terminal.
	WakeTerminal WakeOn = "terminal"
	// WakeAllTerminal: every observed job is terminal.
	WakeAllTerminal WakeOn = "all_terminal"
)

// Cursors are a caller's read positions in a job's streams; nil means
// "the tail".
type Cursors struct {
	Stdout *int64 `json:"stdout,omitempty"`
	Stderr *int64 `json:"stderr,omitempty"`
}

// An ObserveRequest names 1-MaxObserveJobs jobs and one bounded wait.
type ObserveRequest struct {
	IDs     []string
	Cursors map[string]Cursors
	// Wait bounds the wait (0: no wait; at most MaxObserveWait).
	Wait   time.Duration
	WakeOn WakeOn
	// MaxBytes bounds each stream's chunk (0: DefaultReadBytes).
	MaxBytes int
	// BeforeWait, when set, is called once, after every check and only
	// when the call is about to wait (the condition does not hold yet);
	// an error ends the call with that error, without waiting. The tools
	// pass admission.BeginWait here.
	BeforeWait func() error
}

// An Observation is one job's committed record and new output.
type Observation struct {
	Job    Job
	Stdout Chunk
	Stderr Chunk
}

// Why an observe returned.
const (
	WokeCondition = "condition"
	WokeTimeout   = "timeout"
	WokeShutdown  = "shutdown"
)

// Observe returns the jobs' records and output since the cursors, after
// waiting up to req.Wait for req.WakeOn. The wait holds no lock; it wakes
// on the supervisors' signals and re-reads the store for jobs no
// supervisor in this process owns. What it returns is read from the store
// and the output files.
func (m *Manager) Observe(ctx context.Context, acc Access, req ObserveRequest) ([]Observation, string, error) {
	if err := checkObserve(&req); err != nil {
		return nil, "", err
	}
	wake := make(chan struct{}, 1)
	w, err := m.watchJobs(ctx, acc, req, wake)
	if err != nil {
		return nil, "", err
	}
	defer w.release()
	if req.Wait > 0 {
		m.waiting.Add(1)
		defer m.waiting.Add(-1)
	}
	woke, err := w.wait(ctx, req, wake)
	if err != nil {
		return nil, "", err
	}
	out, err := m.observations(ctx, w, req)
	if err != nil {
		return nil, "", err
	}
	return out, woke, nil
}

// checkObserve checks req's bounds, ids and cursors, and sets the default
// wake condition and chunk size.
func checkObserve(req *ObserveRequest) error {
	n := len(req.IDs)
	if n < 1 || n > MaxObserveJobs {
		return failure.New(failure.InvalidArguments, "name 1-%d job ids", MaxObserveJobs)
	}
	if req.Wait < 0 || req.Wait > MaxObserveWait {
		return failure.New(failure.InvalidArguments, "wait must be 0-%d seconds", int(MaxObserveWait/time.Second))
	}
	if req.WakeOn == "" {
		req.WakeOn = WakeChange
	}
	if req.WakeOn != WakeChange && req.WakeOn != WakeTerminal && req.WakeOn != WakeAllTerminal {
		return failure.New(failure.InvalidArguments, "wake_on must be change, terminal or all_terminal")
	}
	if err := checkRead(nil, req.MaxBytes); err != nil {
		return err
	}
	if req.MaxBytes == 0 {
		req.MaxBytes = DefaultReadBytes
	}
	seen := map[string]bool{}
	for _, id := range req.IDs {
		if seen[id] {
			return failure.New(failure.InvalidArguments, "job %s is named twice", id)
		}
		seen[id] = true
	}
	for id, c := range req.Cursors {
		if !seen[id] {
			return failure.New(failure.InvalidArguments, "cursors name job %s, which is not observed", id)
		}
		if err := checkRead(c.Stdout, 0); err != nil {
			return err
		}
		if err := checkRead(c.Stderr, 0); err != nil {
			return err
		}
	}
	return nil
}

// watchedJob is one job an observe waits on: its record as last read, its
// supervisor's entry (nil when no supervisor in this process owns it), the
// state the wait began from and, per stream, the size beyond which output
// is new.
type watchedJob struct {
	job   Job
	e     *entry
	state State
	base  [2]int64
}

// jobWatch is the set of jobs one observe waits on, each supervised one
// signalling the wake channel it was watched with until release.
type jobWatch struct {
	m       *Manager
	ws      []watchedJob
	wakeOn  WakeOn
	unwatch []func()
}

// watchJobs reads the jobs req names (as acc may see them), has their
// supervisors signal wake, and takes the state and output positions the
// wait starts from (the caller's cursors, else the current sizes). The
// caller must release the watch.
func (m *Manager) watchJobs(ctx context.Context, acc Access, req ObserveRequest, wake chan struct{}) (*jobWatch, error) {
	w := &jobWatch{m: m, ws: make([]watchedJob, len(req.IDs)), wakeOn: req.WakeOn}
	ws := w.ws
	if m.changes != nil {
		// Subscribed before the first read, so that no change committed
		// after it is missed.
		for _, id := range req.IDs {
			w.unwatch = append(w.unwatch, m.follow(id, wake))
		}
	}
	for i, id := range req.IDs {
		j, err := m.Get(ctx, acc, id)
		if err != nil {
			w.release()
			return nil, err
		}
		ws[i].job, ws[i].state = j, j.State
	}
	m.mu.Lock()
	for i := range ws {
		ws[i].e = m.live[ws[i].job.ID]
	}
	m.mu.Unlock()
	for i := range ws {
		if e := ws[i].e; e != nil {
			w.unwatch = append(w.unwatch, e.watch(wake))
		}
	}
	for i := range ws {
		st, sizes := w.current(i)
		ws[i].state, ws[i].base = st, sizes
		if c, ok := req.Cursors[ws[i].job.ID]; ok {
			if c.Stdout != nil {
				ws[i].base[0] = *c.Stdout
			}
			if c.Stderr != nil {
				ws[i].base[1] = *c.Stderr
			}
		}
	}
	return w, nil
}

// follow signals wake (without blocking) at every change of job id's
// state the Notifier reports, subscribed again before each signal so
// that none is missed, until the returned function is called.
func (m *Manager) follow(id string, wake chan<- struct{}) func() {
	ch, end := m.changes.Subscribe(id)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ch:
				end()
				ch, end = m.changes.Subscribe(id)
				select {
				case wake <- struct{}{}:
				default:
				}
			case <-stop:
				end()
				return
			}
		}
	}()
	return func() { close(stop); <-done }
}

// release stops the supervisors' signals, newest watch first.
func (w *jobWatch) release() {
	for i := len(w.unwatch) - 1; i >= 0; i-- {
		w.unwatch[i]()
	}
}

// current reads job i's state and stored output sizes without I/O for
// supervised jobs.
func (w *jobWatch) current(i int) (State, [2]int64) {
	wj := &w.ws[i]
	if wj.e != nil {
		wj.e.mu.Lock()
		st := wj.e.job.State
		wj.e.mu.Unlock()
		return st, [2]int64{wj.e.stdout.written.Load(), wj.e.stderr.written.Load()}
	}
	return wj.job.State, [2]int64{fileSize(outputPath(w.m.dir, wj.job.ID, Stdout)), fileSize(outputPath(w.m.dir, wj.job.ID, Stderr))}
}

// satisfied reports whether the wake condition holds, and whether every
// job is terminal.
func (w *jobWatch) satisfied() (bool, bool) {
	ws := w.ws
	anyTerm, allTerm, changed := false, true, false
	for i := range ws {
		st, sizes := w.current(i)
		if st.Terminal() {
			anyTerm = true
		} else {
			allTerm = false
		}
		if st != ws[i].state || sizes[0] > ws[i].base[0] || sizes[1] > ws[i].base[1] {
			changed = true
		}
	}
	switch w.wakeOn {
	case WakeTerminal:
		return anyTerm, allTerm
	case WakeAllTerminal:
		return allTerm, allTerm
	}
	return changed, allTerm
}

// unsupervised reports whether a poll of the store is needed.
func (w *jobWatch) unsupervised() bool {
	ws := w.ws
	for i := range ws {
		if ws[i].e == nil && !ws[i].job.State.Terminal() {
			return true
		}
	}
	return false
}

// poll re-reads from the store the jobs no supervisor in this process
// owns that were not terminal.
func (w *jobWatch) poll(ctx context.Context) {
	ws := w.ws
	for i := range ws {
		if ws[i].e == nil && !ws[i].job.State.Terminal() {
			if j, err := w.m.store.Get(ctx, ws[i].job.ID); err == nil {
				ws[i].job = j
			}
		}
	}
}

// wait waits up to req.Wait for the wake condition (without waiting when
// req.Wait is 0) and reports why it returned; req.BeforeWait is called
// once, before the first wait. It fails with req.BeforeWait's error or
// when ctx ends.
func (w *jobWatch) wait(ctx context.Context, req ObserveRequest, wake chan struct{}) (string, error) {
	woke := WokeTimeout
	if req.Wait > 0 {
		deadline := time.NewTimer(req.Wait)
		defer deadline.Stop()
		var poll <-chan time.Time
		if w.unsupervised() && w.m.changes == nil {
			t := time.NewTicker(pollInterval)
			defer t.Stop()
			poll = t.C
		}
		waiting := false
	wait:
		for {
			if ok, all := w.satisfied(); ok || all {
				woke = WokeCondition
				break
			}
			if !waiting && req.BeforeWait != nil {
				if err := req.BeforeWait(); err != nil {
					return "", err
				}
			}
			waiting = true
			select {
			case <-wake:
				if w.m.changes != nil {
					w.poll(ctx) // a change another replica committed
				}
			case <-poll:
				w.poll(ctx)
			case <-deadline.C:
				break wait
			case <-w.m.closed:
				woke = WokeShutdown
				break wait
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
	} else if ok, all := w.satisfied(); ok || all {
		woke = WokeCondition
	}
	return woke, nil
}

// observations reads each watched job's committed record and its output
// since the caller's cursors.
func (m *Manager) observations(ctx context.Context, w *jobWatch, req ObserveRequest) ([]Observation, error) {
	ws := w.ws
	out := make([]Observation, len(ws))
	for i := range ws {
		j, err := m.store.Get(ctx, ws[i].job.ID)
		if j, err = m.settled(ctx, j, err); err != nil {
			return nil, err
		}
		c := req.Cursors[j.ID]
		o := Observation{Job: j}
		if o.Stdout, err = m.chunk(j, Stdout, c.Stdout, req.MaxBytes); err != nil {
			return nil, err
		}
		if o.Stderr, err = m.chunk(j, Stderr, c.Stderr, req.MaxBytes); err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// Waiting returns how many Observe calls are in their bounded wait now (a
// gauge for /metrics).
func (m *Manager) Waiting() int64 { return m.waiting.Load() }
