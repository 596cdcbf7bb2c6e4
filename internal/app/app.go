// Package app is WebCodex's composition root: it opens the stores of a data
// directory, builds the domain services, the kernel and its tools, and the
// HTTP server. Nothing else in the program constructs these.
//
// The same calls serve the binary and the end-to-end tests:
//
//	a, err := app.Open(ctx, cfg, logger)
//	addr, err := a.Listen()
//	err = a.Serve(ctx) // until ctx is done, then a graceful shutdown
//	a.Close()
package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/retention"

	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/gateway"
	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/kernel"
	"github.com/webcodex/webcodex/internal/lsp"
	"github.com/webcodex/webcodex/internal/mcpprovider"
	"github.com/webcodex/webcodex/internal/mcpprovider/mcpop"
	"github.com/webcodex/webcodex/internal/metrics"
	"github.com/webcodex/webcodex/internal/oauth/accesstoken"
	"github.com/webcodex/webcodex/internal/oauth/authserver"
	"github.com/webcodex/webcodex/internal/pgnotify"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/runnerhub"
	"github.com/webcodex/webcodex/internal/runnerlink"
	"github.com/webcodex/webcodex/internal/sandboxaudit"
	"github.com/webcodex/webcodex/internal/shell"
	"github.com/webcodex/webcodex/internal/skill"
	"github.com/webcodex/webcodex/internal/telemetry"
	"github.com/webcodex/webcodex/internal/tools/edit"
	"github.com/webcodex/webcodex/internal/tools/validate"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
	"github.com/webcodex/webcodex/internal/transport/evidenceapi"
	"github.com/webcodex/webcodex/internal/transport/mcpserver"
	"github.com/webcodex/webcodex/internal/transport/opsapi"
	"github.com/webcodex/webcodex/internal/transport/resourcemeta"
	"github.com/webcodex/webcodex/internal/transport/rest"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workspace"
)

// Version is the program version, set at build time with -ldflags.
var Version = "dev"

// AdminTokenFile is the name of the first-start admin credential file in the
// data directory (mode 0600).
const AdminTokenFile = "admin-token"

// RunnerPath is the endpoint `webcodex runner` connects to (its long-poll
// fallback is under runnerlink.PollPath).
const RunnerPath = runnerlink.WebSocketPath

// App is a running WebCodex instance.
type App struct {
	Config Config
	Log    *slog.Logger
	Stores *Stores
	// Tracing exports spans when [telemetry] has an endpoint (nil: off);
	// Close flushes it, within telemetry.ShutdownTimeout.
	Tracing  *telemetry.Tracing
	Sessions *workflow.Service
	Auth     *auth.Service
	Projects *project.Registry
	Runner   runner.Host
	// Hub holds the connections of `webcodex runner` processes; Runners
	// routes each project to the runner serving it (Runner for this
	// host's projects).
	Hub     *runnerhub.Hub
	Runners workspace.Resolver
	Jobs    *jobs.Manager
	Shells  *shell.Manager
	// Navigator runs the language servers of this host's projects (the
	// lsp tool, decision 0082).
	Navigator *lsp.Manager
	// Providers runs the [mcp.providers] of this host's projects (the
	// mcp_tool tool, decision 0083).
	Providers *mcpprovider.Manager
	Kernel    *kernel.Kernel
	Audit     *audit.Service
	// Windows is the window plane: window activity and Window Peers.
	Windows *window.Service
	// Tasks is the Agent Task service (decision 0077); its lapsed
	// attempts are expired in the background while the app runs.
	Tasks *agenttask.Service
	// Intents is the declared edit intent service (decision 0079).
	Intents *intent.Service
	// ReadSets records the digests calls observe and delivers
	// changed_since_read (decision 0080); nil without stores.
	ReadSets *readset.Tracker
	// ReadSetsOff turns read-set tracking off (neither recorded nor
	// delivered) while set: a switch for the benchmark that prices it.
	ReadSetsOff atomic.Bool
	// AuditHTTP records audited requests and serves the operator audit API.
	AuditHTTP *auditmw.Middleware
	// Evidence is the tamper-evident invocation journal.
	Evidence Journal
	// Contain kills every descendant of a run or shell when it ends
	// (subreaper, cgroup v2 when one can be created).
	Contain *runner.Containment
	// Sandbox confines every process agents start (runs, jobs,
	// validations, git, persistent shells).
	Sandbox *runner.Policy

	// AdminToken is the first-start admin credential and AdminCreated
	// whether this start created it (so it is printed exactly once).
	AdminToken   string
	AdminCreated bool

	started time.Time
	evSink  *evidenceSink
	outbox  *outboxPump
	stopBG  context.CancelFunc // ends background loops (checkpoints)
	bgDone  chan struct{}
	// stopTasks ends the Agent Task expiry loop, which closes tasksDone.
	stopTasks context.CancelFunc
	tasksDone chan struct{}
	// purger is the retention purger; stopPurge ends its loop, which
	// closes purgeDone (wire_retention.go).
	purger    *retention.Purger
	stopPurge context.CancelFunc
	purgeDone chan struct{}
	mcp       *mcpserver.Server
	server    *http.Server
	ln        net.Listener

	// metrics is the registry of /metrics (nil when [metrics] enabled is
	// off) and mux the handler's routes, whose request slots it reports
	// (wire_metrics.go).
	metrics *metrics.Registry
	mux     *httpserver.Mux
	// SandboxDenials counts the sandbox's Landlock denials from the
	// kernel's audit read-log for /metrics; nil when not counting
	// (wire_metrics.go, decision 0088).
	SandboxDenials *sandboxaudit.Reader

	// toolProfile is the tools MCP tools/list shows (decision 0024).
	toolProfile gateway.Profile

	// validation is the jobs hook that records finished validation jobs
	// as session evidence (wire_jobs.go); the validation tools share it.
	validation *validate.Evidence

	// board is the one message board of the tools and the kernel's
	// session_attention projection (wire_workflow.go).
	board *workflow.Board
	// listener wakes this replica's board observers when another replica
	// changes a board (nil on SQLite, where every change is this
	// process's own).
	listener *pgnotify.Listener

	// live holds the console's streams and verifier (wire_console_live.go).
	live consoleLive

	// oauth verifies the access tokens of the external issuer ([oauth]
	// issuer); nil when none is configured.
	oauth *accesstoken.Verifier
	// oauthStore is the built-in authorization server's store (oauth.db
	// or the database's oauth schema, closed with the stores) and authSrv
	// the server, built with the handler (wire_oauth.go); nil when [oauth]
	// enabled is off.
	oauthStore authserver.Store
	authSrv    *authserver.Service
	// clientMetadataRoots are [oauth] client_metadata_ca_file's
	// certificates; nil means the system's.
	clientMetadataRoots *x509.CertPool
}

// Open opens the data directory described by cfg and builds the services.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	profile, err := toolProfile(cfg)
	if err != nil {
		return nil, err
	}
	stores, err := OpenStores(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tracing, err := telemetry.Start(cfg.Telemetry, Version)
	if err != nil {
		stores.Close()
		return nil, err
	}
	a := &App{Config: cfg, Log: log, Stores: stores, started: time.Now(), toolProfile: profile, Tracing: tracing}
	if err := a.wire(ctx); err != nil {
		tracing.Shutdown(ctx)
		stores.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) wire(ctx context.Context) error {
	if err := a.listen(ctx); err != nil {
		return err
	}
	a.Sessions = newSessions(a.Stores)
	a.Windows = window.NewService(a.Stores.Window, a.Log, nil)
	authSvc, err := newAuth(a.Stores, a.Config, a.Log)
	if err != nil {
		return err
	}
	a.Auth = authSvc
	if err := checkTokenProfiles(ctx, a.Auth); err != nil {
		return err
	}
	if a.oauth, err = a.Config.OAuthVerifier(); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := a.openAuthServerStore(ctx); err != nil {
		return err
	}
	a.AdminToken, a.AdminCreated, err = a.Auth.EnsureAdmin(ctx, filepath.Join(a.Config.DataDir, AdminTokenFile))
	if err != nil {
		return fmt.Errorf("admin credential: %w", err)
	}
	a.Projects = newProjects(a.Stores)
	a.Contain = runner.Setup()
	a.Log.Info("start: process containment", "mechanism", a.Contain.Mechanism(), "detail", a.Contain.Detail())
	a.Sandbox = a.Config.SandboxPolicy()
	if n := runner.SweepTemp(""); n > 0 {
		a.Log.Info("start: removed temporary directories of servers that are gone", "count", n)
	}
	a.Runner = &runner.Local{Contain: a.Contain, Policy: a.Sandbox}
	a.Hub = runnerhub.New(runnerhub.Options{Auth: a.Auth, Projects: a.Projects, Store: a.Stores.Projects, Logger: a.Log, Replica: a.Stores.ReplicaID(),
		// A runner's processes that a previous server started: the jobs
		// adopt the ones they recorded (a.Jobs exists before any runner
		// can connect).
		Reconcile: func(ctx context.Context, r runner.Reattacher, held []string) {
			if err := a.Jobs.Reconcile(ctx, r, held); err != nil {
				a.Log.Warn("jobs: reconciling a runner's processes", "runner", r.ID(), "err", err)
			}
		}})
	a.Shells = shell.NewManager(shell.Options{Contain: a.Contain, Sandbox: a.Sandbox})
	a.Navigator = lsp.NewManager(lsp.Options{Contain: a.Contain, Sandbox: a.Sandbox, CacheRoot: filepath.Join(a.Config.DataDir, LanguageServerCacheDir)})
	a.Providers = mcpprovider.NewManager(mcpprovider.Options{Providers: a.Config.MCP.Providers, Contain: a.Contain, Sandbox: a.Sandbox, Version: Version})
	a.Runners = workspace.Resolver{Local: workspace.Local{Host: a.Runner, Shells: a.Shells, Navigator: a.Navigator, Providers: a.Providers}, Remote: a.Hub.Runner}
	if a.Jobs, err = newJobs(ctx, a); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if a.Evidence, err = openEvidence(ctx, a); err != nil {
		return err
	}
	a.evSink = newEvidenceSink(a, a.Evidence)
	if err := a.startOutbox(ctx); err != nil {
		return err
	}
	bg, stop := context.WithCancel(context.Background())
	a.stopBG, a.bgDone = stop, make(chan struct{})
	go func() { defer close(a.bgDone); a.Evidence.Run(bg) }()
	a.Tasks = newTasks(a)
	a.Intents = newIntents(a)
	a.ReadSets = newReadSets(a)
	a.Kernel = newKernel(a)
	a.metrics = newMetrics(a)
	a.Audit, a.AuditHTTP = newAudit(a)
	if err := a.recoverCrash(ctx); err != nil {
		return err
	}
	// Started last: a failed start closes the stores with no loop on them.
	tctx, stopTasks := context.WithCancel(context.Background())
	a.stopTasks, a.tasksDone = stopTasks, make(chan struct{})
	go startTaskExpiry(tctx, a, a.Tasks, a.tasksDone)
	a.startRetention()
	a.startSandboxDenials()
	return nil
}

// recoverCrash leaves an honest record of what a crash cut off, before any
// call is admitted: every call started but never finished by a process
// that is gone gets an outcome_unknown finish in its sessions and an
// evidence record (written first), and the edit staging files left in
// registered projects are removed (unless another process serves this
// data directory and may be editing).
func (a *App) recoverCrash(ctx context.Context) error {
	rec, err := a.Sessions.RecoverOpenCalls(ctx, a.evSink.recordRecovered)
	if err != nil {
		return fmt.Errorf("recover open calls: %w", err)
	}
	if len(rec.Calls) > 0 {
		a.Log.Warn("start: calls cut off by a crash recorded as outcome_unknown", "calls", len(rec.Calls), "sessions", rec.Sessions)
	}
	if a.Stores.Workflow.Shared() {
		a.Log.Info("start: staging files not removed: another process serves this data directory")
		return nil
	}
	ps, err := a.Projects.List(ctx)
	if err != nil {
		return fmt.Errorf("projects: %w", err)
	}
	removed := 0
	for _, p := range ps {
		if p.Runner != "" {
			continue // its files are on the runner's machine
		}
		n, complete, err := edit.RemoveStaging(ctx, p.Root)
		removed += n
		if err != nil || !complete {
			a.Log.Warn("start: staging file scan incomplete", "project", p.ID, "removed", n, "err", err)
		}
	}
	a.Log.Info("start: crash recovery", "outcome_unknown_calls", len(rec.Calls), "staging_files_removed", removed)
	return nil
}

// Handler returns the complete HTTP handler.
func (a *App) Handler() http.Handler {
	res, served := a.resource()
	as, err := a.authServer(res.Resource)
	if err != nil {
		a.Log.Error("oauth: no authorization server", "err", err)
	}
	mux := httpserver.NewMux(httpserver.Options{
		Auth: credentials{tokens: a.Auth, oauth: a.oauth, issued: as}, AllowedOrigins: a.Config.AllowedOrigins,
		LoopbackOnly: a.Config.Loopback(), PublicHosts: a.Config.PublicHosts(), Logger: a.Log,
		PerPrincipal: a.Config.RequestsPerPrincipal, Tracing: a.Tracing,
		ResourceMetadata: res.Resource.MetadataURL, ChallengeScopes: auth.DefaultScopes,
	})
	a.mux = mux
	opsapi.Register(mux, a.opsOptions())
	if served {
		if err := resourcemeta.Register(mux, res); err != nil {
			a.Log.Error("oauth: protected resource metadata not mounted", "err", err)
		}
	}
	(&rest.Server{Kernel: a.Kernel, Status: a.Status, PublicURL: a.Config.PublicURL, Version: Version, Audit: a.AuditHTTP}).Register(mux)
	mux.AuthenticatedTransport(httpserver.TransportMCP, resourcemeta.MCPPath, a.AuditHTTP.Wrap(auditmw.OpMCP, a.MCP().Handler(httpserver.MaxBodyBytes)))
	if a.Hub != nil {
		// The runner channel authenticates runner tokens itself, and a
		// connection lives long: it takes no request slot.
		mux.Always(RunnerPath, a.Hub)
		mux.Always(runnerlink.PollPath, http.HandlerFunc(a.Hub.ServePoll))
	}
	a.AuditHTTP.RegisterOperator(mux)
	if a.Evidence != nil {
		(&evidenceapi.API{Journal: a.Evidence, Sessions: a.Sessions, Projects: visibleProjects{a.Projects}}).Register(mux)
	}
	a.mountAuthServer(mux, as)
	if c, err := newConsole(a, as); err != nil {
		a.Log.Error("console: not mounted", "err", err)
	} else {
		c.Register(mux)
	}
	return mux.Handler()
}

// MCP returns the MCP transport over the app's kernel. Calls over stdio
// run as the local user.
func (a *App) MCP() *mcpserver.Server {
	if a.mcp == nil {
		a.mcp = mcpserver.New(mcpserver.Options{
			Kernel: a.Kernel, Projects: visibleProjects{a.Projects}, Logger: a.Log, Version: Version, Local: auth.LocalUser(),
			Profile: a.toolProfile, Memory: memoryBootstrap(a), Skills: skill.Finder{Runners: a.Runners}, Plugins: mcpop.Finder{Runners: a.Runners},
			Tracing: a.Tracing,
		})
	}
	return a.mcp
}

// Listen binds the configured address and returns the bound address (useful
// with port 0). It first records which bootstrap credential this server
// accepts (auth.ServedBootstrapFile), so that offline verbs judge a
// credential as it does.
func (a *App) Listen() (net.Addr, error) {
	ln, err := net.Listen("tcp", a.Config.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", a.Config.Listen, err)
	}
	return a.ListenOn(ln)
}

// ListenOn is Listen on a listener the caller bound (it then belongs to
// the App): a caller that must know the address before the handler is
// built (webcodex share starts a tunnel to it and learns the public URL
// the handler serves) binds first. On error ln is closed.
func (a *App) ListenOn(ln net.Listener) (net.Addr, error) {
	if err := auth.RecordServedBootstrap(filepath.Join(a.Config.DataDir, auth.ServedBootstrapFile), a.Config.BootstrapToken); err != nil {
		ln.Close()
		return nil, err
	}
	a.ln = ln
	a.server = &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
	}
	a.server.RegisterOnShutdown(a.live.shutdown)
	if a.Hub != nil {
		a.server.RegisterOnShutdown(a.Hub.EndLongPolls)
	}
	return ln.Addr(), nil
}

// Serve serves HTTP until ctx is done, then shuts down gracefully: it stops
// accepting connections and calls, lets in-flight calls finish for up to
// ShutdownTimeout, and then interrupts the rest, which are recorded as
// interrupted.
func (a *App) Serve(ctx context.Context) error {
	if a.server == nil {
		return errors.New("app: Serve before Listen")
	}
	errc := make(chan error, 1)
	go func() { errc <- a.server.Serve(a.ln) }()
	var lost error
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-a.Stores.Lost():
		// Another replica judged this one gone and may have recorded its
		// calls outcome_unknown: going on would contradict those records.
		lost = fmt.Errorf("this replica lost its claim on the database: %w", a.Stores.LostErr())
		a.Log.Error("stopping", "err", lost)
	}
	a.Log.Info("shutting down", "timeout", time.Duration(a.Config.ShutdownTimeout))
	grace, cancel := context.WithTimeout(context.Background(), time.Duration(a.Config.ShutdownTimeout))
	defer cancel()
	drained := make(chan struct{})
	go func() { a.Kernel.Drain(grace); close(drained) }()
	// Handlers return once their calls finish or are interrupted; allow a
	// little beyond the grace period for the interrupted ones to record.
	hctx, hcancel := context.WithTimeout(context.Background(), time.Duration(a.Config.ShutdownTimeout)+10*time.Second)
	defer hcancel()
	err := a.server.Shutdown(hctx)
	<-drained
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	// Jobs still running have no supervisor after this: their process
	// groups are killed and they are recorded lost (server_shutdown).
	// Persistent shells are released.
	a.release()
	if lost != nil {
		return lost
	}
	return err
}

// Close ends the remaining jobs and shells, writes the audit events still
// queued, and releases the stores. Call it after Serve returns.
func (a *App) Close() error {
	a.live.close()
	a.SandboxDenials.Close()
	if a.Hub != nil {
		a.Hub.Close()
	}
	a.release()
	if a.Contain != nil {
		a.Contain.Tidy()
	}
	if a.Audit != nil {
		ctx, cancel := context.WithTimeout(context.Background(), auditDrainTimeout)
		defer cancel()
		if err := a.Audit.Stop(ctx); err != nil {
			a.Log.Warn("audit: queued events not all written", "err", err)
		}
	}
	var errs []error
	// The purger stops before the stores and the journal it purges close.
	a.stopRetention()
	if a.Evidence != nil {
		if err := a.outbox.close(context.Background()); err != nil {
			a.Log.Warn("evidence: outbox not applied at shutdown (applied at the next start)", "err", err)
		}
		a.stopBG()
		<-a.bgDone
		// The head is signed at shutdown so that verify sees no unsigned tail.
		if _, err := a.Evidence.Checkpoint(context.Background()); err != nil {
			a.Log.Warn("evidence: checkpoint at shutdown", "err", err)
		}
		errs = append(errs, a.Evidence.Close())
	}
	if a.stopTasks != nil {
		a.stopTasks()
		<-a.tasksDone
	}
	if err := a.Tracing.Shutdown(context.Background()); err != nil {
		a.Log.Warn("telemetry: spans not all exported at shutdown", "err", err)
	}
	if a.ReadSets != nil {
		a.ReadSets.Close()
	}
	if a.Intents != nil {
		a.Intents.Close()
	}
	if a.listener != nil {
		a.listener.Close()
	}
	errs = append(errs, a.Stores.Close())
	return errors.Join(errs...)
}

// auditDrainTimeout bounds how long Close waits for queued audit events.
const auditDrainTimeout = 30 * time.Second

// LanguageServerCacheDir is the data directory's directory of the
// language servers' private caches (writable by them alone).
const LanguageServerCacheDir = "lsp"

// release ends what runs beyond a request: persistent shells, language
// servers and jobs.
func (a *App) release() {
	if a.Shells != nil {
		a.Shells.Close()
	}
	if a.Navigator != nil {
		a.Navigator.Close()
	}
	if a.Providers != nil {
		a.Providers.Close()
	}
	if a.Jobs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), runner.KillGrace+10*time.Second)
	defer cancel()
	if err := a.Jobs.Close(ctx); err != nil {
		a.Log.Warn("jobs: shutdown did not finish", "err", err)
	}
	a.Sandbox.Close()
}

func (a *App) evidenceStatus(ctx context.Context) EvidenceStatus {
	if a.Evidence == nil {
		return EvidenceStatus{}
	}
	st := EvidenceStatus{JournalID: a.Evidence.JournalID(), KeyID: a.Evidence.KeyID(), AppendFailures: a.evSink.failures.Load()}
	if cp, err := a.Evidence.Latest(ctx); err == nil {
		st.LastCheckpointSize = cp.Size
	}
	return st
}

// Status is the body of /api/status.
type Status struct {
	Version       string               `json:"version"`
	UptimeSeconds int64                `json:"uptime_seconds"`
	Workflow      workflow.StoreStatus `json:"workflow"`
	Projects      int                  `json:"projects"`
	Tools         int                  `json:"tools"`
	Kernel        kernel.Stats         `json:"kernel"`
	// AuditWriteFailures counts audit writes that failed (each logged; the
	// audited responses were not changed).
	AuditWriteFailures int64 `json:"audit_write_failures"`
	// Evidence describes the evidence journal.
	Evidence EvidenceStatus `json:"evidence"`
	// Containment is how a run's descendants are killed: cgroup or
	// subreaper (runner.Mechanism); ContainmentDetail says where the
	// cgroups live or why none is used.
	Containment       runner.Mechanism `json:"containment"`
	ContainmentDetail string           `json:"containment_detail"`
	// Sandbox is the default sandbox in force for agents' processes:
	// its mode (off or unavailable included), the kernel's Landlock ABI
	// and the network setting.
	Sandbox runner.Status `json:"sandbox"`
	// Retention is the retention policy and its most recent purges.
	Retention RetentionStatus `json:"retention"`
}

// EvidenceStatus is the evidence part of /api/status.
type EvidenceStatus struct {
	JournalID string `json:"journal_id"`
	KeyID     string `json:"key_id"`
	// LastCheckpointSize is the size of the newest signed checkpoint (0
	// before the first).
	LastCheckpointSize uint64 `json:"last_checkpoint_size"`
	// AppendFailures counts records that could not be appended (mutating
	// calls also carried an evidence_gap warning).
	AppendFailures int64 `json:"append_failures"`
}

// Status reports the server's version, uptime and counts.
func (a *App) Status(ctx context.Context) (any, error) {
	wf, err := a.Sessions.Store().Status(ctx)
	if err != nil {
		return nil, err
	}
	// Counted as the caller sees them: a credential bound to one project
	// learns of no other.
	ps, err := visibleProjects{a.Projects}.List(ctx)
	if err != nil {
		return nil, err
	}
	return Status{
		Version: Version, UptimeSeconds: int64(time.Since(a.started).Seconds()),
		Workflow: wf, Projects: len(ps), Tools: len(a.Kernel.Registry().Tools()), Kernel: a.Kernel.Stats(),
		AuditWriteFailures: a.AuditHTTP.WriteFailures(),
		Evidence:           a.evidenceStatus(ctx),
		Containment:        a.Contain.Mechanism(), ContainmentDetail: a.Contain.Detail(),
		Sandbox:   a.Sandbox.Status(),
		Retention: a.retentionStatus(),
	}, nil
}
