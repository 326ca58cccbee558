package ingest_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/ingest"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

const wh = "floe"

var ns = catalog.Namespace{"in"}

// env is a catalog over a fresh SQLite store and embedded object store,
// with an ingest service.
type env struct {
	cat  *catalog.Catalog
	objs *bucket.Store
	lk   *lake.Lake
	svc  *ingest.Service
	dir  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "floe.db"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{wh: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: "s3://" + wh}); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	if err := cat.CreateNamespace(ctx, wh, ns, nil); err != nil {
		t.Fatal(err)
	}
	lk := lake.New(cat, lake.NewBucketFS(objs), lake.Options{})
	return &env{cat: cat, objs: objs, lk: lk, svc: ingest.New(cat, lk, ingest.Options{TempDir: t.TempDir()}), dir: dir}
}

func ident(name string) catalog.Ident { return catalog.Ident{Namespace: ns, Name: name} }

// load returns the table's current state, failing the test on error.
func (e *env) load(t *testing.T, name string) *table.Table {
	t.Helper()
	tbl, err := e.lk.LoadTable(t.Context(), wh, ident(name))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// exists says whether the table exists.
func (e *env) exists(t *testing.T, name string) bool {
	t.Helper()
	ok, err := e.cat.Exists(t.Context(), wh, ident(name), catalog.KindTable)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// rowsOf scans the table into rows of strings (column values formatted by
// Arrow's ValueStr), sorted, for comparisons.
func rowsOf(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rdr := array.NewTableReader(at, 0)
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := ""
			for c := range int(rec.NumCols()) {
				if c > 0 {
					row += "|"
				}
				row += valueStr(rec.Column(c), i)
			}
			out = append(out, row)
		}
	}
	slices.Sort(out)
	return out
}

func valueStr(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	return a.ValueStr(i)
}
