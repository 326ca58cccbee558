package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/localcat"
	"github.com/floe-lake/floe/lake"
)

// timedTables times the catalog's CommitTable calls of a lake.
type timedTables struct {
	*catalog.Catalog
	spent time.Duration
}

func (t *timedTables) CommitTable(ctx context.Context, wh string, tc catalog.TableCommit) (*catalog.TableState, error) {
	start := time.Now()
	st, err := t.Catalog.CommitTable(ctx, wh, tc)
	t.spent += time.Since(start)
	return st, err
}

// BenchmarkCommitAppend appends one data file per iteration to a table
// (iceberg-go writes the manifest and manifest list, the catalog commits)
// and reports the time spent in the catalog's CommitTable as commit-ns/op:
// the latency the file-confinement check adds to (reading the new
// manifest list, the parent's and the new manifest) is part of it.
func BenchmarkCommitAppend(b *testing.B) {
	ctx := context.Background()
	lc := localcat.New(b)
	cat, objs, ns := lc.Catalog, lc.Objects, localcat.Namespace
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(ctx, "floe", ns, catalog.CreateTableRequest{Name: "t", Schema: sc}); err != nil {
		b.Fatal(err)
	}
	tt := &timedTables{Catalog: cat}
	lk := lake.New(tt, lake.NewBucketFS(objs), lake.Options{})
	id := catalog.Ident{Namespace: ns, Name: "t"}
	tbl, err := lk.LoadTable(ctx, "floe", id)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/f-%d.parquet", tbl.Location(), i), iceberg.ParquetFile, nil, nil, nil, 1, 100)
		if err != nil {
			b.Fatal(err)
		}
		if tbl, err = lake.AppendFiles(ctx, tbl, []iceberg.DataFile{bld.Build()}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tt.spent.Nanoseconds())/float64(b.N), "commit-ns/op")
}
