package bench

import (
	"fmt"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkLoadTableTracing is BenchmarkLoadTable with tracing on: every
// request sampled, its spans batched (the SDK's batch processor, as with
// an OTLP endpoint) to an exporter that drops them, so it measures making
// and batching spans without a network. Compare it with BenchmarkLoadTable
// of the same binary, run alternately.
func BenchmarkLoadTableTracing(b *testing.B) {
	f := testkit.Start(b, storeOption(b), func(c *app.Config) {
		c.SpanProcessor = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
	})
	if !f.App.Tracing() {
		b.Fatal("tracing off")
	}
	tok := f.Token(b)
	c := client(64)
	createTables(b, f, c, tok, "load", 8)
	run(b, 32, func(w, i int) error {
		st, err := do(c, tok, "GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
}
