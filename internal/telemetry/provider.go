package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace"
)

// Start returns the tracer provider for cfg (nil when cfg is not
// Enabled): a batching OTLP/HTTP exporter to cfg.TracesURL(), sampling
// cfg.SampleRatio of traces (new ones and ones continued from an inbound
// traceparent alike), sending cfg.Headers with every export. The
// exporter connects lazily: an unreachable collector costs dropped
// spans, never a request.
//
// The headers are always passed explicitly, so the exporter's own reading
// of OTEL_EXPORTER_OTLP_(TRACES_)HEADERS is replaced by the configuration
// loaded (which already merged, and validated, those variables).
func Start(cfg Config, serviceVersion string) (*Tracing, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(cfg.TracesURL()), otlptracehttp.WithTimeout(ExportTimeout),
		otlptracehttp.WithHeaders(MergeHeaders(cfg.Headers, nil)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(SchemaURL,
		attribute.String(keyServiceName, cfg.ServiceName), attribute.String(keyServiceVersion, serviceVersion))
	tp := trace.NewTracerProvider(
		trace.WithBatcher(exp, trace.WithMaxQueueSize(MaxQueuedSpans)),
		trace.WithResource(res),
		trace.WithSampler(sampler(cfg.SampleRatio)),
	)
	return &Tracing{provider: tp, tracer: tp.Tracer(instrumentationName)}, nil
}

// sampler keeps ratio of the traces: a local parent's decision is
// followed (a child is kept with its request span), and a remote parent
// (an inbound traceparent) is sampled by ratio whatever its sampled flag,
// so a caller can link its trace but never decide what this server
// records.
func sampler(ratio float64) trace.Sampler {
	byRatio := trace.TraceIDRatioBased(ratio)
	return trace.ParentBased(byRatio, trace.WithRemoteParentSampled(byRatio), trace.WithRemoteParentNotSampled(byRatio))
}
