package evidencedb_test

import (
	"context"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencedb"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
)

// backend is a data directory.
type backend struct{ dir string }

func (b backend) Open(t *testing.T, opts evidence.Options) (storetest.Journal, error) {
	j, err := evidencedb.Open(context.Background(), b.dir, opts)
	if err != nil {
		return nil, err
	}
	return j, nil
}

func (b backend) Verify(t *testing.T, opts evidence.VerifyOptions) evidence.Report {
	t.Helper()
	return verify(t, b.dir, opts)
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backend{dir: t.TempDir()} })
}
