package app

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/trace"

	"github.com/floe-lake/floe/internal/tracing"
)

// Tracing (tracing_otlp_endpoint or the OTEL_* variables): one span per
// HTTP request on every listener, with child spans from the layers below
// (authz, store, object I/O, SQL). Off, the tracer is nil and the
// middleware starts no span, so nothing below records either.

// newTracer builds the node's tracer from the configuration.
func (a *App) newTracer(ctx context.Context) error {
	getenv := a.cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := tracing.Config{Endpoint: a.cfg.TracingOTLPEndpoint, SampleRatio: a.cfg.TracingSampleRatio,
		Version: floeVersion(), Getenv: getenv}
	var err error
	if a.cfg.SpanProcessor != nil {
		a.tracer, err = tracing.NewWithProcessor(ctx, c, a.cfg.SpanProcessor)
	} else {
		a.tracer, err = tracing.New(ctx, c)
	}
	if err == nil && a.tracer.Tracer != nil {
		a.log.Info("tracing on: spans exported over OTLP/HTTP")
	}
	return err
}

// requestTracer is the tracer of the listeners' middleware (nil: off).
func (a *App) requestTracer() trace.Tracer { return a.tracer.Tracer }

// stopTracer flushes buffered spans and stops the exporter.
func (a *App) stopTracer(ctx context.Context) error { return a.tracer.Shutdown(ctx) }

// Tracing reports whether this node traces (an endpoint or a span
// processor is configured).
func (a *App) Tracing() bool { return a.tracer.Tracer != nil }
