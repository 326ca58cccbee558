package maint_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
)

// lakeEnv is a real Floe (maintenance off) with a lake over its embedded
// store and a maintenance Env over both.
type lakeEnv struct {
	f   *testkit.Floe
	lk  *lake.Lake
	env *maint.Env
	wh  string
}

func newLakeEnv(t *testing.T, opts ...testkit.Option) *lakeEnv {
	t.Helper()
	opts = append([]testkit.Option{func(c *app.Config) { c.Maintenance = false }}, opts...)
	f := testkit.Start(t, opts...)
	lk := lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})
	env := &maint.Env{Tables: f.App.Catalog(), Lake: lk,
		Policies: maint.Resolver{Namespaces: f.App.Catalog(), Base: maint.DefaultPolicy(maint.Retention{})}}
	return &lakeEnv{f: f, lk: lk, env: env, wh: f.Warehouse}
}

// eventSchema: id, at (partitioned by day), who.
func eventSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 3, Name: "who", Type: iceberg.PrimitiveTypes.String},
	)
}

// createTable creates ns.name partitioned by day(at) (unpartitioned when
// !partitioned) with props.
func (e *lakeEnv) createTable(t *testing.T, ns, name string, partitioned bool, props map[string]string) (catalog.Ident, *table.Table) {
	t.Helper()
	ctx := t.Context()
	nsp := catalog.Namespace{ns}
	if _, err := e.f.App.Catalog().NamespaceProperties(ctx, e.wh, nsp); err != nil {
		if err := e.f.App.Catalog().CreateNamespace(ctx, e.wh, nsp, nil); err != nil {
			t.Fatal(err)
		}
	}
	req := catalog.CreateTableRequest{Name: name, Schema: eventSchema(), Properties: props}
	if partitioned {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.DayTransform{}, Name: "at_day"})
		req.Spec = &spec
	}
	if _, err := e.f.App.Catalog().CreateTable(ctx, e.wh, nsp, req); err != nil {
		t.Fatal(err)
	}
	id := catalog.Ident{Namespace: nsp, Name: name}
	return id, e.load(t, id)
}

func (e *lakeEnv) load(t testing.TB, id catalog.Ident) *table.Table {
	t.Helper()
	tbl, err := e.lk.LoadTable(t.Context(), e.wh, id)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

var day0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rows builds ids [from, to) spread over three days.
func rows(t testing.TB, tbl *table.Table, from, to int64) arrow.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(day0.Add(time.Duration(i%3) * 24 * time.Hour).UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("user-%d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
}

// appendRows commits ids [from, to) as one snapshot.
func appendRows(t testing.TB, tbl *table.Table, from, to int64) *table.Table {
	t.Helper()
	data := rows(t, tbl, from, to)
	defer data.Release()
	out, err := lake.AppendTable(t.Context(), tbl, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// content is the table's current rows: sorted ids and a hash of every
// (id, at, who) row in id order.
type content struct {
	ids  []int64
	hash [32]byte
}

func readContent(t testing.TB, tbl *table.Table) content {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	type row struct {
		id  int64
		at  int64
		who string
	}
	var rs []row
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		idc := rec.Column(0).(*array.Int64)
		atc := rec.Column(1).(*array.Timestamp)
		whoc := rec.Column(2).(*array.String)
		for i := range int(rec.NumRows()) {
			rs = append(rs, row{idc.Value(i), int64(atc.Value(i)), whoc.Value(i)})
		}
	}
	slices.SortFunc(rs, func(a, b row) int { return int(a.id - b.id) })
	h := sha256.New()
	var c content
	for _, r := range rs {
		c.ids = append(c.ids, r.id)
		_ = binary.Write(h, binary.LittleEndian, r.id)
		_ = binary.Write(h, binary.LittleEndian, r.at)
		h.Write([]byte(r.who))
	}
	copy(c.hash[:], h.Sum(nil))
	return c
}

// dataFiles lists the current snapshot's data files and their spec ids.
func dataFiles(t testing.TB, tbl *table.Table) map[string]int32 {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, task := range tasks {
		out[task.File.FilePath()] = task.File.SpecID()
	}
	return out
}

// deleteFileCount counts the delete files of the current snapshot.
func deleteFileCount(t testing.TB, tbl *table.Table) int {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		for _, d := range slices.Concat(task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
			seen[d.FilePath()] = true
		}
	}
	return len(seen)
}

func seq(from, to int64) []int64 {
	out := make([]int64, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
