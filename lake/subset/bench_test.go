package subset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/localcat"
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
	cat := lc.Catalog
	id := catalog.Ident{Namespace: localcat.Namespace, Name: "t"}
	_, fsys := lc.RegionTable(b, "t", 100, 100)
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
