package auditdb_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/audit/storetest"
)

func open(t testing.TB) (*auditdb.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), auditdb.FileName)
	st, err := auditdb.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

func newService(t testing.TB) (*audit.Service, *auditdb.Store, *storetest.Clock, string) {
	st, path := open(t)
	c := storetest.NewClock(time.Unix(1_800_000_000, 0))
	return audit.NewService(st, c.Now), st, c, path
}

var ctx = context.Background()

// owner and intruder are two principals' keys (authority fingerprints).
const (
	owner    = "fp-owner"
	intruder = "fp-intruder"
)

func TestSchema(t *testing.T) {
	st, _ := open(t)
	rows, err := st.DB().Read.Query(`SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name != 'schema_migrations' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var typ, name string
		rows.Scan(&typ, &name)
		got = append(got, typ+":"+name)
	}
	want := "index:idx_action_events_ended index:idx_action_events_meaningful index:idx_action_events_session_seq index:idx_action_sessions_requested index:idx_action_sessions_status " +
		"index:idx_window_session_relations_last table:action_events table:action_sessions table:window_session_relations"
	if strings.Join(got, " ") != want {
		t.Fatalf("schema objects %v", got)
	}
	for _, col := range []string{"principal_kind", "principal_user_id", "oauth_client_id", "changed_files_json", "ids_json", "summary_json",
		"client_window", "window_principal", "meaningful", "started_at_ms", "ended_at_ms"} {
		var n int
		st.DB().Read.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('action_events') WHERE name = ?`, col).Scan(&n)
		if n != 1 {
			t.Errorf("action_events.%s missing", col)
		}
	}
}

// TestSanitizerLeavesNoSecretOnDisk: the contract's secrets event leaves
// none of its planted strings in audit.db or its WAL, open or closed.
func TestSanitizerLeavesNoSecretOnDisk(t *testing.T) {
	svc, st, _, path := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "")
	ev, planted := storetest.SecretsEvent()
	if err := svc.Record(ctx, id, ev, storetest.Attribution); err != nil {
		t.Fatal(err)
	}
	scan := func(stage string) {
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				t.Fatal(err)
			}
			for _, p := range planted {
				if bytes.Contains(b, []byte(p)) {
					t.Errorf("%s: %s contains planted %q", stage, filepath.Base(f), p)
				}
			}
		}
	}
	scan("open")
	st.Close()
	scan("closed")
}

func TestReopenKeepsData(t *testing.T) {
	st, path := open(t)
	svc := audit.NewService(st, nil)
	svc.Record(ctx, "keep", audit.Event{EventView: audit.EventView{Status: audit.EventSuccess}}, audit.Attribution{})
	st.Close()
	st2, err := auditdb.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	sess, evs, err := st2.Session(ctx, "keep", 10)
	if err != nil || sess.TotalActions != 1 || len(evs) != 1 {
		t.Fatalf("%+v %d %v", sess, len(evs), err)
	}
}

func BenchmarkRecord(b *testing.B) {
	svc, st, _, _ := newService(b)
	id, _, err := svc.Affinity(ctx, owner, "")
	if err != nil {
		b.Fatal(err)
	}
	ev := audit.Event{EventView: audit.EventView{Endpoint: "/api/tools/read_file", Operation: "read_file", Status: audit.EventSuccess, DurationMS: 3,
		ChangedFiles: []string{"a.go"}, IDs: map[string]string{"job_id": "j"},
		Summary: map[string]any{"model_ergonomics": map[string]any{"schema_version": 6, "tool_name": "read_file", "success": true}}}}
	var failed atomic.Int64
	b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := svc.Record(ctx, id, ev, audit.Attribution{PrincipalKind: "api_token"}); err != nil {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d records failed", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	commits, jobs := st.DB().Writer.Stats()
	if commits > 0 {
		b.ReportMetric(float64(jobs)/float64(commits), "jobs/commit")
	}
}

// TestEventsDurableEverySecond: the first append is fsynced; appends
// within DurableEvery of the last durable one are committed lazily
// (readable at once, no fsync); the first append DurableEvery or more
// after it is fsynced again.
func TestEventsDurableEverySecond(t *testing.T) {
	svc, st, c, _ := newService(t)
	id, _, _ := svc.Affinity(ctx, owner, "durable")
	w := st.DB().Writer
	appendAt := func(i int, wantLazy int64) {
		t.Helper()
		ev := audit.Event{EventView: audit.EventView{EventID: fmt.Sprintf("d%02d", i), Status: audit.EventSuccess}}
		if err := svc.Record(ctx, id, ev, audit.Attribution{}); err != nil {
			t.Fatal(err)
		}
		if got := w.LazyCommits(); got != wantLazy {
			t.Fatalf("after append %d: %d lazy commits, want %d", i, got, wantLazy)
		}
		var n int
		st.DB().Read.QueryRow(`SELECT COUNT(*) FROM action_events WHERE event_id = ?`, ev.EventID).Scan(&n)
		if n != 1 {
			t.Fatalf("append %d not readable after it returned", i)
		}
	}
	base := w.LazyCommits()
	appendAt(0, base) // first: durable
	c.Add(auditdb.DurableEvery - time.Millisecond)
	appendAt(1, base+1) // within the bound: lazy
	appendAt(2, base+2)
	c.Add(time.Millisecond)
	appendAt(3, base+2) // DurableEvery after the durable one: durable
	appendAt(4, base+3)
}
