package evidence

import (
	"context"
	"time"

	"github.com/webcodex/webcodex/internal/failure"
)

// Bounds of a payload purge (docs/decisions/0086-evidence-payload-purge.md).
const (
	// PurgeBatch is how many records one purge transaction drops when the
	// caller asks for the default (batch 0): small, so that the writer is
	// never held for long.
	PurgeBatch = 256
	// MaxPurgeBatch is the largest batch a caller may ask for.
	MaxPurgeBatch = 4096
)

// PurgeSummary is what one PurgeBefore call did: Purged records in
// Batches transactions (each committed with its row in the purge log),
// the lowest and highest index purged (both nil when none was), under
// Policy for records appended before Cutoff.
type PurgeSummary struct {
	Policy  string      `json:"policy"`
	Cutoff  time.Time   `json:"cutoff"`
	Purged  int64       `json:"purged"`
	Batches int         `json:"batches"`
	Range   *IndexRange `json:"range,omitempty"`
}

// Add counts one committed batch of n records spanning first..last.
func (s *PurgeSummary) Add(n int64, first, last uint64) {
	s.Purged += n
	s.Batches++
	if s.Range == nil {
		s.Range = &IndexRange{First: first, Last: last}
		return
	}
	s.Range.First, s.Range.Last = min(s.Range.First, first), max(s.Range.Last, last)
}

// CheckPurge validates a purge request and returns the batch size to use:
// policy is 1..MaxFieldBytes bytes, cutoff is set, batch is 0 (PurgeBatch)
// or 1..MaxPurgeBatch. Anything else is failure.InvalidArguments.
func CheckPurge(policy string, cutoff time.Time, batch int) (int, error) {
	switch {
	case policy == "" || len(policy) > MaxFieldBytes:
		return 0, failure.New(failure.InvalidArguments, "purge policy must be 1..%d bytes", MaxFieldBytes)
	case cutoff.IsZero():
		return 0, failure.New(failure.InvalidArguments, "purge cutoff is not set")
	case batch < 0 || batch > MaxPurgeBatch:
		return 0, failure.New(failure.InvalidArguments, "purge batch %d is outside 0..%d", batch, MaxPurgeBatch)
	case batch == 0:
		return PurgeBatch, nil
	}
	return batch, nil
}

// PurgeStep purges one batch: at most batch records from index from on,
// in one transaction with its purge log row. It returns how many it
// purged (0 when none was left) and the lowest and highest index purged.
type PurgeStep func(ctx context.Context, from uint64, batch int) (n int64, first, last uint64, err error)

// RunPurge validates the request (CheckPurge) and calls step batch after
// batch, each from after the last index the previous one purged, until a
// batch purges nothing or fails; it returns what the committed batches
// did, and the first error as is.
func RunPurge(ctx context.Context, policy string, cutoff time.Time, batch int, step PurgeStep) (PurgeSummary, error) {
	sum := PurgeSummary{Policy: policy, Cutoff: cutoff.UTC()}
	batch, err := CheckPurge(policy, cutoff, batch)
	if err != nil {
		return sum, err
	}
	for from := uint64(0); ; {
		n, first, last, err := step(ctx, from, batch)
		if err != nil || n == 0 {
			return sum, err
		}
		sum.Add(n, first, last)
		from = last + 1
	}
}

// RunPurgeBatch validates the request (CheckPurge) and calls step once,
// from index from: the summary of that one batch (Purged 0 and Range nil
// when nothing from there on is left to purge, or on an error).
func RunPurgeBatch(ctx context.Context, policy string, cutoff time.Time, from uint64, batch int, step PurgeStep) (PurgeSummary, error) {
	sum := PurgeSummary{Policy: policy, Cutoff: cutoff.UTC()}
	batch, err := CheckPurge(policy, cutoff, batch)
	if err != nil {
		return sum, err
	}
	n, first, last, err := step(ctx, from, batch)
	if err == nil && n > 0 {
		sum.Add(n, first, last)
	}
	return sum, err
}
