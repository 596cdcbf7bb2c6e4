// Package telemetry exports OpenTelemetry traces of the requests WebCodex
// serves and the tools it executes, over OTLP/HTTP, when an endpoint is
// configured; without one every call here is a no-op that allocates
// nothing. The mapping of facts to span names and attributes is
// semconv.go, and nothing else: no argument, result, path, command or body
// ever reaches a span.
//
// A nil *Tracing is tracing off, so that a component built without one
// (tests, offline commands) needs no wiring.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Bounds of the exporter.
const (
	// ShutdownTimeout bounds the flush of the spans still queued when
	// the server stops; what is not exported by then is dropped.
	ShutdownTimeout = 5 * time.Second
	// ExportTimeout bounds one export request to the collector.
	ExportTimeout = 5 * time.Second
	// MaxQueuedSpans bounds the ended spans waiting for export; beyond
	// it new spans are dropped (never blocking a request).
	MaxQueuedSpans = 2048
	// MaxServiceNameBytes bounds service_name.
	MaxServiceNameBytes = 128
)

// DefaultServiceName is service.name when none is configured.
const DefaultServiceName = "webcodex"

// tracesPath is appended to a base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT,
// [telemetry] endpoint), as the OTLP exporter specification has it.
const tracesPath = "/v1/traces"

// instrumentationName is the tracer's instrumentation scope.
const instrumentationName = "github.com/webcodex/webcodex"

// Config is the [telemetry] table of config.toml. Tracing is on when
// Endpoint or TracesEndpoint is set.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL of the collector
	// (OTEL_EXPORTER_OTLP_ENDPOINT); traces go to its /v1/traces.
	Endpoint string `toml:"endpoint"`
	// TracesEndpoint is the full URL traces are sent to
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); it wins over Endpoint.
	TracesEndpoint string `toml:"traces_endpoint"`
	// ServiceName is service.name (default DefaultServiceName).
	ServiceName string `toml:"service_name"`
	// SampleRatio is the share of traces kept, in (0, 1] (default 1).
	SampleRatio float64 `toml:"sample_ratio"`
	// Headers are sent with every export request (a collector's API
	// key: Honeycomb's x-honeycomb-team, Datadog's dd-api-key). The
	// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS
	// variables add to them, header by header (see ParseHeaders). Their
	// values are never logged nor shown in an error.
	Headers map[string]string `toml:"headers"`
}

// DefaultConfig is tracing off, with the defaults it runs with once an
// endpoint is set.
func DefaultConfig() Config {
	return Config{ServiceName: DefaultServiceName, SampleRatio: 1}
}

// Enabled reports whether an endpoint is configured.
func (c Config) Enabled() bool { return c.Endpoint != "" || c.TracesEndpoint != "" }

// TracesURL is the URL spans are exported to ("" when off).
func (c Config) TracesURL() string {
	if c.TracesEndpoint != "" {
		return c.TracesEndpoint
	}
	if c.Endpoint == "" {
		return ""
	}
	return strings.TrimRight(c.Endpoint, "/") + tracesPath
}

// A FieldError names the [telemetry] key a value was refused for.
type FieldError struct {
	Key string
	Err error
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Validate refuses an endpoint that is not an http(s) URL with a host
// (or carries credentials, a query or a fragment), a service name that
// is empty, too long or not printable ASCII, a sample ratio outside
// (0, 1], and headers checkHeaders refuses (more than MaxHeaders or
// MaxHeaderBytes, a name that is not an HTTP token, a value with a
// control character). The error is a *FieldError.
func (c Config) Validate() error {
	for _, f := range []struct{ key, v string }{{"endpoint", c.Endpoint}, {"traces_endpoint", c.TracesEndpoint}} {
		if f.v == "" {
			continue
		}
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return &FieldError{Key: f.key, Err: fmt.Errorf("%q is not an http(s) URL such as http://127.0.0.1:4318", redactURL(f.v))}
		}
	}
	if c.ServiceName == "" || len(c.ServiceName) > MaxServiceNameBytes || !printable(c.ServiceName) {
		return &FieldError{Key: "service_name", Err: fmt.Errorf("must be 1-%d printable ASCII characters", MaxServiceNameBytes)}
	}
	if !(c.SampleRatio > 0 && c.SampleRatio <= 1) {
		return &FieldError{Key: "sample_ratio", Err: errors.New("must be greater than 0 and at most 1")}
	}
	if err := checkHeaders(c.Headers); err != nil {
		return &FieldError{Key: "headers", Err: err}
	}
	return nil
}

// redactURL keeps a refused URL out of logs when it may hold a
// credential: only its scheme and host are shown.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Scheme + "://…@" + u.Host
	}
	return s
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Tracing is the process's tracer provider. A nil *Tracing is off.
type Tracing struct {
	provider provider
	tracer   trace.Tracer
}

// provider is the SDK's tracer provider (see Start).
type provider interface {
	ForceFlush(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Flush exports every ended span now (tests, and before a shutdown).
func (t *Tracing) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown flushes the queued spans, within ShutdownTimeout, and stops
// the exporter; spans ended afterwards are dropped.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	return t.provider.Shutdown(ctx)
}

// Span is one span WebCodex started; the zero Span (tracing off) does
// nothing. An HTTP request span keeps its request until it ends, so that
// all its attributes are set at once.
type Span struct {
	s    trace.Span
	http HTTPRequest
}

// Span start options, built once.
var (
	serverSpan   = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	internalSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
)

// attrBuffers recycles the attribute lists handed to the SDK, which
// copies them (SetAttributes), so that a span's attributes cost the SDK's
// copy only.
var attrBuffers = sync.Pool{New: func() any {
	b := make([]attribute.KeyValue, 0, maxSpanAttributes)
	return &b
}}

// setAttributes sets on s what fill appends, through a recycled list.
func setAttributes[T any](s trace.Span, v T, fill func(T, []attribute.KeyValue) []attribute.KeyValue) {
	buf := attrBuffers.Get().(*[]attribute.KeyValue)
	*buf = fill(v, (*buf)[:0])
	s.SetAttributes(*buf...)
	clear(*buf) // no string outlives the span in the pool
	attrBuffers.Put(buf)
}

// StartHTTP starts the server span of an HTTP request: a child of the
// caller's span when r.Traceparent is a well-formed W3C traceparent (its
// trace id and parent span id; tracestate is not carried), else the root
// of a new trace. A malformed traceparent is ignored. The request's
// attributes are set when the span ends (EndHTTP), with the status.
func (t *Tracing) StartHTTP(ctx context.Context, r HTTPRequest) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	if r.Traceparent != "" {
		ctx = remoteParent(ctx, r.Traceparent)
	}
	ctx, s := t.tracer.Start(ctx, HTTPSpanName(r.Method, r.Route), serverSpan...)
	return ctx, Span{s: s, http: r}
}

// EndHTTP ends an HTTP request span with its request's attributes and
// the response status.
func (s Span) EndHTTP(status int) {
	if s.s == nil {
		return
	}
	setAttributes(s.s, status, func(status int, attrs []attribute.KeyValue) []attribute.KeyValue {
		return appendHTTPStatus(s.http.appendAttributes(attrs), status)
	})
	if status >= 500 {
		s.s.SetStatus(codes.Error, "")
	}
	s.s.End()
}

// StartMCP starts the server span of one MCP request (a child of the
// HTTP request's span on Streamable HTTP).
func (t *Tracing) StartMCP(ctx context.Context, r MCPRequest) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, MCPSpanName(r.Method, r.Tool), serverSpan...)
	setAttributes(s, r, MCPRequest.appendAttributes)
	return ctx, Span{s: s}
}

// EndMCP ends an MCP request span.
func (s Span) EndMCP(o MCPOutcome) {
	if s.s == nil {
		return
	}
	if o.HasRPCError || o.ToolError {
		setAttributes(s.s, o, MCPOutcome.appendAttributes)
		s.s.SetStatus(codes.Error, "")
	}
	s.s.End()
}

// StartTool starts the span of one tool execution (a child of the
// request's span). tool is the registered tool ("" when unknown).
func (t *Tracing) StartTool(ctx context.Context, tool string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, ToolSpanName(tool), internalSpan...)
	return ctx, Span{s: s}
}

// EndTool ends a tool execution span with the call's facts.
func (s Span) EndTool(c ToolCall) {
	if s.s == nil {
		return
	}
	setAttributes(s.s, c, ToolCall.appendAttributes)
	if c.ErrorKind != "" {
		s.s.SetStatus(codes.Error, "")
	}
	s.s.End()
}

// traceparentHeader is the W3C Trace Context header StartHTTP reads.
const traceparentHeader = "traceparent"

// remoteParent returns ctx carrying the remote span context of
// traceparent, or ctx itself when traceparent is malformed (all-zero ids,
// an unknown version's bad form, wrong lengths: propagation.TraceContext
// decides). Only the ids and flags are kept: a caller's tracestate is its
// own text and is never exported.
func remoteParent(ctx context.Context, traceparent string) context.Context {
	carrier := propagation.MapCarrier{traceparentHeader: traceparent}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc.WithTraceState(trace.TraceState{}))
}
