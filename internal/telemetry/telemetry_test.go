package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Endpoint = "http://127.0.0.1:4318"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.TracesURL() != "http://127.0.0.1:4318/v1/traces" {
		t.Fatalf("TracesURL %q", ok.TracesURL())
	}
	ok.TracesEndpoint = "https://collector.example/custom"
	if ok.TracesURL() != ok.TracesEndpoint {
		t.Fatalf("TracesURL %q, want the traces endpoint", ok.TracesURL())
	}
	for _, c := range []struct {
		key  string
		tune func(*Config)
	}{
		{"endpoint", func(c *Config) { c.Endpoint = "127.0.0.1:4318" }},
		{"endpoint", func(c *Config) { c.Endpoint = "ftp://host" }},
		{"endpoint", func(c *Config) { c.Endpoint = "http://user:pw@host" }},
		{"endpoint", func(c *Config) { c.Endpoint = "http://host/?q=1" }},
		{"traces_endpoint", func(c *Config) { c.TracesEndpoint = "http://" }},
		{"service_name", func(c *Config) { c.ServiceName = "" }},
		{"service_name", func(c *Config) { c.ServiceName = strings.Repeat("s", MaxServiceNameBytes+1) }},
		{"service_name", func(c *Config) { c.ServiceName = "a\nb" }},
		{"sample_ratio", func(c *Config) { c.SampleRatio = 0 }},
		{"sample_ratio", func(c *Config) { c.SampleRatio = -0.5 }},
		{"sample_ratio", func(c *Config) { c.SampleRatio = 1.5 }},
	} {
		cfg := DefaultConfig()
		c.tune(&cfg)
		before := cfg
		fe, isField := errors.AsType[*FieldError](cfg.Validate())
		if !isField || fe.Key != c.key {
			t.Errorf("%+v: error %v, want one naming %s", cfg, fe, c.key)
		}
		if cfg != before {
			t.Errorf("Validate changed the config")
		}
		if strings.Contains(cfg.Validate().Error(), "pw@") {
			t.Errorf("error shows a credential: %v", cfg.Validate())
		}
	}
	if DefaultConfig().Enabled() {
		t.Fatal("tracing is on by default")
	}
}

// TestOffIsNil checks that tracing off is a nil *Tracing whose every
// method does nothing.
func TestOffIsNil(t *testing.T) {
	tr, err := Start(DefaultConfig(), "v")
	if err != nil || tr != nil {
		t.Fatalf("Start without an endpoint = %v, %v; want nil, nil", tr, err)
	}
	ctx := context.Background()
	got, span := tr.StartTool(ctx, "x")
	if got != ctx {
		t.Fatal("StartTool changed the context while off")
	}
	span.EndTool(ToolCall{Tool: "x"})
	_, hs := tr.StartHTTP(ctx, HTTPRequest{Method: "GET"})
	hs.EndHTTP(200)
	if err := tr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestBounds(t *testing.T) {
	if ShutdownTimeout != 5*time.Second || ExportTimeout != 5*time.Second || MaxQueuedSpans != 2048 || MaxServiceNameBytes != 128 || maxNameBytes != 128 {
		t.Fatal("a bound changed: update the docs (docs/operations.md) and this test")
	}
	long := strings.Repeat("t", maxNameBytes+10)
	if n := ToolSpanName(long); len(n) != len("execute_tool ")+maxNameBytes {
		t.Fatalf("ToolSpanName not clipped: %d bytes", len(n))
	}
	if MCPSpanName("tools/call", "") != "tools/call" || MCPSpanName("tools/list", "x") != "tools/list" || MCPSpanName("tools/call", "read_files") != "tools/call read_files" {
		t.Fatal("MCP span names")
	}
}
