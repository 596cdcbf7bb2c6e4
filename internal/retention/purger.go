package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Run is one purge of one target.
type Run struct {
	Store   string    `json:"store"`
	Policy  string    `json:"policy"`
	Cutoff  time.Time `json:"cutoff"`
	Started time.Time `json:"started_at"`
	Ended   time.Time `json:"ended_at"`
	Removed Count     `json:"removed"`
	Batches int       `json:"batches"`
	// Incomplete is true when the run stopped at MaxBatchesPerRun, or on
	// an error, with items left to purge.
	Incomplete bool `json:"incomplete,omitempty"`
	// Error is the error the run stopped on ("" for none): what it
	// removed before is committed and counted.
	Error string `json:"error,omitempty"`
}

// Plan is what one target's policy would remove now.
type Plan struct {
	Store   string    `json:"store"`
	Policy  string    `json:"policy"`
	Cutoff  time.Time `json:"cutoff"`
	Pending Count     `json:"pending"`
}

// Purger runs the policy over its targets.
type Purger struct {
	targets []Target
	log     *slog.Logger
	now     func() time.Time

	mu   sync.Mutex
	runs []Run // newest last, at most MaxRuns
	// first is closed when Loop's first pass ended (firstOnce).
	first     chan struct{}
	firstOnce sync.Once
}

// New returns a purger of targets; log and now may be nil.
func New(targets []Target, log *slog.Logger, now func() time.Time) *Purger {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Purger{targets: targets, log: log, now: now, first: make(chan struct{})}
}

// FirstPass is closed once Loop's first pass ended (at once when there
// are no targets).
func (p *Purger) FirstPass() <-chan struct{} { return p.first }

// Targets reports how many targets the purger has (0: no policy).
func (p *Purger) Targets() int { return len(p.targets) }

// Plan is what each target's policy would remove now; it changes
// nothing.
func (p *Purger) Plan(ctx context.Context) ([]Plan, error) {
	out := make([]Plan, 0, len(p.targets))
	now := p.now()
	for _, t := range p.targets {
		cutoff := now.Add(-t.Age)
		c, err := t.Purger.Pending(ctx, cutoff)
		if err != nil {
			return nil, err
		}
		out = append(out, Plan{Store: t.Store, Policy: t.Policy, Cutoff: cutoff, Pending: c})
	}
	return out, nil
}

// Pass purges every target once, batch after batch, logs each run that
// removed something or failed, and records it in Runs. It returns the
// runs; a target's error does not stop the others.
func (p *Purger) Pass(ctx context.Context) []Run {
	out := make([]Run, 0, len(p.targets))
	for _, t := range p.targets {
		r := p.purge(ctx, t)
		out = append(out, r)
		p.record(r)
		switch {
		case r.Error != "":
			p.log.Warn("retention: purge failed", "store", r.Store, "policy", r.Policy, "removed", r.Removed.Items, "owners", r.Removed.Owners, "batches", r.Batches, "err", r.Error)
		case !r.Removed.IsZero() || r.Removed.Skipped > 0:
			p.log.Info("retention: purged", "store", r.Store, "policy", r.Policy, "removed", r.Removed.Items, "owners", r.Removed.Owners,
				"bytes", r.Removed.Bytes, "skipped", r.Removed.Skipped, "batches", r.Batches, "cutoff", r.Cutoff, "incomplete", r.Incomplete)
		}
	}
	return out
}

// purge runs target t's batches until one removes nothing.
func (p *Purger) purge(ctx context.Context, t Target) Run {
	start := p.now()
	r := Run{Store: t.Store, Policy: t.Policy, Cutoff: start.Add(-t.Age), Started: start}
	for {
		if r.Batches == MaxBatchesPerRun {
			r.Incomplete = true
			break
		}
		c, err := t.Purger.Purge(ctx, r.Cutoff, BatchSize)
		if err != nil {
			r.Error, r.Incomplete = err.Error(), true
			break
		}
		if c.IsZero() {
			r.Removed.Skipped = c.Skipped
			break
		}
		r.Batches++
		r.Removed = r.Removed.add(c)
	}
	r.Ended = p.now()
	return r
}

func (p *Purger) record(r Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = append(p.runs, r)
	if len(p.runs) > MaxRuns {
		p.runs = append([]Run(nil), p.runs[len(p.runs)-MaxRuns:]...)
	}
}

// Runs returns the most recent runs (at most MaxRuns), oldest first.
func (p *Purger) Runs() []Run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Run(nil), p.runs...)
}

// Loop runs a pass at once and then every interval until ctx is done;
// it returns after the pass in progress stops (its open batch rolled
// back by the cancellation). Without targets it returns at once.
func (p *Purger) Loop(ctx context.Context, interval time.Duration) {
	defer p.firstOnce.Do(func() { close(p.first) })
	if len(p.targets) == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		p.Pass(ctx)
		p.firstOnce.Do(func() { close(p.first) })
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
