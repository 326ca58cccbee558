package bench

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/products"
	// s3:// table locations: the rows go through Floe's S3 endpoint with vended credentials.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// productRows is the size of the table BenchmarkProductCheck checks.
const productRows = 1_000_000

// BenchmarkProductCheck: one check of a data product with 5 expectations
// (freshness, row count, not-null, unique, accepted values) over a table
// of 1,000,000 rows written by iceberg-go (issue 20: ≤ 2 s).
func BenchmarkProductCheck(b *testing.B) {
	f := testkit.Start(b, storeOption(b))
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "floe", f.URL, rest.WithOAuthToken(f.Token(b)), rest.WithWarehouseLocation(f.Warehouse))
	if err != nil {
		b.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		b.Fatal(err)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer_id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", "orders"}, sc)
	if err != nil {
		b.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	statuses := []string{"open", "paid", "shipped", "cancelled"}
	for i := range productRows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Int64Builder).Append(int64(i % 50_000))
		bld.Field(2).(*array.StringBuilder).Append(statuses[i%len(statuses)])
		bld.Field(3).(*array.Float64Builder).Append(float64(i%997) + 0.5)
	}
	rec := bld.NewRecordBatch()
	data := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	if _, err := tbl.AppendTable(ctx, data, productRows, nil); err != nil {
		b.Fatal(err)
	}
	data.Release()
	rec.Release()

	one := int64(1)
	p := products.Product{Warehouse: f.Warehouse, Name: "orders", Owner: "admin",
		Outputs: []products.Port{{Namespace: catalog.Namespace{"bench"}, Table: "orders"}},
		Expectations: []products.Expectation{
			{Kind: products.Freshness, Port: "orders", MaxAge: products.Duration(time.Hour)},
			{Kind: products.RowCount, Port: "orders", Min: &one},
			{Kind: products.NotNull, Port: "orders", Column: "customer_id"},
			{Kind: products.Unique, Port: "orders", Column: "id"},
			{Kind: products.AcceptedValues, Port: "orders", Column: "status", Values: statuses},
		}}
	admin := products.Actor{Subject: authz.Subject{Principal: "admin", Admin: true}}
	if _, err := f.App.Products().Publish(ctx, admin, p, 0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		run, err := f.App.Products().Check(ctx, admin, f.Warehouse, "orders")
		if err != nil {
			b.Fatal(err)
		}
		if run.Status != products.StatusPass {
			b.Fatalf("%+v", run)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/check")
}
