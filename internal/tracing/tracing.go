// Package tracing sets up a Floe node's OpenTelemetry tracer: an OTLP/HTTP
// exporter when an endpoint is configured, nothing otherwise. Spans are
// started by the listener middleware (package obs) and by the layers below
// it through obs.StartSpan; this package only builds and stops the
// provider, so the SDK and exporter stay out of every other package.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-lake/floe/internal/spans"
)

// Config chooses whether and where spans are exported.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (http://collector:4318) or the
	// traces URL (a path other than "/" is used as it is). "" leaves the
	// exporter's own environment variables to decide.
	Endpoint string
	// SampleRatio, when in (0, 1], samples that fraction of new traces
	// (parent-based: a sampled incoming traceparent is always followed).
	// 0 leaves OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG to decide
	// (default: parent-based, always on).
	SampleRatio float64
	// Version is the service.version resource attribute.
	Version string
	// Getenv reads the environment (os.Getenv in production).
	Getenv func(string) string
}

// Enabled reports whether c turns tracing on: an endpoint in c or in
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and
// OTEL_SDK_DISABLED not "true".
func (c Config) Enabled() bool {
	env := c.getenv()
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return c.Endpoint != "" || env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

func (c Config) getenv() func(string) string {
	if c.Getenv != nil {
		return c.Getenv
	}
	return func(string) string { return "" }
}

// Tracer is a node's tracer and the function that flushes and stops its
// exporter. The zero Tracer (tracing off) has a nil Tracer and a Shutdown
// that does nothing.
type Tracer struct {
	// Tracer starts request spans; nil when tracing is off.
	Tracer trace.Tracer
	// Provider is the SDK provider (nil when off).
	Provider *sdktrace.TracerProvider
}

// Shutdown flushes buffered spans and stops the exporter.
func (t Tracer) Shutdown(ctx context.Context) error {
	if t.Provider == nil {
		return nil
	}
	if err := t.Provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// New returns the node's tracer: the zero Tracer when c is not Enabled,
// else an SDK provider batching spans to an OTLP/HTTP exporter.
func New(ctx context.Context, c Config) (Tracer, error) {
	if !c.Enabled() {
		return Tracer{}, nil
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return Tracer{}, fmt.Errorf("tracing_sample_ratio %v: want a number in [0, 1]", c.SampleRatio)
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Tracer{}, fmt.Errorf("tracing_otlp_endpoint %q: want an http:// or https:// URL", c.Endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return Tracer{}, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	return newWith(ctx, c, sdktrace.WithBatcher(exp))
}

// NewWithProcessor returns a tracer whose spans go to sp (tests use the
// SDK's in-memory recorder), whatever c's endpoint.
func NewWithProcessor(ctx context.Context, c Config, sp sdktrace.SpanProcessor) (Tracer, error) {
	return newWith(ctx, c, sdktrace.WithSpanProcessor(sp))
}

func newWith(ctx context.Context, c Config, out sdktrace.TracerProviderOption) (Tracer, error) {
	// Later detectors win: the defaults first, then OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "floe"), attribute.String("service.version", c.Version)),
		resource.WithFromEnv())
	if err != nil {
		return Tracer{}, fmt.Errorf("tracing: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{out, sdktrace.WithResource(res)}
	if c.SampleRatio > 0 {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return Tracer{Tracer: tp.Tracer(spans.TracerName), Provider: tp}, nil
}
