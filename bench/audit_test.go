package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
)

// BenchmarkLoadTableAuditExport is BenchmarkLoadTable with the export of
// the audit log to system.audit off and on (every second, ten times the
// default rate, with its incremental compaction after every export), in
// one process, so that the ratio of the two is the export's cost:
//
//	go test ./bench -run '^$' -bench LoadTableAuditExport -benchtime 100000x -count 3
//
// FLOE_BENCH_AUDIT_EXPORT_EVERY sets another export interval for "on"
// (e.g. 10s, the default of audit_export_interval; the run must then last
// several intervals: -benchtime 600000x).
//
// Besides loads/s, which a shared machine makes noise of, it reports what
// the process spent per load, which sharing the cores does not change
// much: cpu-ms/1k-loads (user and system CPU of the whole process, client
// included, per 1,000 loads) and alloc-B/load and allocs/load (the heap
// allocations of the whole process per load). They are taken over the
// loads and, with the export on, one more export of what the loads left
// behind, so that work the export defers past the last load is counted.
func BenchmarkLoadTableAuditExport(b *testing.B) {
	every := time.Second
	if v := os.Getenv("FLOE_BENCH_AUDIT_EXPORT_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("FLOE_BENCH_AUDIT_EXPORT_EVERY=%q: want a positive duration", v)
		}
		every = d
	}
	for _, tc := range []struct {
		name  string
		every time.Duration
	}{{"off", 0}, {"on", every}} {
		b.Run(tc.name, func(b *testing.B) {
			f := testkit.Start(b, storeOption(b), func(c *app.Config) { c.AuditExportInterval = tc.every })
			tok := f.Token(b)
			c := client(64)
			createTables(b, f, c, tok, "load", 8)
			before := takeCost()
			run(b, 32, func(w, i int) error {
				st, err := do(c, tok, "GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
				if err == nil && st != 200 {
					err = fmt.Errorf("status %d", st)
				}
				return err
			})
			if tc.every > 0 {
				head, _, err := f.App.Store().AuditHead(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				// Everything stored is exported, by the background
				// stream (which this ends) or by this call.
				res, err := f.App.ExportAudit(context.Background())
				if err != nil || res.LastSeq < head {
					b.Fatalf("last export: up to seq %d of %d (%v)", res.LastSeq, head, err)
				}
			}
			takeCost().sub(before).report(b)
		})
	}
}

// cost is what the process has spent so far: CPU and heap allocations.
type cost struct {
	cpu            time.Duration
	mallocs, bytes uint64
}

func takeCost() cost {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return cost{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
}

func (c cost) sub(o cost) cost {
	return cost{cpu: c.cpu - o.cpu, mallocs: c.mallocs - o.mallocs, bytes: c.bytes - o.bytes}
}

// report reports c per load of the benchmark's b.N.
func (c cost) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(c.cpu.Milliseconds())/n*1000, "cpu-ms/1k-loads")
	b.ReportMetric(float64(c.bytes)/n, "alloc-B/load")
	b.ReportMetric(float64(c.mallocs)/n, "allocs/load")
}
