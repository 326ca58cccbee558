package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/internal/app"
)

// BenchmarkDeleteScan: an aggregate over all rows of a 100,000-row table
// (files read at every query, table cache off) with no deletes, with half
// of its rows deleted by position delete files (v2, merge-on-read), and by
// deletion vectors (v3, merge-on-read).
func BenchmarkDeleteScan(b *testing.B) {
	for _, v := range []struct {
		name    string
		version int
		del     bool
	}{{"none", 2, false}, {"position-deletes", 2, true}, {"deletion-vectors", 3, true}} {
		b.Run(v.name, func(b *testing.B) {
			e := newEnv(b, func(c *app.Config) { c.SQLTableCacheBytes = -1 })
			name := strings.ReplaceAll("scan_"+v.name, "-", "_")
			tbl := e.createPeopleTableV(b, "bench", name, false, v.version)
			txn := tbl.NewTransaction()
			if err := txn.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
				b.Fatal(err)
			}
			tbl, err := txn.Commit(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			tbl = appendPeople(b, tbl, people(100000)...)
			if v.del {
				txn := tbl.NewTransaction()
				if err := txn.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("region"), "us"), nil); err != nil {
					b.Fatal(err)
				}
				if _, err := txn.Commit(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			c := e.connect(b, "admin", e.f.Token(b))
			want := int64(100000)
			if v.del {
				want = 50000
			}
			b.ResetTimer()
			for b.Loop() {
				var n int64
				if err := c.QueryRow(context.Background(), "SELECT count(*) FROM bench."+name+" WHERE salary > 0").Scan(&n); err != nil {
					b.Fatal(err)
				}
				if n != want {
					b.Fatalf("%d rows, want %d", n, want)
				}
			}
		})
	}
}
