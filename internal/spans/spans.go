// Package spans starts OpenTelemetry child spans without a tracer of its
// own: the listener middleware (package obs) starts one span per request
// with the node's tracer, and layers below start children with Start,
// which takes its tracer from the span the context already carries. No
// layer needs a tracer and nothing global is consulted. With tracing off
// the context carries no recording span and Start returns at once,
// allocating nothing. It imports only the OpenTelemetry API, so domain
// packages may use it.
package spans

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of Floe's spans.
const TracerName = "github.com/floe-lake/floe"

// Span attribute keys Floe sets on request spans (beside the OpenTelemetry semantic
// conventions' http.*). Values are never secrets: no tokens, keys,
// signatures, query strings or SQL literals.
const (
	// AttrRequestID is the request id (X-Request-Id / x-amz-request-id).
	AttrRequestID = attribute.Key("floe.request_id")
	// AttrPrincipal is the authenticated caller's principal id.
	AttrPrincipal = attribute.Key("floe.principal")
	// AttrListener names the part of Floe that served a request.
	AttrListener = attribute.Key("floe.listener")
)

// Start starts a child of the recording span ctx carries, named name,
// with its tracer provider. Without one (tracing off or not sampled) it
// returns ctx and the span ctx carries, a no-op. Callers set attributes
// only when the span IsRecording, so tracing off costs one context lookup.
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(TracerName).Start(ctx, name)
}

// On reports whether ctx carries a recording span (so a caller can
// skip building attributes).
func On(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// End marks span failed when err is not nil, and ends it. The error's
// text is not recorded (it may quote a statement or a path a caller chose).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
