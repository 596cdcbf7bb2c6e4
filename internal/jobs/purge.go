package jobs

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// OutputPurge counts what a purge of job output removed (or would).
type OutputPurge struct {
	// Jobs is how many jobs' output went.
	Jobs int64 `json:"jobs"`
	// Bytes is the size of the files removed.
	Bytes int64 `json:"bytes"`
}

// PurgeOutput removes the output files (under dir, the jobs directory) of
// at most batch terminal jobs supervised by replica that finished before
// cutoff, oldest first, and marks each record OutputPurged (decision
// 0087). A job's files go before its record says so: a process killed in
// between leaves a record the next purge finds again, never a record
// claiming files that exist. A job created before cutoff that finished
// after it is left alone (it holds its batch slot only while it spans the
// cutoff). A zero result means nothing was purged.
func PurgeOutput(ctx context.Context, st Store, dir, replica string, cutoff time.Time, batch int) (OutputPurge, error) {
	return expiredOutput(ctx, st, dir, replica, cutoff, batch, removeOutput(ctx, st, dir))
}

// PendingOutput is what PurgeOutput would remove, batch after batch; it
// changes nothing.
func PendingOutput(ctx context.Context, st Store, dir, replica string, cutoff time.Time) (OutputPurge, error) {
	return expiredOutput(ctx, st, dir, replica, cutoff, math.MaxInt32, func(Job) error { return nil })
}

// expiredOutput runs purge on each of at most limit jobs whose output
// PurgeOutput removes, and counts them and their files' size.
func expiredOutput(ctx context.Context, st Store, dir, replica string, cutoff time.Time, limit int, purge func(Job) error) (OutputPurge, error) {
	js, err := st.OutputExpired(ctx, replica, cutoff, limit)
	if err != nil {
		return OutputPurge{}, err
	}
	var out OutputPurge
	for _, j := range js {
		if !j.FinishedAt.Before(cutoff) {
			continue
		}
		size, err := treeSize(jobDir(dir, j.ID))
		if err != nil {
			return out, err
		}
		if err := purge(j); err != nil {
			return out, err
		}
		out.Jobs++
		out.Bytes += size
	}
	return out, nil
}

// PurgeOutputOverBytes removes, oldest first, the output files of at most
// batch terminal jobs supervised by replica (created before cutoff: now,
// for this policy) of each project whose jobs' output files take more than
// perProject bytes, until they take at most that, and marks each record
// OutputPurged as PurgeOutput does (job_output_bytes_per_project). A zero
// result means every project is within the bound.
func PurgeOutputOverBytes(ctx context.Context, st Store, dir, replica string, perProject int64, cutoff time.Time, batch int) (OutputPurge, error) {
	return overBytes(ctx, st, dir, replica, perProject, cutoff, batch, removeOutput(ctx, st, dir))
}

// PendingOutputOverBytes is what PurgeOutputOverBytes would remove, batch
// after batch; it changes nothing.
func PendingOutputOverBytes(ctx context.Context, st Store, dir, replica string, perProject int64, cutoff time.Time) (OutputPurge, error) {
	return overBytes(ctx, st, dir, replica, perProject, cutoff, math.MaxInt32, func(Job) error { return nil })
}

// overBytes runs purge on the oldest jobs of each project over the bound
// (at most limit in all) and counts them and their files' size.
func overBytes(ctx context.Context, st Store, dir, replica string, perProject int64, cutoff time.Time, limit int, purge func(Job) error) (OutputPurge, error) {
	js, err := st.OutputExpired(ctx, replica, cutoff, math.MaxInt32)
	if err != nil {
		return OutputPurge{}, err
	}
	sizes := make([]int64, len(js))
	total := map[string]int64{}
	for i, j := range js {
		if sizes[i], err = treeSize(jobDir(dir, j.ID)); err != nil {
			return OutputPurge{}, err
		}
		total[j.Project] += sizes[i]
	}
	var out OutputPurge
	for i, j := range js { // oldest first
		if out.Jobs == int64(limit) {
			break
		}
		if total[j.Project] <= perProject || sizes[i] == 0 {
			continue
		}
		if err := purge(j); err != nil {
			return out, err
		}
		total[j.Project] -= sizes[i]
		out.Jobs++
		out.Bytes += sizes[i]
	}
	return out, nil
}

// removeOutput removes a job's output files, then marks its record
// OutputPurged.
func removeOutput(ctx context.Context, st Store, dir string) func(Job) error {
	return func(j Job) error {
		if err := os.RemoveAll(jobDir(dir, j.ID)); err != nil {
			return err
		}
		_, err := st.Update(ctx, j.ID, func(r *Job) error { r.OutputPurged = true; return nil })
		return err
	}
}

// treeSize is the size of the regular files under root (0 when it does
// not exist).
func treeSize(root string) (int64, error) {
	var n int64
	err := filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return n, nil
	}
	return n, err
}
