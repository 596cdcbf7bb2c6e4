package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/agenttask"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskdb"
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/auth/authdb"
	"github.com/webcodex/webcodex/internal/goal"
	"github.com/webcodex/webcodex/internal/goal/goaldb"
	"github.com/webcodex/webcodex/internal/goal/goalpg"
	"github.com/webcodex/webcodex/internal/intent"
	"github.com/webcodex/webcodex/internal/intent/intentdb"
	"github.com/webcodex/webcodex/internal/jobs"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/memory"
	"github.com/webcodex/webcodex/internal/memory/memorydb"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/project"
	"github.com/webcodex/webcodex/internal/project/projectdb"
	"github.com/webcodex/webcodex/internal/readset"
	"github.com/webcodex/webcodex/internal/readset/readsetdb"
	"github.com/webcodex/webcodex/internal/runnerhub"
	"github.com/webcodex/webcodex/internal/window"
	"github.com/webcodex/webcodex/internal/window/windowdb"
	"github.com/webcodex/webcodex/internal/workflow"
	"github.com/webcodex/webcodex/internal/workflow/workflowdb"
)

// Database file names in the data directory. Each domain has its own file;
// the Workflow Session ledger shares storage with nothing else.
const (
	WorkflowDB = "workflow.db"
	AuthDB     = "auth.db"
	ProjectsDB = "projects.db"
	JobsDB     = "jobs.db"
	// AuditDB holds Action Audit Sessions; it shares nothing with
	// workflow.db.
	AuditDB = "audit.db"
	// WindowDB holds window activity and Window Peer messages (decision
	// 0032); it is neither a Workflow Session nor an Action Audit store.
	WindowDB = "window.db"
	// GoalsDB holds Goals and their session correlations (decision 0036).
	GoalsDB = goaldb.FileName
	// MemoryDB holds Project Memory (decision 0035); no Workflow Session
	// event ever writes it.
	MemoryDB = "memory.db"
	// TasksDB holds Agent Tasks and their attempts (decision 0077).
	TasksDB = agenttaskdb.FileName
	// IntentsDB holds declared edit intents and their undelivered overlap
	// notices (decision 0079).
	IntentsDB = intentdb.FileName
	// ReadSetsDB holds sessions' read digests and changed_since_read
	// notices (decision 0080); never file contents.
	ReadSetsDB = readsetdb.FileName
)

// BackendSQLite is Stores.Backend for a data directory's SQLite files.
const BackendSQLite = "sqlite"

// Ledger is what the composition root uses of a Workflow Session ledger:
// the domain's store contracts plus the evidence outbox the ledger keeps
// in its own transactions (decision 0025).
type Ledger interface {
	workflow.Store
	workflow.EventPurger
	workflow.BoardStore
	workflow.SnapshotReader
	// Shared reports whether another process may be serving the same
	// ledger (it then keeps the files and processes that one may use).
	Shared() bool
	// QueueRecord stores an evidence record of a call recorded in no
	// session in the outbox, behind the caller; done receives the outcome.
	QueueRecord(ctx context.Context, body []byte, done func(error)) error
	// Flush returns once every write queued before it has committed.
	Flush(ctx context.Context) error
	// Outbox returns at most limit outbox rows after seq after, in order;
	// TrimOutbox deletes the rows up to upTo (never the newest).
	Outbox(ctx context.Context, after int64, limit int) ([]workflowdb.OutboxRow, error)
	TrimOutbox(ctx context.Context, upTo int64) error
}

// AuthStore holds API tokens and Runtime Console sessions.
type AuthStore interface {
	auth.Store
	auth.ConsoleStore
}

// ProjectStore holds registered projects and each runner's generation.
type ProjectStore interface {
	project.Store
	runnerhub.Store
}

// Stores are the opened stores of a deployment: the SQLite files of a data
// directory, or the schemas of one PostgreSQL database (Config.DatabaseURL).
// Each field is its domain's store contract; nothing above the stores
// knows which backend serves it.
type Stores struct {
	Workflow Ledger
	Auth     AuthStore
	Projects ProjectStore
	Jobs     jobs.Store
	Audit    audit.Store
	Window   window.Store
	Goals    goal.Store
	Memory   memory.Store
	Tasks    agenttask.Store
	Intents  intent.Store
	ReadSets readset.Store

	// Backend names what serves them: BackendSQLite or the database's
	// URL without its password.
	Backend string
	// db is the PostgreSQL database the stores share (nil on SQLite);
	// stores opened later (OAuth, evidence) open in it too. replica is
	// this process's membership of the replicas serving it.
	db      *pgdb.DB
	replica *pgdb.Replica
	// instance is the ledger's claim on the database (workflowpg);
	// lost is closed, with lostErr set, when it or the replica's
	// membership is lost for good (watchClaims).
	instance claim
	lost     chan struct{}
	lostErr  error
	// closers release the stores and then their database, in order.
	closers []func() error
}

// A claim is this process's hold on something in the database that other
// replicas judge it alive by (pgdb.Replica, the ledger's instance).
type claim interface {
	Lost() <-chan struct{}
	LostErr() error
}

// Lost is closed when this process lost a claim on the database for good
// (another replica judged it gone while its connection was lost): it must
// stop serving (LostErr says why). Nil, never closed, on a data
// directory.
func (s *Stores) Lost() <-chan struct{} { return s.lost }

// LostErr is why Lost was closed.
func (s *Stores) LostErr() error {
	select {
	case <-s.lost:
		return s.lostErr
	default:
		return nil
	}
}

// OpenStores opens every store of the deployment cfg describes: the
// PostgreSQL database at cfg.DatabaseURL when it is set (openDatabase),
// otherwise the data directory's SQLite files, creating the directory
// (0700) if needed.
func OpenStores(ctx context.Context, cfg Config) (*Stores, error) {
	if cfg.DatabaseURL != "" {
		return openDatabase(ctx, cfg.DatabaseURL)
	}
	return openFiles(ctx, cfg.DataDir)
}

// openFiles opens the data directory's SQLite databases.
func openFiles(ctx context.Context, dataDir string) (*Stores, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	s := &Stores{Backend: BackendSQLite}
	path := func(name string) string { return filepath.Join(dataDir, name) }
	fail := func(name string, err error) (*Stores, error) {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	wf, err := workflowdb.Open(ctx, path(WorkflowDB), nil)
	if err != nil {
		return fail(WorkflowDB, err)
	}
	s.Workflow, s.closers = wf, append(s.closers, wf.Close)
	au, err := authdb.Open(ctx, path(AuthDB))
	if err != nil {
		return fail(AuthDB, err)
	}
	s.Auth, s.closers = au, append(s.closers, au.Close)
	pr, err := projectdb.Open(ctx, path(ProjectsDB))
	if err != nil {
		return fail(ProjectsDB, err)
	}
	s.Projects, s.closers = pr, append(s.closers, pr.Close)
	jo, err := jobsdb.Open(ctx, path(JobsDB))
	if err != nil {
		return fail(JobsDB, err)
	}
	s.Jobs, s.closers = jo, append(s.closers, jo.Close)
	ad, err := auditdb.Open(ctx, path(AuditDB))
	if err != nil {
		return fail(AuditDB, err)
	}
	s.Audit, s.closers = ad, append(s.closers, ad.Close)
	wi, err := windowdb.Open(ctx, path(WindowDB))
	if err != nil {
		return fail(WindowDB, err)
	}
	s.Window, s.closers = wi, append(s.closers, wi.Close)
	gl, err := goaldb.Open(ctx, path(GoalsDB))
	if err != nil {
		return fail(GoalsDB, err)
	}
	s.Goals, s.closers = gl, append(s.closers, gl.Close)
	me, err := memorydb.Open(ctx, path(MemoryDB))
	if err != nil {
		return fail(MemoryDB, err)
	}
	s.Memory, s.closers = me, append(s.closers, me.Close)
	ts, err := agenttaskdb.Open(ctx, path(TasksDB))
	if err != nil {
		return fail(TasksDB, err)
	}
	s.Tasks, s.closers = ts, append(s.closers, ts.Close)
	is, err := intentdb.Open(ctx, path(IntentsDB))
	if err != nil {
		return fail(IntentsDB, err)
	}
	s.Intents, s.closers = is, append(s.closers, is.Close)
	rs, err := readsetdb.Open(ctx, path(ReadSetsDB))
	if err != nil {
		return fail(ReadSetsDB, err)
	}
	s.ReadSets, s.closers = rs, append(s.closers, rs.Close)
	return s, nil
}

// OpenAudit opens only the deployment's Action Audit store, for commands
// that read the Action Audit trail and must not touch any other store.
func OpenAudit(ctx context.Context, cfg Config) (audit.Store, func() error, error) {
	if cfg.DatabaseURL != "" {
		return openOneInDatabase(ctx, cfg.DatabaseURL, func(ctx context.Context, db *pgdb.DB) (audit.Store, error) { return auditpg.Open(ctx, db) })
	}
	st, err := auditdb.Open(ctx, filepath.Join(cfg.DataDir, AuditDB))
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", AuditDB, err)
	}
	return st, st.Close, nil
}

// OpenGoals opens only the deployment's Goal store, for commands that read
// Goals and must not touch any other store.
func OpenGoals(ctx context.Context, cfg Config) (goal.Store, func() error, error) {
	if cfg.DatabaseURL != "" {
		return openOneInDatabase(ctx, cfg.DatabaseURL, func(ctx context.Context, db *pgdb.DB) (goal.Store, error) { return goalpg.Open(ctx, db) })
	}
	st, err := goaldb.Open(ctx, filepath.Join(cfg.DataDir, GoalsDB))
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", GoalsDB, err)
	}
	return st, st.Close, nil
}

// ReplicaID is this process's replica id when the stores are in a
// database several replicas may share, "" for a data directory.
func (s *Stores) ReplicaID() string {
	if s.replica == nil {
		return ""
	}
	return s.replica.ID()
}

// alive is pgdb.DB.Alive for stores in a database, nil otherwise.
func (s *Stores) alive() func(ctx context.Context, id string) (bool, error) {
	if s.db == nil {
		return nil
	}
	return s.db.Alive
}

// Close closes every open store, then the database they share.
func (s *Stores) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	s.closers = nil
	return errors.Join(errs...)
}
