package app_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webcodex/webcodex/internal/app"
	"github.com/webcodex/webcodex/internal/telemetry"
)

func TestTelemetryConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := app.LoadConfig(dir, env(nil))
	if err != nil || cfg.Telemetry.Enabled() {
		t.Fatalf("default: tracing on (%+v) or %v", cfg.Telemetry, err)
	}
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("[telemetry]\nendpoint = \"http://127.0.0.1:4318\"\nservice_name = \"wc-test\"\nsample_ratio = 0.5\n"), 0o600)
	cfg, err = app.LoadConfig(dir, env(nil))
	if err != nil || cfg.Telemetry.TracesURL() != "http://127.0.0.1:4318/v1/traces" || cfg.Telemetry.ServiceName != "wc-test" || cfg.Telemetry.SampleRatio != 0.5 {
		t.Fatalf("from the file: %+v %v", cfg.Telemetry, err)
	}
	cfg, err = app.LoadConfig(dir, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}))
	if err != nil || cfg.Telemetry.TracesURL() != "http://collector:4318/v1/traces" {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT: %+v %v", cfg.Telemetry, err)
	}
	cfg, err = app.LoadConfig(dir, env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/custom"}))
	if err != nil || cfg.Telemetry.TracesURL() != "http://collector:4318/custom" {
		t.Fatalf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %+v %v", cfg.Telemetry, err)
	}

	for _, c := range []struct{ file, env, key string }{
		{"[telemetry]\nendpoint = \"127.0.0.1:4318\"\n", "", "telemetry.endpoint"},
		{"[telemetry]\nendpoint = \"http://u:p@host:4318\"\n", "", "telemetry.endpoint"},
		{"", "grpc://host:4317", "telemetry.endpoint"},
		{"[telemetry]\ntraces_endpoint = \"http://\"\n", "", "telemetry.traces_endpoint"},
		{"[telemetry]\nsample_ratio = 0\n", "", "telemetry.sample_ratio"},
		{"[telemetry]\nsample_ratio = -1\n", "", "telemetry.sample_ratio"},
		{"[telemetry]\nsample_ratio = 2\n", "", "telemetry.sample_ratio"},
		{"[telemetry]\nservice_name = \"\"\n", "", "telemetry.service_name"},
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, app.ConfigFile), []byte(c.file), 0o600)
		_, err := app.LoadConfig(d, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.env}))
		ce, ok := errors.AsType[*app.ConfigError](err)
		if !ok || ce.Key != c.key {
			t.Errorf("%q / %q: %v, want a ConfigError naming %s", c.file, c.env, err, c.key)
		}
		if entries, _ := os.ReadDir(d); len(entries) != 1 {
			t.Errorf("%q: a refused configuration created files: %v", c.file, entries)
		}
	}

	// Export headers: the file's table, then OTEL_EXPORTER_OTLP_HEADERS,
	// then the traces variable, header by header.
	os.WriteFile(filepath.Join(dir, app.ConfigFile), []byte("[telemetry.headers]\nx-a = \"file\"\nx-b = \"file\"\n"), 0o600)
	cfg, err = app.LoadConfig(dir, env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-b=env,x-c=env", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "X-C=traces%21"}))
	if want := map[string]string{"X-A": "file", "X-B": "env", "X-C": "traces!"}; err != nil || !maps.Equal(cfg.Telemetry.Headers, want) {
		t.Fatalf("headers %v, %v; want %v", cfg.Telemetry.Headers, err, want)
	}
	for _, c := range []struct{ file, name, value, key string }{
		{"", "OTEL_EXPORTER_OTLP_HEADERS", "SECRET-no-equals", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-k=SECRET%zz", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{"", "OTEL_EXPORTER_OTLP_HEADERS", "bad name=SECRET", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"[telemetry.headers]\n\"x-k\" = \"SECRET\\r\\nInjected: 1\"\n", "", "", "telemetry.headers"},
		{"[telemetry.headers]\n\"bad name\" = \"SECRET\"\n", "", "", "telemetry.headers"},
	} {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, app.ConfigFile), []byte(c.file), 0o600)
		_, err := app.LoadConfig(d, env(map[string]string{c.name: c.value}))
		ce, ok := errors.AsType[*app.ConfigError](err)
		if !ok || ce.Key != c.key || !errors.Is(err, telemetry.ErrHeaders) {
			t.Errorf("%q / %s=%q: %v, want a ConfigError naming %s", c.file, c.name, c.value, err, c.key)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error shows a header value: %v", err)
		}
		if entries, _ := os.ReadDir(d); len(entries) != 1 {
			t.Errorf("%q: a refused configuration created files: %v", c.file, entries)
		}
	}
}
