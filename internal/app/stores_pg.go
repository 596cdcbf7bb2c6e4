package app

import (
	"context"
	"fmt"
	"github.com/webcodex/webcodex/internal/agenttask/agenttaskpg"
	"github.com/webcodex/webcodex/internal/intent/intentpg"

	"github.com/webcodex/webcodex/internal/audit/auditpg"
	"github.com/webcodex/webcodex/internal/auth/authpg"
	"github.com/webcodex/webcodex/internal/goal/goalpg"
	"github.com/webcodex/webcodex/internal/jobs/jobspg"
	"github.com/webcodex/webcodex/internal/memory/memorypg"
	"github.com/webcodex/webcodex/internal/pgdb"
	"github.com/webcodex/webcodex/internal/project/projectpg"
	"github.com/webcodex/webcodex/internal/readset/readsetpg"
	"github.com/webcodex/webcodex/internal/window/windowpg"
	"github.com/webcodex/webcodex/internal/workflow/workflowpg"
)

// openDatabase opens every store in the PostgreSQL database at url, each
// domain in its own schema migrated to this version (a schema a newer
// WebCodex migrated is refused, named). Errors name the database by its
// URL without the password.
func openDatabase(ctx context.Context, url string) (*Stores, error) {
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s, err := openStoresIn(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	if s.replica, err = db.Join(ctx); err != nil {
		s.Close()
		db.Close()
		return nil, err
	}
	s.db = db
	stop := s.watchClaims(s.replica, s.instance)
	s.closers = append([]func() error{stop}, append(s.closers, s.replica.Close, func() error { db.Close(); return nil })...)
	return s, nil
}

// watchClaims closes s.lost, with s.lostErr set, when the replica's
// membership or the ledger's instance is lost, until the returned
// function stops it.
func (s *Stores) watchClaims(replica, instance claim) func() error {
	s.lost = make(chan struct{})
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var c claim
		select {
		case <-replica.Lost():
			c = replica
		case <-instance.Lost():
			c = instance
		case <-stop:
			return
		}
		s.lostErr = c.LostErr()
		close(s.lost)
	}()
	return func() error { close(stop); <-done; return nil }
}

// openStoresIn opens every store in db (migrating its schema); closing
// them leaves db open.
func openStoresIn(ctx context.Context, db *pgdb.DB) (*Stores, error) {
	s := &Stores{Backend: db.URL()}
	fail := func(schema string, err error) (*Stores, error) {
		s.Close()
		return nil, fmt.Errorf("database %s: schema %s: %w", db.URL(), schema, err)
	}
	wf, err := workflowpg.OpenLedger(ctx, db, nil)
	if err != nil {
		return fail(workflowpg.Schema, err)
	}
	s.Workflow, s.instance, s.closers = wf, wf.Store, append(s.closers, wf.Close)
	if s.Audit, err = auditpg.Open(ctx, db); err != nil {
		return fail(auditpg.Schema, err)
	}
	if s.Auth, err = authpg.Open(ctx, db); err != nil {
		return fail(authpg.Schema, err)
	}
	if s.Projects, err = projectpg.Open(ctx, db); err != nil {
		return fail(projectpg.Schema, err)
	}
	if s.Jobs, err = jobspg.Open(ctx, db); err != nil {
		return fail(jobspg.Schema, err)
	}
	if s.Goals, err = goalpg.Open(ctx, db); err != nil {
		return fail(goalpg.Schema, err)
	}
	if s.Memory, err = memorypg.Open(ctx, db); err != nil {
		return fail(memorypg.Schema, err)
	}
	if s.Tasks, err = agenttaskpg.Open(ctx, db); err != nil {
		return fail(agenttaskpg.Schema, err)
	}
	if s.Intents, err = intentpg.Open(ctx, db); err != nil {
		return fail(intentpg.Schema, err)
	}
	if s.ReadSets, err = readsetpg.Open(ctx, db); err != nil {
		return fail(readsetpg.Schema, err)
	}
	w, err := windowpg.Open(ctx, db)
	if err != nil {
		return fail(windowpg.Schema, err)
	}
	s.Window = w
	s.closers = append(s.closers, w.Close)
	return s, nil
}

// openOneInDatabase opens one store in the PostgreSQL database at url, for
// an offline command that must not touch any other store; the returned
// close closes the store's database.
func openOneInDatabase[T any](ctx context.Context, url string, open func(context.Context, *pgdb.DB) (T, error)) (T, func() error, error) {
	var zero T
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		return zero, nil, err
	}
	st, err := open(ctx, db)
	if err != nil {
		db.Close()
		return zero, nil, fmt.Errorf("database %s: %w", db.URL(), err)
	}
	return st, func() error { db.Close(); return nil }, nil
}
