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
// cfg.SampleRatio of new traces. The exporter connects lazily: an
// unreachable collector costs dropped spans, never a request.
func Start(cfg Config, serviceVersion string) (*Tracing, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(cfg.TracesURL()), otlptracehttp.WithTimeout(ExportTimeout))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(SchemaURL,
		attribute.String(keyServiceName, cfg.ServiceName), attribute.String(keyServiceVersion, serviceVersion))
	tp := trace.NewTracerProvider(
		trace.WithBatcher(exp, trace.WithMaxQueueSize(MaxQueuedSpans)),
		trace.WithResource(res),
		trace.WithSampler(trace.ParentBased(trace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	return &Tracing{provider: tp, tracer: tp.Tracer(instrumentationName)}, nil
}
