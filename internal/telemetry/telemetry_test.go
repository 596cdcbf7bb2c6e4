package telemetry

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
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
		{"headers", func(c *Config) { c.Headers = map[string]string{"x-key": "pw@\r\nInjected: 1"} }},
		{"headers", func(c *Config) { c.Headers = map[string]string{"bad name": "pw@"} }},
		{"headers", func(c *Config) { c.Headers = map[string]string{"x-key": strings.Repeat("pw@", MaxHeaderBytes)} }},
		{"headers", func(c *Config) { c.Headers = manyHeaders(MaxHeaders + 1) }},
	} {
		cfg := DefaultConfig()
		c.tune(&cfg)
		before := cfg
		before.Headers = maps.Clone(cfg.Headers)
		fe, isField := errors.AsType[*FieldError](cfg.Validate())
		if !isField || fe.Key != c.key {
			t.Errorf("%+v: error %v, want one naming %s", cfg, fe, c.key)
		}
		if !reflect.DeepEqual(cfg, before) {
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

func manyHeaders(n int) map[string]string {
	h := map[string]string{}
	for i := range n {
		h["x-h"+strconv.Itoa(i)] = "v"
	}
	return h
}

// TestParseHeaders reads the OTEL_EXPORTER_OTLP_HEADERS form and refuses
// each malformed entry with ErrHeaders, never showing a value.
func TestParseHeaders(t *testing.T) {
	got, err := ParseHeaders(" x-honeycomb-team = k%20ey%2Cone , dd-api-key=abc=def,,")
	want := map[string]string{"X-Honeycomb-Team": "k ey,one", "Dd-Api-Key": "abc=def"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseHeaders = %v, %v; want %v", got, err, want)
	}
	if got, err := ParseHeaders("a=1,A=2"); err != nil || got["A"] != "2" || len(got) != 1 {
		t.Fatalf("a later pair of the same name: %v, %v", got, err)
	}
	for _, bad := range []string{"pw@secret", "bad name=pw@", "=pw@", "x-key=pw@%zz", "x-key=pw@%0Ainjected",
		strings.Repeat("x-k=pw@,", 0) + "x-key=" + strings.Repeat("pw@", MaxHeaderBytes)} {
		h, err := ParseHeaders(bad)
		if !errors.Is(err, ErrHeaders) || h != nil {
			t.Errorf("ParseHeaders(%.40q) = %d headers, %v; want ErrHeaders", bad, len(h), err)
			continue
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("error shows a value: %v", err)
		}
	}
	base := map[string]string{"x-a": "1", "X-B": "2"}
	m := MergeHeaders(base, map[string]string{"X-A": "3"})
	if !reflect.DeepEqual(m, map[string]string{"X-A": "3", "X-B": "2"}) || base["x-a"] != "1" {
		t.Fatalf("MergeHeaders = %v (base %v)", m, base)
	}
}

// TestRemoteParent continues a well-formed traceparent (without its
// tracestate) and ignores malformed ones.
func TestRemoteParent(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc := trace.SpanContextFromContext(remoteParent(context.Background(), good))
	if !sc.IsRemote() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || sc.TraceState().Len() != 0 {
		t.Fatalf("remote parent %v", sc)
	}
	for _, bad := range []string{"garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"} {
		ctx := context.Background()
		if got := remoteParent(ctx, bad); got != ctx {
			t.Errorf("traceparent %q was accepted", bad)
		}
	}
}

func TestBounds(t *testing.T) {
	if MaxHeaders != 32 || MaxHeaderBytes != 8192 {
		t.Fatal("a header bound changed: update the docs (docs/operations.md) and this test")
	}
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
