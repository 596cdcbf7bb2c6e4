// Package opsapi serves the operator's monitoring endpoints (decision
// 0085):
//
//	GET /metrics  Prometheus text format; a bearer credential holding
//	              metrics:read or account:manage (admin implies both):
//	              none is 401, one without the scope 403
//	GET /readyz   200 "ready" or 503 "not ready", no credential, no detail
//
// /healthz (package rest) stays the liveness probe: it answers while the
// process serves HTTP at all; /readyz answers whether it can serve calls.
package opsapi

import (
	"context"
	"net/http"
	"time"

	"github.com/webcodex/webcodex/internal/auth"
	"github.com/webcodex/webcodex/internal/failure"
	"github.com/webcodex/webcodex/internal/httpserver"
)

// Paths of the endpoints.
const (
	MetricsPath = "/metrics"
	ReadyPath   = "/readyz"
)

// ReadyTimeout bounds one readiness check (every store's trivial read
// together); a check that does not end in time is "not ready".
const ReadyTimeout = 2 * time.Second

// Bodies of /readyz: nothing else is said (no store, no error).
const (
	ReadyBody    = "ready\n"
	NotReadyBody = "not ready\n"
)

// MetricsScopes are the scopes either of which reads /metrics.
var MetricsScopes = []auth.Scope{auth.ScopeMetricsRead, auth.ScopeAccountManage}

// Options configure the endpoints.
type Options struct {
	// Metrics serves the families; nil: /metrics is not mounted (404),
	// as when [metrics] enabled is false.
	Metrics http.Handler
	// Ready judges readiness within its context (ReadyTimeout); nil
	// means always ready.
	Ready func(ctx context.Context) error
}

// Register mounts the endpoints on mux. /readyz is served outside every
// request pool (mux.Always) so that a full pool never reads as "not
// ready"; its checks are bounded by ReadyTimeout and run one at a time (a
// probe arriving during a check waits for the slot up to ReadyTimeout).
func Register(mux *httpserver.Mux, o Options) {
	if o.Metrics != nil {
		mux.Authenticated("GET "+MetricsPath, scoped(o.Metrics))
	}
	mux.Always("GET "+ReadyPath, &readiness{check: o.Ready, slot: make(chan struct{}, 1)})
}

// scoped refuses a principal holding none of MetricsScopes.
func scoped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalFrom(r.Context())
		if !p.Has(auth.ScopeMetricsRead) && !p.Has(auth.ScopeAccountManage) {
			httpserver.WriteInsufficientScope(w, r, MetricsScopes[:1],
				failure.New(failure.InsufficientScope, "/metrics requires %s or %s", auth.ScopeMetricsRead, auth.ScopeAccountManage))
			return
		}
		h.ServeHTTP(w, r)
	})
}

type readiness struct {
	check func(ctx context.Context) error
	slot  chan struct{}
}

func (h *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
	defer cancel()
	ready := false
	select {
	case h.slot <- struct{}{}:
		ready = h.check == nil || h.check(ctx) == nil
		<-h.slot
	case <-ctx.Done():
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(NotReadyBody))
		return
	}
	w.Write([]byte(ReadyBody))
}
