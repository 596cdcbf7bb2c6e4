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
	return expiredOutput(ctx, st, dir, replica, cutoff, batch, func(j Job) error {
		if err := os.RemoveAll(jobDir(dir, j.ID)); err != nil {
			return err
		}
		_, err := st.Update(ctx, j.ID, func(r *Job) error { r.OutputPurged = true; return nil })
		return err
	})
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
