package app

import (
	"github.com/webcodex/webcodex/internal/audit"
	"github.com/webcodex/webcodex/internal/transport/auditmw"
)

// newAudit builds the Action Audit Session service over audit.db with its
// group commit running (stopped by Close), and the HTTP middleware
// that records audited requests and serves the operator audit API.
func newAudit(a *App) (*audit.Service, *auditmw.Middleware) {
	svc := audit.NewService(a.Stores.Audit, nil)
	svc.Start(a.Log)
	return svc, &auditmw.Middleware{Audit: svc, Log: a.Log}
}
