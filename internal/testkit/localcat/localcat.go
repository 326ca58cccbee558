// Package localcat starts, for benchmarks and tests that need no server, a
// catalog on a SQLite store and an embedded object store in a temporary
// directory, with the warehouse "floe" (at s3://floe) and the namespace
// "bench".
package localcat

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/floe-lake/floe/catalog"
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
