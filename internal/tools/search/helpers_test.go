package search_test

import (
	"testing"

	"github.com/webcodex/webcodex/internal/kernel/kerneltest"
	"github.com/webcodex/webcodex/internal/tools/search"
)

func newEnv(t *testing.T) *kerneltest.Env { return kerneltest.New(t, search.Register) }
