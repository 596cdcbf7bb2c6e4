package files_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/files"
)

func newEnv(t *testing.T) *kerneltest.Env { return kerneltest.New(t, files.Register) }
