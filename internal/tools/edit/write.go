package edit

import (
	"bytes"
	"context"
	"errors"
	"io/fs"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/filerev"
)

// writeFile is write_project_file's effect on project p, reporting to fx.
func writeFile(ctx context.Context, p project.Project, in WriteInput, fx effects) (WriteOutput, error) {
	if err := validateFences(in.ExpectedReadRevision, in.ExpectedSHA256); err != nil {
		return WriteOutput{}, err
	}
	if len(in.Content) > MaxContentBytes {
		return WriteOutput{}, failure.New(failure.InvalidArguments, "content is %d bytes; the limit is %d", len(in.Content), MaxContentBytes)
	}
	tree, err := p.OpenTree()
	if err != nil {
		return WriteOutput{}, err
	}
	defer tree.Close()
	t, err := resolve(tree, in.Path)
	if err != nil {
		return WriteOutput{}, err
	}
	unlock, err := lockPaths(ctx, []string{t.key})
	if err != nil {
		return WriteOutput{}, err
	}
	defer unlock()

	fenced := in.ExpectedReadRevision != "" || in.ExpectedSHA256 != ""
	content := []byte(in.Content)
	pl := &plan{index: -1, t: t, content: content, changed: true, result: FileResult{Path: t.rel}}
	var preview string
	_, statErr := tree.Root().Lstat(t.loc)
	switch {
	case errors.Is(statErr, fs.ErrNotExist) && tree.Escaped(t.rel) == nil:
		if fenced {
			return WriteOutput{}, conflictNoIndex(ConflictSHA256Mismatch,
				"%q does not exist, but a fence was given; omit the fence to create it", t.rel).
				WithDetail("path", t.rel).WithDetail("reason", ReasonMissing)
		}
		pl.op = OpCreate
		if pl.dirs, err = planCreate(tree, t); err != nil {
			return WriteOutput{}, err
		}
		pl.result.AddedLines = countLines(content)
		preview, _ = previewWhole('+', content)
	case statErr != nil:
		return WriteOutput{}, ioFailure(tree, statErr, t.rel)
	default:
		old, mode, err := readExisting(tree, t)
		if err != nil {
			return WriteOutput{}, err
		}
		if !fenced {
			return WriteOutput{}, conflictNoIndex(ConflictSHA256Mismatch,
				"%q already exists; overwriting it needs expected_read_revision or expected_sha256 from your last read", t.rel).
				WithDetail("path", t.rel).WithDetail("reason", ReasonUnfencedOverwrite)
		}
		if !fenceHolds(in.ExpectedReadRevision, in.ExpectedSHA256, old) {
			return WriteOutput{}, conflictNoIndex(ConflictSHA256Mismatch,
				"%q changed since it was read (its current read revision differs from the fence); read it again", t.rel).
				WithDetail("path", t.rel).WithDetail("reason", ReasonFenceMismatch)
		}
		pl.op, pl.mode, pl.changed = OpReplace, mode, !bytes.Equal(old, content)
		if pl.changed {
			// One replacement of the whole file: diffStats trims the lines
			// it leaves unchanged at both ends.
			pl.result.AddedLines, pl.result.RemovedLines, preview, _ = diffStats(old, []replacement{{start: 0, end: len(old), text: in.Content}})
		}
	}
	out := WriteOutput{
		Path: t.rel, Created: pl.op == OpCreate, Changed: pl.changed,
		ReadRevision: filerev.Of(content), SHA256: filerev.SHA256(content), Bytes: len(content),
	}
	if err := ctx.Err(); err != nil {
		return WriteOutput{}, failure.Wrap(failure.Interrupted, err, "call was cancelled before anything was written")
	}
	written, err := commit(tree, []*plan{pl}, fx.before)
	if len(written) > 0 {
		fx.changed(written, map[string]string{t.rel: diffFact(pl.result, preview)})
	}
	if err != nil {
		return WriteOutput{}, err
	}
	return out, nil
}
