package app_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_model/go"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/runner"
	"github.com/webcodex/webcodex/internal/sandboxaudit"
	"github.com/webcodex/webcodex/internal/sandboxaudit/audittest"
)

// TestMetricsSandboxDenials: a sandboxed child of the real server writes
// outside its project (refused by Landlock); the kernel logs the denial to
// audit, the server's reader attributes it to its own sandbox domain, and
// a scrape of /metrics counts it (class fs) with observed = 1. Kernel
// audit is turned on for the test's duration when it is off (and off
// again afterwards): the server itself never turns it on.
func TestMetricsSandboxDenials(t *testing.T) {
	if abi := runner.LandlockABI(); abi < sandboxaudit.MinLandlockABI {
		t.Skipf("Landlock ABI %d logs no denials to audit (needs %d)", abi, sandboxaudit.MinLandlockABI)
	}
	audittest.Enable(t)
	proj, outside := t.TempDir(), t.TempDir()
	s := startApp(t, t.TempDir(), "demo="+proj)
	defer s.stop(t)
	if s.a.SandboxDenials == nil {
		t.Skip("the audit read-log cannot be joined here (needs CAP_AUDIT_READ in the initial namespaces)")
	}
	before := denials(t, scrape(t, s, s.token), true)

	const p = "agent:local:demo"
	sess := str(t, must(t, s.call(t, "work_on_project", map[string]any{"project": p, "instruction": "denials"}, ""), "work_on_project").Output["session_id"])
	target := filepath.Join(outside, "y")
	r := s.call(t, "run_shell", map[string]any{"project": p, "session_id": sess, "command": "echo x > " + target}, "")
	if r.Success || r.Error == nil || r.Error.Kind != "command_failed" {
		t.Fatalf("run_shell writing outside the project: %+v, want command_failed", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the child wrote outside its project")
	}
	// The kernel delivers the audit record after the refusal, on its own
	// thread: wait for the reader to count it, then scrape.
	if err := s.a.SandboxDenials.Wait(t.Context(), uint64(before)+1); err != nil {
		t.Fatalf("denial not counted: %v (%+v)", err, s.a.SandboxDenials.Counts())
	}
	fams := scrape(t, s, s.token)
	if got := denials(t, fams, true); got < before+1 {
		t.Errorf("sandbox_denials_total %v after a refused write, was %v", got, before)
	}
	if m := sample(fams, "webcodex_sandbox_denials_total", map[string]string{"class": "fs"}); m == nil || m.GetCounter().GetValue() < 1 {
		t.Errorf("sandbox_denials_total{class=fs}: %v", m)
	}
	for _, m := range fams["webcodex_sandbox_denials_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "class" {
				t.Errorf("sandbox_denials_total has label %s=%q", l.GetName(), l.GetValue())
			}
		}
	}
}

// TestMetricsSandboxDenialsOff: with [metrics] sandbox_denials = false
// nothing reads the audit log, every class counts 0 and observed says 0,
// so the zero is not taken for "no denials".
func TestMetricsSandboxDenialsOff(t *testing.T) {
	s := startAppWith(t, t.TempDir(), func(c *app.Config) { c.Metrics.SandboxDenials = false })
	defer s.stop(t)
	if s.a.SandboxDenials != nil {
		t.Fatal("an audit reader runs with sandbox_denials = false")
	}
	fams := scrape(t, s, s.token)
	if got := denials(t, fams, false); got != 0 {
		t.Errorf("sandbox_denials_total %v with nothing counting", got)
	}
	if n := len(fams["webcodex_sandbox_denials_total"].GetMetric()); n != len(sandboxaudit.Classes) {
		t.Errorf("%d classes exported, want %d", n, len(sandboxaudit.Classes))
	}
}

// TestMetricsSandboxDenialsAuditOff: with the kernel's audit off the
// server reads the log but reports observed = 0, logs once why, and leaves
// audit off. Skipped where audit is on (the test never turns a host's
// audit off).
func TestMetricsSandboxDenialsAuditOff(t *testing.T) {
	audittest.Lock(t) // no other test process turns audit on meanwhile
	on, err := sandboxaudit.AuditEnabled()
	if err != nil {
		t.Skipf("kernel audit status unavailable: %v", err)
	}
	if on {
		t.Skip("kernel audit is on here")
	}
	var logs bytes.Buffer
	s := startAppLogging(t, t.TempDir(), slog.New(slog.NewTextHandler(&logs, nil)), nil)
	defer s.stop(t)
	if s.a.SandboxDenials == nil {
		t.Skip("the audit read-log cannot be joined here")
	}
	denials(t, scrape(t, s, s.token), false)
	if n := strings.Count(logs.String(), "sandbox denials not observed"); n != 1 || !strings.Contains(logs.String(), "kernel audit is disabled") {
		t.Errorf("logged %d times why denials are not observed:\n%s", n, logs.String())
	}
	if on, _ := sandboxaudit.AuditEnabled(); on {
		t.Error("the server turned kernel audit on")
	}
}

// denials is the sum of webcodex_sandbox_denials_total over its classes;
// it checks that webcodex_sandbox_denials_observed is 1 (observed) or 0.
func denials(t *testing.T, fams map[string]*io_prometheus_client.MetricFamily, observed bool) float64 {
	t.Helper()
	want := 0.0
	if observed {
		want = 1
	}
	if m := sample(fams, "webcodex_sandbox_denials_observed", map[string]string{}); m == nil || m.GetGauge().GetValue() != want {
		t.Errorf("sandbox_denials_observed = %v, want %v", m, want)
	}
	return counterTotal(t, fams, "webcodex_sandbox_denials_total")
}
