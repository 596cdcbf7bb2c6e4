package jobs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/redact"
	"github.com/webcodex/webcodex/internal/redact/redacttest"
)

// TestRecordIsRedacted: a credential in a job's purpose or cwd (the
// caller's text the record keeps) never reaches jobs.db; the record says
// where it was redacted.
func TestRecordIsRedacted(t *testing.T) {
	e := newEnv(t, jobs.Options{})
	ctx := context.Background()
	var ids []string
	for _, c := range redacttest.Credentials {
		if strings.Contains(c.Planted, "\n") {
			continue // a purpose is one line
		}
		spec := e.spec("exit 0")
		spec.Purpose, spec.Cwd = "deploy x_"+c.Planted, "sub/"+c.Planted
		j, err := e.m.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
		if strings.Contains(j.Purpose, c.Secret) || strings.Contains(j.Cwd, c.Secret) || !strings.Contains(j.Purpose, redact.Marker) {
			t.Errorf("%s: record purpose %q cwd %q", c.Name, j.Purpose, j.Cwd)
		}
	}
	for _, id := range ids {
		e.wait(id)
	}
	files, _ := filepath.Glob(filepath.Join(e.data, "jobs.db*"))
	if len(files) == 0 {
		t.Fatal("no jobs.db")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range redacttest.Credentials {
			if bytes.Contains(b, []byte(c.Secret)) {
				t.Errorf("%s holds the planted %s credential", filepath.Base(f), c.Name)
			}
		}
	}
}
