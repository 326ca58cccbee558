package sqlstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
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

// BenchmarkAuditAppend measures the cost of one audit event stored the way
// the background writer stores loadTable events: in chained batches, with
// request ids as restcat makes them (time first) and a small detail
// object. ns/op is per event.
func BenchmarkAuditAppend(b *testing.B) {
	for _, batch := range []int{16, 128} {
		b.Run(fmt.Sprintf("sqlite/batch=%d", batch), func(b *testing.B) {
			s := openForTest(b, backends()[0].dsn(b), Options{})
			l := audit.New(s, audit.Options{})
			events := make([]audit.Event, batch)
			rnd := rand.New(rand.NewPCG(1, 2))
			fill := func(i int) {
				for j := range events {
					now := time.Now()
					events[j] = audit.Event{Time: now, RequestID: fmt.Sprintf("%010x%06x", now.UnixMilli(), rnd.Uint32()>>8),
						Principal: "reader", ClientAddr: "127.0.0.1:40000", Action: "catalog.loadTable",
						Resource: fmt.Sprintf("table:warehouse/load.t%d", (i+j)%8), Outcome: audit.OutcomeSuccess,
						Detail: map[string]any{"method": "GET", "status": 200, "duration_ms": 0, "token_id": "tok-1234567890"}}
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i += batch {
				b.StopTimer()
				fill(i)
				b.StartTimer()
				if err := l.AppendBatch(b.Context(), events[:min(batch, b.N-i)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBackup measures floe backup and floe restore of a store with
// 10,000 tables (plus 1,000 views, 2,000 namespaces and 30,000 audit
// records): ns/op is one whole backup (or restore), bytes the file's size.
func BenchmarkBackup(b *testing.B) {
	const tables, events = 10_000, 30_000
	for _, be := range backends() {
		ctx := b.Context()
		s := openForTest(b, be.dsn(b), Options{})
		if err := s.PutWarehouse(ctx, catalog.Warehouse{Name: "w", Location: "file:///w"}); err != nil {
			b.Fatal(err)
		}
		if err := s.CreateNamespace(ctx, "w", catalog.Namespace{"big"}, nil); err != nil {
			b.Fatal(err)
		}
		for _, q := range bulkSQL(s.d.name, tables) {
			if _, err := s.wdb.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		l := audit.New(s, audit.Options{})
		batch := make([]audit.Event, 1000)
		for i := 0; i < events; i += len(batch) {
			for j := range batch {
				batch[j] = audit.Event{RequestID: fmt.Sprintf("req-%08d", i+j), Principal: "etl", ClientAddr: "10.0.0.1:40000",
					Action: "catalog.updateTable", Resource: fmt.Sprintf("table:w/big.t%06d", (i+j)%tables), Outcome: audit.OutcomeSuccess,
					Detail: map[string]any{"method": "POST", "status": 200, "duration_ms": 3, "token_id": "tok-1234567890"}}
			}
			if err := l.AppendBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		var file bytes.Buffer
		b.Run(be.name+"/backup", func(b *testing.B) {
			for b.Loop() {
				file.Reset()
				if _, _, err := s.Backup(ctx, &file, BackupOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(file.Len()), "bytes")
		})
		b.Run(be.name+"/restore", func(b *testing.B) {
			dst := openForTest(b, be.dsn(b), Options{})
			for b.Loop() {
				if _, err := dst.Restore(ctx, bytes.NewReader(file.Bytes()), RestoreOptions{Force: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
