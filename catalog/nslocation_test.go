package catalog_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

// TestNamespaceLocationIsWhereTablesGo: the location a namespace answers
// when none was set is the directory in which Floe places its tables, for
// nested namespaces, names that need escaping and a warehouse location with
// a trailing slash; a location that was set is answered as it is.
func TestNamespaceLocationIsWhereTablesGo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		warehouse string // the warehouse's location
		ns        catalog.Namespace
		props     map[string]string
		want      string
	}{
		{name: "top level", warehouse: "s3://floe", ns: catalog.Namespace{"crm"}, want: "s3://floe/crm"},
		{name: "nested", warehouse: "s3://floe", ns: catalog.Namespace{"crm", "emea", "de"}, want: "s3://floe/crm/emea/de"},
		{name: "unusual names", warehouse: "s3://floe", ns: catalog.Namespace{"sales ops", "zürich"}, want: "s3://floe/sales ops/zürich"},
		{name: "trailing slash", warehouse: "s3://floe/prefix/", ns: catalog.Namespace{"crm"}, want: "s3://floe/prefix/crm"},
		{name: "set by the client", warehouse: "s3://floe", ns: catalog.Namespace{"ext"},
			props: map[string]string{"location": "s3://floe/elsewhere", "owner": "ana"}, want: "s3://floe/elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: wh, Location: tc.warehouse}); err != nil {
				t.Fatal(err)
			}
			cat := catalog.New(st, objs.FileIO(), catalog.Options{})
			for i := 1; i <= len(tc.ns); i++ {
				var props map[string]string
				if i == len(tc.ns) {
					props = tc.props
				}
				if err := cat.CreateNamespace(ctx, wh, tc.ns[:i], props); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cat.LoadNamespace(ctx, wh, tc.ns)
			if err != nil {
				t.Fatal(err)
			}
			if got["location"] != tc.want {
				t.Fatalf("location %q, want %q (properties %v)", got["location"], tc.want, got)
			}
			for k, v := range tc.props {
				if got[k] != v {
					t.Errorf("property %s = %q, want %q", k, got[k], v)
				}
			}
			if tc.props != nil {
				return // tables of a namespace with a chosen location still go where Floe puts them
			}
			sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
			ts, err := cat.CreateTable(ctx, wh, tc.ns, catalog.CreateTableRequest{Name: "t", Schema: sc})
			if err != nil {
				t.Fatal(err)
			}
			if loc := ts.Metadata.Location(); !strings.HasPrefix(loc, tc.want+"/t-") {
				t.Errorf("table placed at %s, outside the namespace location %s", loc, tc.want)
			}
		})
	}
}
