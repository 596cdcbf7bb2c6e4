package evidencepg_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/webcodex/webcodex/internal/evidence"
	"github.com/webcodex/webcodex/internal/evidence/evidencepg"
	"github.com/webcodex/webcodex/internal/evidence/storetest"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/pgdb/pgtest"
)

// backend is one database and the key file its replicas are given; each
// Open is a replica with its own pool.
type backend struct {
	url     string
	keyFile string
}

func newBackend(t *testing.T) backend {
	return backend{url: pgtest.URL(t), keyFile: filepath.Join(t.TempDir(), evidence.KeyFile)}
}

// pool opens a new pool on the backend's database, closed when t ends.
func (b backend) pool(t *testing.T) *pgdb.DB {
	t.Helper()
	db, err := pgdb.Open(context.Background(), b.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func (b backend) Open(t *testing.T, opts evidence.Options) (storetest.Journal, error) {
	j, err := evidencepg.Open(context.Background(), b.pool(t), b.keyFile, opts)
	if err != nil {
		return nil, err
	}
	return j, nil
}

func (b backend) Verify(t *testing.T, opts evidence.VerifyOptions) evidence.Report {
	t.Helper()
	rep, err := evidencepg.Verify(context.Background(), b.pool(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return newBackend(t) })
}
