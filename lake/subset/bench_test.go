package subset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/localcat"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/lake/subset"
)

// BenchmarkBuild derives the view of a table of 10,000 data files in 100
// manifests (100 appends of 100 files, partitioned by a region identity
// field over 10 values): all live files (a table shared without history)
// and one region of ten (a partition filter). This is the first recipient
// load of a new table version; later loads reuse the view. Each iteration
// writes a fresh view (the metadata location changes), so the figure is the
// full cost: reading the 100 manifests, writing the view's manifests and
// list.
func BenchmarkBuild(b *testing.B) {
	ctx := context.Background()
	lc := localcat.New(b)
	cat, objs, ns := lc.Catalog, lc.Objects, localcat.Namespace
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	if _, err := cat.CreateTable(ctx, "floe", ns, catalog.CreateTableRequest{Name: "t", Schema: sc, Spec: &spec}); err != nil {
		b.Fatal(err)
	}
	fsys := lake.NewBucketFS(objs)
	lk := lake.New(cat, fsys, lake.Options{})
	id := catalog.Ident{Namespace: ns, Name: "t"}
	tbl, err := lk.LoadTable(ctx, "floe", id)
	if err != nil {
		b.Fatal(err)
	}
	for m := range 100 {
		files := make([]iceberg.DataFile, 100)
		for i := range files {
			bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
				fmt.Sprintf("%s/data/region=r%d/f-%d-%d.parquet", tbl.Location(), i%10, m, i), iceberg.ParquetFile,
				map[int]any{1000: fmt.Sprintf("r%d", i%10)}, nil, nil, 10, 1000)
			if err != nil {
				b.Fatal(err)
			}
			files[i] = bld.Build()
		}
		if tbl, err = lake.AppendFiles(ctx, tbl, files, nil); err != nil {
			b.Fatal(err)
		}
	}
	state, err := cat.LoadTable(ctx, "floe", id)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		keep subset.Keep
		want int64
	}{
		{"all-10000", nil, 10_000},
		{"one-region-of-10", func(df iceberg.DataFile) (bool, error) { return df.Partition()[1000] == "r3", nil }, 1_000},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				n := time.Now().UnixNano() // a fresh view each time
				v, err := subset.Build(ctx, fsys, subset.Request{Metadata: state.Metadata,
					MetadataLocation: fmt.Sprintf("%s-%s-%d", state.Location, c.name, n), Trimmed: state.JSON,
					Filter: fmt.Sprintf("%s-%d", c.name, n), Keep: c.keep, Filtered: c.keep != nil})
				if err != nil {
					b.Fatal(err)
				}
				if v.Files != c.want {
					b.Fatalf("view of %d files, want %d", v.Files, c.want)
				}
			}
		})
	}
}
