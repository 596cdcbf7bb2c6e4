package opsapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/webcodex/webcodex/internal/httpserver"
	"github.com/webcodex/webcodex/internal/transport/opsapi"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// TestReadyz: ready and not ready, with no detail either way, and the
// check's context bounded by ReadyTimeout.
func TestReadyz(t *testing.T) {
	var check error
	var deadline time.Time
	mux := httpserver.NewMux(httpserver.Options{})
	opsapi.Register(mux, opsapi.Options{Ready: func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		return check
	}})
	h := mux.Handler()
	start := time.Now()
	if code, body := get(t, h, opsapi.ReadyPath); code != http.StatusOK || body != opsapi.ReadyBody {
		t.Errorf("ready: %d %q", code, body)
	}
	if deadline.IsZero() || deadline.After(start.Add(opsapi.ReadyTimeout+time.Second)) || deadline.Before(start) {
		t.Errorf("check deadline %v, want within ReadyTimeout (%s) of %v", deadline, opsapi.ReadyTimeout, start)
	}
	check = errors.New("store goals: database is closed")
	if code, body := get(t, h, opsapi.ReadyPath); code != http.StatusServiceUnavailable || body != opsapi.NotReadyBody {
		t.Errorf("not ready: %d %q (the reason must not be shown)", code, body)
	}
	// Without metrics, /metrics is not mounted.
	if code, _ := get(t, h, opsapi.MetricsPath); code != http.StatusNotFound {
		t.Errorf("/metrics without a registry: %d, want 404", code)
	}
}

// TestReadyTimeout pins the bound: long enough for a busy store's read,
// short enough that a probe with a few seconds' timeout gets an answer.
func TestReadyTimeout(t *testing.T) {
	if opsapi.ReadyTimeout < 500*time.Millisecond || opsapi.ReadyTimeout > 5*time.Second {
		t.Errorf("ReadyTimeout = %s, want 0.5-5 s", opsapi.ReadyTimeout)
	}
}
