package bench

import (
	"math"
	"os"
	"testing"

	"github.com/floe-lake/floe/internal/app"
)

// TestMain runs the benchmarks with the collector `floe serve` runs with
// by default (gc_percent auto: app.StartGCTuner) when FLOE_BENCH_GC=auto, so
// that figures "as served" can be compared with a build that hard-coded a
// GOGC; otherwise with the test binary's own (GOGC, default 100).
func TestMain(m *testing.M) {
	if os.Getenv("FLOE_BENCH_GC") == "auto" {
		stop := app.StartGCTuner(app.DefaultGCHeadroom, math.MaxInt64)
		code := m.Run()
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
