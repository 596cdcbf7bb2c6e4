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
	// Elsewhere counts the expired jobs of another live replica: their
	// output is in that replica's data directory and its purge's to
	// remove. Unreachable counts the expired jobs of a replica that is
	// gone whose output files are not in this process's jobs directory
	// (they were on that replica's disk): nothing here can remove them,
	// so they are reported, and their records are not marked. Both are
	// set only by a purge that removed nothing (the end of a run) and by
	// the Pending functions.
	Elsewhere   int64 `json:"elsewhere,omitempty"`
	Unreachable int64 `json:"unreachable,omitempty"`
}

// OutputReach is the job output a process's retention may purge
// (decision 0090): the output of the jobs it supervises, and of the jobs
// of replicas that are gone, wherever their files are in its jobs
// directory.
type OutputReach struct {
	// Dir is this process's jobs directory.
	Dir string
	// Replica is this process's replica id; "" for a data directory and
	// for an offline command on a database (it is no replica).
	Replica string
	// Alive reports whether another replica is serving (pgdb's Alive);
	// nil without replicas: every job's output is under Dir.
	Alive func(ctx context.Context, replica string) (bool, error)
}

// OutputCursor is a position in the order of Store.OutputExpired: after
// the job created at CreatedAt with id ID. The zero cursor is the start.
type OutputCursor struct {
	CreatedAt time.Time
	ID        string
}

// OutputScanPage is how many records one read of Store.OutputExpired
// takes while a purge looks for output it can reach.
const OutputScanPage = 500

// reach is what a process can do with one expired job's output.
type reach int

const (
	reachable   reach = iota // its files, if any, are under Dir: purge
	elsewhere                // another live replica's job: leave it
	unreachable              // a gone replica's files that are not here
)

// of is what r reaches of job j's output; alive caches Alive's answers
// for one scan.
func (r OutputReach) of(ctx context.Context, j Job, alive map[string]bool) (reach, error) {
	if j.Replica == "" || j.Replica == r.Replica || r.Alive == nil {
		return reachable, nil
	}
	live, ok := alive[j.Replica]
	if !ok {
		var err error
		if live, err = r.Alive(ctx, j.Replica); err != nil {
			return 0, err
		}
		alive[j.Replica] = live
	}
	if live {
		return elsewhere, nil
	}
	// A gone replica's job: a job run inline kept no files anywhere (they
	// go when it finishes), nor did one that stored nothing; other files
	// are here when this process uses the data directory that replica used
	// (a restart).
	if !j.Background || j.StdoutBytes+j.StderrBytes == 0 {
		return reachable, nil
	}
	switch _, err := os.Lstat(jobDir(r.Dir, j.ID)); {
	case err == nil:
		return reachable, nil
	case errors.Is(err, fs.ErrNotExist):
		return unreachable, nil
	default:
		return 0, err
	}
}

// scanOutput calls visit with each expired job (terminal, created before
// cutoff, output not purged; oldest first) whose output r reaches, and
// counts in out the jobs it does not reach, until visit returns false or
// the jobs end. It reads OutputScanPage records at a time from a cursor,
// so jobs it leaves never hide the ones after them.
func scanOutput(ctx context.Context, st Store, r OutputReach, cutoff time.Time, out *OutputPurge, visit func(Job) (bool, error)) error {
	alive := map[string]bool{}
	var after OutputCursor
	for {
		js, err := st.OutputExpired(ctx, cutoff, after, OutputScanPage)
		if err != nil {
			return err
		}
		for _, j := range js {
			after = OutputCursor{CreatedAt: j.CreatedAt, ID: j.ID}
			switch at, err := r.of(ctx, j, alive); {
			case err != nil:
				return err
			case at == elsewhere:
				out.Elsewhere++
			case at == unreachable:
				out.Unreachable++
			default:
				if more, err := visit(j); err != nil || !more {
					return err
				}
			}
		}
		if len(js) < OutputScanPage {
			return nil
		}
	}
}

// PurgeOutput removes the output files (under r.Dir) of at most batch
// terminal jobs r reaches that finished before cutoff, oldest first, and
// marks each record OutputPurged (decisions 0087, 0090). A job's files go
// before its record says so: a process killed in between leaves a record
// the next purge finds again, never a record claiming files that exist.
// A job created before cutoff that finished after it is left alone. A
// result with Jobs zero means nothing was left to purge; it then counts
// the jobs left to other replicas or unreachable.
func PurgeOutput(ctx context.Context, st Store, r OutputReach, cutoff time.Time, batch int) (OutputPurge, error) {
	return expiredOutput(ctx, st, r, cutoff, batch, removeOutput(ctx, st, r.Dir))
}

// PendingOutput is what PurgeOutput would remove, batch after batch, and
// what it would leave; it changes nothing.
func PendingOutput(ctx context.Context, st Store, r OutputReach, cutoff time.Time) (OutputPurge, error) {
	return expiredOutput(ctx, st, r, cutoff, planLimit, func(Job) error { return nil })
}

// expiredOutput runs purge on each of at most limit jobs whose output
// PurgeOutput removes, and counts them and their files' size.
func expiredOutput(ctx context.Context, st Store, r OutputReach, cutoff time.Time, limit int, purge func(Job) error) (OutputPurge, error) {
	var out OutputPurge
	err := scanOutput(ctx, st, r, cutoff, &out, func(j Job) (bool, error) {
		if !j.FinishedAt.Before(cutoff) {
			return true, nil
		}
		size, err := treeSize(jobDir(r.Dir, j.ID))
		if err != nil {
			return false, err
		}
		if err := purge(j); err != nil {
			return false, err
		}
		out.Jobs++
		out.Bytes += size
		return out.Jobs < int64(limit), nil
	})
	return reported(out, limit), err
}

// planLimit is the limit of a plan (the Pending functions): every job.
const planLimit = math.MaxInt32

// reported is out without the counts of jobs left when out is a batch
// that removed something: those are reported once, by the purge that
// finds nothing left, or by a plan (limit planLimit).
func reported(out OutputPurge, limit int) OutputPurge {
	if out.Jobs > 0 && limit != planLimit {
		out.Elsewhere, out.Unreachable = 0, 0
	}
	return out
}

// PurgeOutputOverBytes removes, oldest first, the output files of at most
// batch terminal jobs r reaches (created before cutoff: now, for this
// policy) of each project whose reachable output files take more than
// perProject bytes, until they take at most that, and marks each record
// OutputPurged as PurgeOutput does (job_output_bytes_per_project). A
// result with Jobs zero means every project is within the bound.
func PurgeOutputOverBytes(ctx context.Context, st Store, r OutputReach, perProject int64, cutoff time.Time, batch int) (OutputPurge, error) {
	return overBytes(ctx, st, r, perProject, cutoff, batch, removeOutput(ctx, st, r.Dir))
}

// PendingOutputOverBytes is what PurgeOutputOverBytes would remove, batch
// after batch; it changes nothing.
func PendingOutputOverBytes(ctx context.Context, st Store, r OutputReach, perProject int64, cutoff time.Time) (OutputPurge, error) {
	return overBytes(ctx, st, r, perProject, cutoff, planLimit, func(Job) error { return nil })
}

// overBytes runs purge on the oldest jobs of each project over the bound
// (at most limit in all) and counts them and their files' size.
func overBytes(ctx context.Context, st Store, r OutputReach, perProject int64, cutoff time.Time, limit int, purge func(Job) error) (OutputPurge, error) {
	var js []Job
	var sizes []int64
	total := map[string]int64{}
	var out OutputPurge
	err := scanOutput(ctx, st, r, cutoff, &out, func(j Job) (bool, error) {
		size, err := treeSize(jobDir(r.Dir, j.ID))
		if err != nil {
			return false, err
		}
		js, sizes = append(js, j), append(sizes, size)
		total[j.Project] += size
		return true, nil
	})
	if err != nil {
		return OutputPurge{}, err
	}
	for i, j := range js { // oldest first
		if out.Jobs == int64(limit) {
			break
		}
		if total[j.Project] <= perProject || sizes[i] == 0 {
			continue
		}
		if err := purge(j); err != nil {
			return reported(out, limit), err
		}
		total[j.Project] -= sizes[i]
		out.Jobs++
		out.Bytes += sizes[i]
	}
	return reported(out, limit), nil
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
