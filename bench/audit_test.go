package bench

import (
	"fmt"
	"os"
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
			run(b, 32, func(w, i int) error {
				st, err := do(c, tok, "GET", fmt.Sprintf("%s%s", f.URL, f.P(fmt.Sprintf("/namespaces/load/tables/t%d", i%8))), "")
				if err == nil && st != 200 {
					err = fmt.Errorf("status %d", st)
				}
				return err
			})
		})
	}
}
