// Package localcat starts, for benchmarks and tests that need no server, a
// catalog on a SQLite store and an embedded object store in a temporary
// directory, with the warehouse "floe" (at s3://floe) and the namespace
// "bench".
package localcat

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

// Warehouse is the warehouse name; Namespace the namespace created in it.
var (
	Warehouse = "floe"
	Namespace = catalog.Namespace{"bench"}
)

// Local is a started catalog and its object store, closed when the test
// ends.
type Local struct {
	Catalog *catalog.Catalog
	Objects *bucket.Store
	Store   *sqlstore.Store
}

// New starts a Local in tb's temporary directory.
func New(tb testing.TB) *Local {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "floe.db"), sqlstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{Warehouse: filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { objs.Close() })
	if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: Warehouse, Location: "s3://" + Warehouse}); err != nil {
		tb.Fatal(err)
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	if err := cat.CreateNamespace(ctx, Warehouse, Namespace, nil); err != nil {
		tb.Fatal(err)
	}
	return &Local{Catalog: cat, Objects: objs, Store: st}
}

// RegionTable creates table name in Namespace, of an id and a region
// partitioned by region (identity, 10 values r0..r9), and appends
// manifests commits of files data files each (metadata only: the files do
// not exist), for benchmarks of planning over many files. It returns the
// table after the last append and the file system its metadata is read
// through.
func (l *Local) RegionTable(tb testing.TB, name string, manifests, files int) (*table.Table, *lake.BucketFS) {
	tb.Helper()
	ctx := context.Background()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	if _, err := l.Catalog.CreateTable(ctx, Warehouse, Namespace, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: &spec}); err != nil {
		tb.Fatal(err)
	}
	fsys := lake.NewBucketFS(l.Objects)
	tbl, err := lake.New(l.Catalog, fsys, lake.Options{}).LoadTable(ctx, Warehouse, catalog.Ident{Namespace: Namespace, Name: name})
	if err != nil {
		tb.Fatal(err)
	}
	for m := range manifests {
		dfs := make([]iceberg.DataFile, files)
		for i := range dfs {
			bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
				fmt.Sprintf("%s/data/region=r%d/f-%d-%d.parquet", tbl.Location(), i%10, m, i), iceberg.ParquetFile,
				map[int]any{1000: fmt.Sprintf("r%d", i%10)}, nil, nil, 10, 1000)
			if err != nil {
				tb.Fatal(err)
			}
			dfs[i] = bld.Build()
		}
		if tbl, err = lake.AppendFiles(ctx, tbl, dfs, nil); err != nil {
			tb.Fatal(err)
		}
	}
	return tbl, fsys
}
