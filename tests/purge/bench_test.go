package purge_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
)

// BenchmarkDropPurge measures a drop with purge of a Floe-assigned table
// of 3 snapshots of 20 partitions (about 70 files), until its directory
// is empty. It uses only APIs the build before issue 16 has, so that the
// same file benchmarks both builds (docs/benchmarks.md).
func BenchmarkDropPurge(b *testing.B) {
	cfg := app.Defaults()
	cfg.DataDir = b.TempDir()
	cfg.Listen, cfg.S3Listen, cfg.SQLListen, cfg.AdminListen = "127.0.0.1:0", "off", "off", "off"
	cfg.Maintenance, cfg.AuditExportInterval = false, 0
	cfg.BootstrapCredential = "bench:bench-secret"
	a, err := app.Open(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Start(); err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := catalog.WithClaimant(context.Background(), catalog.Claimant{Principal: "admin", Admin: true, CanRead: true})
	lk := lake.New(a.Catalog(), lake.NewBucketFS(a.Objects()), lake.Options{})
	ns := catalog.Namespace{"bench"}
	if err := a.Catalog().CreateNamespace(ctx, "floe", ns, nil); err != nil {
		b.Fatal(err)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "who", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "who"})
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("t%d", i)
		st, err := a.Catalog().CreateTable(ctx, "floe", ns, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: &spec})
		if err != nil {
			b.Fatal(err)
		}
		id := catalog.Ident{Namespace: ns, Name: name}
		for s := range 3 {
			tbl, err := lk.LoadTable(ctx, "floe", id)
			if err != nil {
				b.Fatal(err)
			}
			data := benchRows(b, tbl, int64(s*100), 100)
			if _, err := lake.AppendTable(ctx, tbl, data, nil); err != nil {
				b.Fatal(err)
			}
			data.Release()
		}
		dir := filepath.Join(a.Config().WarehouseDir, filepath.FromSlash(strings.TrimPrefix(st.Metadata.Location(), "s3://floe/")))
		b.StartTimer()
		if err := a.Catalog().DropTable(ctx, "floe", id, true); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(dir); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s not purged", dir)
			}
		}
	}
}

func benchRows(b *testing.B, tbl *table.Table, from, n int64) arrow.Table {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	for i := from; i < from+n; i++ {
		bld.Field(0).(*array.Int64Builder).Append(i)
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("g%d", i%20))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}
