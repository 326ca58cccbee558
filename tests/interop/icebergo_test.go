package interop

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	// s3:// table locations: files go through Floe's S3 endpoint with vended credentials.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"

	"github.com/floe-lake/floe/internal/testkit"
)

func restCatalog(t *testing.T, f *testkit.Floe, opts ...rest.Option) *rest.Catalog {
	t.Helper()
	base := []rest.Option{rest.WithCredential(f.Cred.String()), rest.WithCustomTransport(f.ClientTransport)}
	c, err := rest.NewCatalog(context.Background(), "floe", f.URL, append(base, opts...)...)
	if err != nil {
		t.Fatalf("iceberg-go REST client: %v", err)
	}
	return c
}

// TestIcebergGoConformance runs iceberg-go's own catalog conformance suite
// against Floe through its REST client.
func TestIcebergGoConformance(t *testing.T) {
	f := testkit.Start(t)
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		NewCatalog:                  func(t *testing.T) icecat.Catalog { return restCatalog(t, f) },
		SupportsNamespaceProperties: true,
	})
	if f.ClientTransport.Checked() == 0 {
		t.Fatal("no exchange was validated against the spec")
	}
}

var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

func batch(t *testing.T, sc *arrow.Schema, from, n int, withExtra bool) arrow.Table {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"a", "b", "c"}[i%3])
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Hour).UnixMicro()))
		if withExtra {
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("x%d", i))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

func ids(t *testing.T, tbl *table.Table, opts ...table.ScanOption) []int64 {
	t.Helper()
	at, err := tbl.Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	var out []int64
	col := at.Column(at.Schema().FieldIndices("id")[0])
	for _, ch := range col.Data().Chunks() {
		out = append(out, ch.(*array.Int64).Int64Values()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func seq(from, to int) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, int64(i))
	}
	return s
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIcebergGoLifecycle is the interop scenario through iceberg-go:
// namespaces, a partitioned table, two appends, schema evolution, read back,
// time travel, rename and drop.
func TestIcebergGoLifecycle(t *testing.T) {
	ctx := context.Background()
	f := testkit.Start(t)
	cat := restCatalog(t, f)

	for _, ns := range []table.Identifier{{"sales"}, {"sales", "emea"}} {
		if err := cat.CreateNamespace(ctx, ns, iceberg.Properties{"owner": "interop"}); err != nil {
			t.Fatalf("create namespace %v: %v", ns, err)
		}
	}
	children, err := cat.ListNamespaces(ctx, table.Identifier{"sales"})
	if err != nil || len(children) != 1 || len(children[0]) != 2 || children[0][1] != "emea" {
		t.Fatalf("children of sales: %v, %v", children, err)
	}

	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: false},
		iceberg.NestedField{ID: 2, Name: "category", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "category"},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Transform: iceberg.DayTransform{}, Name: "ts_day"},
	)
	id := table.Identifier{"sales", "emea", "orders"}
	tbl, err := cat.CreateTable(ctx, id, sc, icecat.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatalf("create table: %v", err)
	}

	first := batch(t, arrowSchema, 0, 100, false)
	defer first.Release()
	if tbl, err = tbl.AppendTable(ctx, first, 1000, nil); err != nil {
		t.Fatalf("append 1: %v", err)
	}
	firstSnap := tbl.CurrentSnapshot().SnapshotID
	second := batch(t, arrowSchema, 100, 50, false)
	defer second.Release()
	if tbl, err = tbl.AppendTable(ctx, second, 1000, nil); err != nil {
		t.Fatalf("append 2: %v", err)
	}

	// evolve the schema: add a column, then write rows that use it
	txn := tbl.NewTransaction()
	if err := txn.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "free text", false, nil).Commit(); err != nil {
		t.Fatalf("update schema: %v", err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatalf("commit schema: %v", err)
	}
	if tbl.Schema().NumFields() != 4 {
		t.Fatalf("schema after evolution: %v", tbl.Schema())
	}
	wider := arrow.NewSchema(append(arrowSchema.Fields(), arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	third := batch(t, wider, 150, 10, true)
	defer third.Release()
	if _, err = tbl.AppendTable(ctx, third, 1000, nil); err != nil {
		t.Fatalf("append 3: %v", err)
	}

	// read back through a fresh load
	loaded, err := cat.LoadTable(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, loaded); !equal(got, seq(0, 160)) {
		t.Fatalf("read back %d rows, want 160", len(got))
	}
	if got := ids(t, loaded, table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("category"), "b"))); len(got) != 53 {
		t.Errorf("filtered scan: %d rows, want 53", len(got))
	}
	// time travel to the first snapshot
	if got := ids(t, loaded, table.WithSnapshotID(firstSnap)); !equal(got, seq(0, 100)) {
		t.Fatalf("time travel: %d rows, want the first 100", len(got))
	}
	if n := len(loaded.Metadata().Snapshots()); n != 3 {
		t.Errorf("%d snapshots, want 3 (one per append; the schema change adds none)", n)
	}

	// rename and drop
	newID := table.Identifier{"sales", "renamed"}
	if _, err := cat.RenameTable(ctx, id, newID); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if _, err := cat.LoadTable(ctx, id); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("old name after rename: %v", err)
	}
	renamed, err := cat.LoadTable(ctx, newID)
	if err != nil || !equal(ids(t, renamed), seq(0, 160)) {
		t.Fatalf("renamed table: %v", err)
	}
	if err := cat.DropTable(ctx, newID); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if ok, err := cat.CheckTableExists(ctx, newID); err != nil || ok {
		t.Fatalf("exists after drop: %v %v", ok, err)
	}
	if err := cat.DropNamespace(ctx, table.Identifier{"sales", "emea"}); err != nil {
		t.Fatalf("drop namespace: %v", err)
	}
	if f.ClientTransport.Checked() < 10 {
		t.Errorf("only %d exchanges validated", f.ClientTransport.Checked())
	}
}
