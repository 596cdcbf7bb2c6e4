package search_test

import (
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/workspace"
	"testing"

	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/search"
)

func newEnv(t *testing.T) *kerneltest.Env { return kerneltest.New(t, registerLocal) }

// registerLocal registers the tools over the in-process runner.
func registerLocal(reg *kernel.Registry) { search.Register(reg, workspace.LocalOnly(&runner.Local{})) }
