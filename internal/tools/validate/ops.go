// The effect a validation has before its start, run where the project's
// files are: checking its working directory.

package validate

import (
	"context"
	"os"

	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Ops are the validation tools' operations, for a runner to serve.
func Ops() []workspace.Served { return []workspace.Served{cwdOp} }

// cwdIn is the argument of cwdOp: a project-relative directory.
type cwdIn struct {
	Cwd string `json:"cwd"`
}

// cwdOp checks, on the machine where the project's files are, that a
// validation's working directory lies in the project and is an existing
// directory (invalid_arguments otherwise), so a run on a runner's project
// is refused as on a local one, before it starts.
var cwdOp = workspace.NewOp("validate.cwd", func(_ context.Context, _ workspace.Env, p project.Project, in cwdIn) (struct{}, error) {
	abs, clean, err := p.Resolve(in.Cwd)
	if err != nil {
		return struct{}{}, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return struct{}{}, failure.New(failure.InvalidArguments, "cwd %q is not an existing directory", clean)
	}
	return struct{}{}, nil
})
