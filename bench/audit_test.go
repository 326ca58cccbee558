package bench

import (
	"fmt"
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
func BenchmarkLoadTableAuditExport(b *testing.B) {
	for _, tc := range []struct {
		name  string
		every time.Duration
	}{{"off", 0}, {"on", time.Second}} {
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
