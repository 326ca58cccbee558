package spans_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-lake/floe/internal/spans"
)

// TestStart: under a recording span Start makes a child with the same
// provider; without one it returns the context unchanged and allocates
// nothing.
func TestStart(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("t").Start(context.Background(), "root")
	_, child := spans.Start(ctx, "child")
	spans.End(child, nil)
	root.End()
	got := rec.Ended()
	if len(got) != 2 || got[0].Name() != "child" || got[0].Parent().SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("spans: %v", got)
	}

	bg := context.Background()
	if spans.On(bg) {
		t.Fatal("On without a span")
	}
	allocs := testing.AllocsPerRun(100, func() {
		c, s := spans.Start(bg, "x")
		spans.End(s, nil)
		if c != bg {
			t.Fatal("context changed")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Start with tracing off", allocs)
	}
}
