package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/metrics"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sandboxaudit"
	"github.com/webcodex/webcodex/internal/sqlitedb"
	"github.com/webcodex/webcodex/internal/transport/opsapi"
	"github.com/webcodex/webcodex/internal/workflow/workflowpg"
)

// Database labels on PostgreSQL: the session ledger's writer (and the
// readiness read), and the board's writer of behind writes.
const (
	PostgresDatabase      = "postgresql"
	PostgresBoardDatabase = "postgresql_board"
)

// sqliteDatabase is a store file of the data directory and its name
// (the file's name without .db: the database label).
type sqliteDatabase struct {
	name string
	db   *sqlitedb.DB
}

// sqliteDatabases lists the SQLite databases of the stores and the
// evidence journal (none on a database deployment).
func (a *App) sqliteDatabases() []sqliteDatabase {
	type hasDB interface{ DB() *sqlitedb.DB }
	all := []any{a.Stores.Workflow, a.Stores.Auth, a.Stores.Projects, a.Stores.Jobs, a.Stores.Audit, a.Stores.Window,
		a.Stores.Goals, a.Stores.Memory, a.Stores.Tasks, a.Stores.Intents, a.Stores.ReadSets, a.Evidence}
	var out []sqliteDatabase
	for _, s := range all {
		if h, ok := s.(hasDB); ok && h.DB() != nil {
			out = append(out, sqliteDatabase{name: strings.TrimSuffix(filepath.Base(h.DB().Path()), ".db"), db: h.DB()})
		}
	}
	return out
}

// Ready is the readiness check of /readyz: every store answers a trivial
// read within ctx, and no writer's queue is at its bound (a SQLite
// writer's sqlitedb.MaxBatch, the PostgreSQL ledger writer's
// workflowpg.QueueCapacity, its board writer's BehindQueueCapacity). The
// error names what is not ready; /readyz never shows it.
func (a *App) Ready(ctx context.Context) error {
	var errs []error
	for _, d := range a.sqliteDatabases() {
		var one int
		if err := d.db.Read.QueryRowContext(ctx, "SELECT 1 FROM sqlite_master LIMIT 1").Scan(&one); err != nil && !errors.Is(err, sql.ErrNoRows) {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		}
		if q := d.db.Writer.Counters().Queued; q >= sqlitedb.MaxBatch {
			errs = append(errs, fmt.Errorf("%s: %d writes queued", d.name, q))
		}
	}
	if a.Stores.db != nil {
		var one int
		if err := a.Stores.db.Pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", PostgresDatabase, err))
		}
		if l, ok := a.Stores.Workflow.(*workflowpg.Ledger); ok {
			if q := l.WriterStats().Queued; q >= workflowpg.QueueCapacity {
				errs = append(errs, fmt.Errorf("%s: %d writes queued", PostgresDatabase, q))
			}
			if q := l.BehindStats().Queued; q >= workflowpg.BehindQueueCapacity {
				errs = append(errs, fmt.Errorf("%s: %d writes queued", PostgresBoardDatabase, q))
			}
		}
	}
	select {
	case <-a.Stores.Lost():
		errs = append(errs, errors.New("this replica lost its claim on the database"))
	default:
	}
	return errors.Join(errs...)
}

// observeCall counts a call for /metrics (the kernel's Observe hook).
func (a *App) observeCall(res kernel.Result) {
	tool, outcome := res.Tool, metrics.OutcomeSuccess
	if tool == "" {
		tool = metrics.UnknownTool
	}
	switch {
	case res.Refused:
		outcome = metrics.OutcomeRefused
	case !res.Success:
		outcome = metrics.OutcomeFailure
	}
	a.metrics.ObserveCall(tool, outcome, res.Duration)
}

// newMetrics builds the registry of /metrics ([metrics] enabled; nil when
// off). Everything but the tool calls is read at scrape time from the
// counters the services keep.
func newMetrics(a *App) *metrics.Registry {
	if !a.Config.Metrics.Enabled {
		return nil
	}
	r := metrics.New()
	dbs := a.sqliteDatabases()
	database := []string{"database"}
	writer := func(pick func(sqlitedb.WriterStats) int64) func() []metrics.Sample {
		return func() []metrics.Sample {
			out := make([]metrics.Sample, 0, len(dbs)+1)
			for _, d := range dbs {
				out = append(out, metrics.Sample{Value: float64(pick(d.db.Writer.Counters())), Labels: []string{d.name}})
			}
			return out
		}
	}
	ledger, _ := a.Stores.Workflow.(*workflowpg.Ledger)
	pg := func(f func() []metrics.Sample, pick func(workflowpg.WriterStats) int64) func() []metrics.Sample {
		if ledger == nil {
			return f
		}
		return func() []metrics.Sample {
			return append(f(), metrics.Sample{Value: float64(pick(ledger.WriterStats())), Labels: []string{PostgresDatabase}},
				metrics.Sample{Value: float64(pick(ledger.BehindStats())), Labels: []string{PostgresBoardDatabase}})
		}
	}
	r.Func("db_commits_total", "Transactions committed by a database's writer (group commits).", prometheus.CounterValue, database,
		pg(writer(func(s sqlitedb.WriterStats) int64 { return s.Commits }), func(s workflowpg.WriterStats) int64 { return s.Commits }))
	r.Func("db_fsyncs_total", "Commits made durable with an fsync (SQLite synchronous=FULL); on PostgreSQL the server's own.", prometheus.CounterValue, database,
		writer(func(s sqlitedb.WriterStats) int64 { return s.Durable }))
	r.Func("db_batched_writes_total", "Writes the commits carried (divided by the commits: the mean group-commit batch).", prometheus.CounterValue, database,
		pg(writer(func(s sqlitedb.WriterStats) int64 { return s.Jobs }), func(s workflowpg.WriterStats) int64 { return s.Jobs }))
	r.Func("db_writer_queue_depth", "Writes queued for (or running in) a database's writer now.", prometheus.GaugeValue, database,
		pg(writer(func(s sqlitedb.WriterStats) int64 { return s.Queued }), func(s workflowpg.WriterStats) int64 { return int64(s.Queued) }))
	r.Histograms("db_group_commit_batch_size", "Writes per SQLite group commit.", database, func() []metrics.HistogramSample {
		out := make([]metrics.HistogramSample, 0, len(dbs))
		for _, d := range dbs {
			out = append(out, batchHistogram(d.name, d.db.Writer.Counters()))
		}
		return out
	})
	registerServiceGauges(a, r)
	registerJournal(a, r)
	registerSandboxDenials(a, r)
	if a.Stores.Backend == BackendSQLite {
		r.Func("store_bytes", "Bytes of a data-directory store on disk (its database file, WAL, shared-memory index and rollback journal).", prometheus.GaugeValue,
			[]string{"store"}, func() []metrics.Sample {
				out := make([]metrics.Sample, 0, len(dbs))
				for _, d := range dbs {
					size, _ := databaseSize(d.db.Path())
					out = append(out, metrics.Sample{Value: float64(size), Labels: []string{d.name}})
				}
				return out
			})
	}
	return r
}

// batchHistogram is a writer's batch sizes as a cumulative histogram.
func batchHistogram(name string, s sqlitedb.WriterStats) metrics.HistogramSample {
	h := metrics.HistogramSample{Sum: float64(s.Jobs), Buckets: make(map[float64]uint64, len(sqlitedb.BatchBounds)), Labels: []string{name}}
	var cum uint64
	for i, bound := range sqlitedb.BatchBounds {
		cum += uint64(s.Batches[i])
		h.Buckets[float64(bound)] = cum
	}
	h.Count = cum
	return h
}

// registerServiceGauges adds the gauges read from the services: request
// slots, waiters, runner connections.
func registerServiceGauges(a *App, r *metrics.Registry) {
	r.Func("request_slots_in_use", "Request slots held now, by pool: authenticated (MCP over HTTP, REST and the console API share it), public, waiting (calls in a bounded wait).",
		prometheus.GaugeValue, []string{"pool"}, func() []metrics.Sample {
			if a.mux == nil {
				return nil
			}
			s := a.mux.InUse()
			return []metrics.Sample{{Value: float64(s.Authenticated), Labels: []string{"authenticated"}},
				{Value: float64(s.Public), Labels: []string{"public"}}, {Value: float64(s.Waiting), Labels: []string{"waiting"}}}
		})
	r.Func("request_slots_in_use_by_transport", "Request slots of the authenticated pool held now, by transport (mcp: MCP over HTTP; rest: the REST API, GPT Actions, the console's API and this scrape). A call in a bounded wait holds a waiter slot instead.",
		prometheus.GaugeValue, []string{"transport"}, func() []metrics.Sample {
			if a.mux == nil {
				return nil
			}
			by := a.mux.InUse().ByTransport
			var out []metrics.Sample
			for _, t := range []string{httpserver.TransportMCP, httpserver.TransportREST} {
				out = append(out, metrics.Sample{Value: float64(by[t]), Labels: []string{t}})
			}
			return out
		})
	r.Func("waiters", "Calls in a bounded wait now, by what they wait on (board: observe_session_messages, jobs: observe_jobs).",
		prometheus.GaugeValue, []string{"kind"}, func() []metrics.Sample {
			var out []metrics.Sample
			if a.board != nil {
				out = append(out, metrics.Sample{Value: float64(a.board.Waiting()), Labels: []string{"board"}})
			}
			if a.Jobs != nil {
				out = append(out, metrics.Sample{Value: float64(a.Jobs.Waiting()), Labels: []string{"jobs"}})
			}
			return out
		})
	r.Func("runner_connections", "Runners (webcodex runner) connected to this server now.", prometheus.GaugeValue, nil, func() []metrics.Sample {
		if a.Hub == nil {
			return nil
		}
		return []metrics.Sample{{Value: float64(a.Hub.Connected())}}
	})
}

// registerJournal adds the evidence journal's size and the age of its
// newest signed checkpoint (read at scrape time).
func registerJournal(a *App, r *metrics.Registry) {
	if a.Evidence == nil {
		return
	}
	r.Func("evidence_journal_records", "Records in the evidence journal.", prometheus.GaugeValue, nil, func() []metrics.Sample {
		ctx, cancel := context.WithTimeout(context.Background(), metrics.ScrapeReadTimeout)
		defer cancel()
		head, err := a.Evidence.Head(ctx)
		if err != nil {
			return nil
		}
		return []metrics.Sample{{Value: float64(head.Size)}}
	})
	r.Func("evidence_last_checkpoint_age_seconds", "Seconds since the newest signed checkpoint of the evidence journal (absent before the first).",
		prometheus.GaugeValue, nil, func() []metrics.Sample {
			ctx, cancel := context.WithTimeout(context.Background(), metrics.ScrapeReadTimeout)
			defer cancel()
			cp, err := a.Evidence.Latest(ctx)
			if err != nil || cp.CreatedAt.IsZero() {
				return nil
			}
			return []metrics.Sample{{Value: time.Since(cp.CreatedAt).Seconds()}}
		})
}

// registerSandboxDenials adds the sandbox's Landlock denials, counted from
// the kernel's audit read-log (decision 0088), and whether they are
// observed at all, so that a zero count is never mistaken for none.
func registerSandboxDenials(a *App, r *metrics.Registry) {
	r.Func("sandbox_denials_total", "Accesses the sandbox (Landlock) refused to this server's children, by class of the right refused (fs, net, scope, ptrace, other), "+
		"counted from the kernel's audit log: one per audit event whose refusing domain this process created. Meaningful only while webcodex_sandbox_denials_observed is 1.",
		prometheus.CounterValue, []string{"class"}, func() []metrics.Sample {
			c := a.SandboxDenials.Counts()
			out := make([]metrics.Sample, len(sandboxaudit.Classes))
			for i, class := range sandboxaudit.Classes {
				out[i] = metrics.Sample{Value: float64(c.Denials[i]), Labels: []string{class}}
			}
			return out
		})
	r.Func("sandbox_denials_observed", "1 when sandbox denials are counted now (Linux, Landlock ABI 7, [metrics] sandbox_denials, the audit read-log joined, kernel audit enabled), 0 otherwise.",
		prometheus.GaugeValue, nil, func() []metrics.Sample {
			v := 0.0
			if ok, _ := a.SandboxDenials.Observed(); ok {
				v = 1
			}
			return []metrics.Sample{{Value: v}}
		})
	r.Func("sandbox_denials_losses_total", "Times sandbox denials may have gone uncounted, by reason: overrun (the audit socket's buffer overflowed and records were dropped), "+
		"domains (more sandbox domains with denials at once than sandboxaudit.MaxDomains; their later denials are not counted).",
		prometheus.CounterValue, []string{"reason"}, func() []metrics.Sample {
			c := a.SandboxDenials.Counts()
			return []metrics.Sample{{Value: float64(c.Overruns), Labels: []string{"overrun"}}, {Value: float64(c.DomainsDropped), Labels: []string{"domains"}}}
		})
}

// startSandboxDenials starts counting the sandbox's denials from the
// audit read-log when /metrics is on and [metrics] sandbox_denials asks
// for it, and logs once why they are not observed. The kernel's audit is
// never turned on here: that is the operator's choice.
func (a *App) startSandboxDenials() {
	if a.metrics == nil || !a.Config.Metrics.SandboxDenials {
		return
	}
	if abi := runner.LandlockABI(); abi < sandboxaudit.MinLandlockABI {
		a.Log.Info("metrics: sandbox denials not observed", "reason", fmt.Sprintf("Landlock ABI %d logs no denials (needs %d)", abi, sandboxaudit.MinLandlockABI))
		return
	}
	r, err := sandboxaudit.Start(context.Background(), os.Getpid())
	if err != nil {
		a.Log.Info("metrics: sandbox denials not observed", "reason", err.Error())
		return
	}
	a.SandboxDenials = r
	if ok, err := r.Observed(); !ok {
		a.Log.Info("metrics: sandbox denials not observed until kernel audit is on", "reason", err.Error())
	}
}

// opsOptions are the /metrics and /readyz endpoints' options.
func (a *App) opsOptions() opsapi.Options {
	o := opsapi.Options{Ready: a.Ready}
	if a.metrics != nil {
		o.Metrics = a.metrics.Handler()
	}
	return o
}
