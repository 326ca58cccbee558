package sqlstore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

// BenchmarkSwapPointers measures commits per second: each parallel worker
// swaps the pointer of its own table (uncontended), or all workers race on
// one table (contended; conflicts count as operations).
func BenchmarkSwapPointers(b *testing.B) {
	for _, be := range backends() {
		for _, contended := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/contended=%v", be.name, contended), func(b *testing.B) {
				ctx := b.Context()
				s := openForTest(b, be.dsn(b), Options{})
				if err := s.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///w"}); err != nil {
					b.Fatal(err)
				}
				if err := s.CreateNamespace(ctx, "w", catalog.Namespace{"db"}, nil); err != nil {
					b.Fatal(err)
				}
				var workers, conflicts atomic.Int64
				b.SetParallelism(8) // 8 × GOMAXPROCS goroutines
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					w := workers.Add(1)
					id := catalog.Ident{Namespace: catalog.Namespace{"db"}, Name: fmt.Sprint("t", w)}
					if contended {
						id.Name = "shared"
					}
					_ = s.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id, Kind: catalog.KindTable, New: "0"}})
					for i := 0; pb.Next(); i++ {
						ent, err := s.Entity(ctx, "w", id)
						if err != nil {
							b.Error(err)
							return
						}
						err = s.SwapPointers(ctx, []catalog.Swap{{Warehouse: "w", Ident: id, Kind: catalog.KindTable,
							Old: ent.MetadataLocation, New: fmt.Sprint(w, "-", i)}})
						switch {
						case err == nil:
						case floe.KindOf(err) == floe.Conflict:
							conflicts.Add(1)
						default:
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
			})
		}
	}
}
