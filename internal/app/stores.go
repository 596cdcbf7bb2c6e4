package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/webcodex/webcodex/internal/audit/auditdb"
	"github.com/webcodex/webcodex/internal/auth/authdb"
	"github.com/webcodex/webcodex/internal/goal/goaldb"
	"github.com/webcodex/webcodex/internal/jobs/jobsdb"
	"github.com/webcodex/webcodex/internal/memory/memorydb"
	"github.com/webcodex/webcodex/internal/project/projectdb"
	"github.com/webcodex/webcodex/internal/window/windowdb"
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
)

// Stores are the opened databases of a data directory.
type Stores struct {
	Workflow *workflowdb.Store
	Auth     *authdb.Store
	Projects *projectdb.Store
	Jobs     *jobsdb.Store
	Audit    *auditdb.Store
	Window   *windowdb.Store
	Goals    *goaldb.Store
	Memory   *memorydb.Store
}

// OpenStores creates the data directory (0700) if needed and opens every
// database in it. The workflow ledger is restored (validated) on open.
func OpenStores(ctx context.Context, dataDir string) (*Stores, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	s := &Stores{}
	var err error
	if s.Workflow, err = workflowdb.Open(ctx, filepath.Join(dataDir, WorkflowDB), nil); err != nil {
		return nil, fmt.Errorf("open %s: %w", WorkflowDB, err)
	}
	if s.Auth, err = authdb.Open(ctx, filepath.Join(dataDir, AuthDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", AuthDB, err)
	}
	if s.Projects, err = projectdb.Open(ctx, filepath.Join(dataDir, ProjectsDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", ProjectsDB, err)
	}
	if s.Jobs, err = jobsdb.Open(ctx, filepath.Join(dataDir, JobsDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", JobsDB, err)
	}
	if s.Audit, err = auditdb.Open(ctx, filepath.Join(dataDir, AuditDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", AuditDB, err)
	}
	if s.Window, err = windowdb.Open(ctx, filepath.Join(dataDir, WindowDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", WindowDB, err)
	}
	if s.Goals, err = goaldb.Open(ctx, filepath.Join(dataDir, GoalsDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", GoalsDB, err)
	}
	if s.Memory, err = memorydb.Open(ctx, filepath.Join(dataDir, MemoryDB)); err != nil {
		s.Close()
		return nil, fmt.Errorf("open %s: %w", MemoryDB, err)
	}
	return s, nil
}

// OpenAudit opens only the data directory's audit.db, for commands that
// read the Action Audit trail and must not touch any other database.
func OpenAudit(ctx context.Context, dataDir string) (*auditdb.Store, error) {
	st, err := auditdb.Open(ctx, filepath.Join(dataDir, AuditDB))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", AuditDB, err)
	}
	return st, nil
}

// OpenGoals opens only the data directory's goals.db, for commands that
// read Goals and must not touch any other database.
func OpenGoals(ctx context.Context, dataDir string) (*goaldb.Store, error) {
	st, err := goaldb.Open(ctx, filepath.Join(dataDir, GoalsDB))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", GoalsDB, err)
	}
	return st, nil
}

// Close closes every open store.
func (s *Stores) Close() error {
	var errs []error
	if s.Workflow != nil {
		errs = append(errs, s.Workflow.Close())
	}
	if s.Auth != nil {
		errs = append(errs, s.Auth.Close())
	}
	if s.Projects != nil {
		errs = append(errs, s.Projects.Close())
	}
	if s.Jobs != nil {
		errs = append(errs, s.Jobs.Close())
	}
	if s.Audit != nil {
		errs = append(errs, s.Audit.Close())
	}
	if s.Window != nil {
		errs = append(errs, s.Window.Close())
	}
	if s.Goals != nil {
		errs = append(errs, s.Goals.Close())
	}
	if s.Memory != nil {
		errs = append(errs, s.Memory.Close())
	}
	return errors.Join(errs...)
}
