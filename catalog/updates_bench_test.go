package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/objstore/bucket"
	"github.com/floe-lake/floe/store/sqlstore"
)

// BenchmarkCreateCommit commits one assert-create per iteration, with the
// updates in the order PyIceberg and Java send them (set-current-schema
// right after add-schema), which Floe accepted before issue 16 too: the
// figure to compare before and after the reference-order layer.
func BenchmarkCreateCommit(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "floe.db"), sqlstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	objs, err := bucket.New(bucket.Options{Buckets: map[string]string{"floe": filepath.Join(dir, "wh")}, TempDir: filepath.Join(dir, "staging")})
	if err != nil {
		b.Fatal(err)
	}
	defer objs.Close()
	if err := st.PutWarehouse(ctx, catalog.Warehouse{Name: "floe", Location: "s3://floe"}); err != nil {
		b.Fatal(err)
	}
	cat := catalog.New(st, objs.FileIO(), catalog.Options{})
	ns := catalog.Namespace{"bench"}
	if err := cat.CreateNamespace(ctx, "floe", ns, nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		var updates table.Updates
		if err := json.Unmarshal(fmt.Appendf(nil, `[{"action":"upgrade-format-version","format-version":2},
			{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"name","required":false,"type":"string"}]}},
			{"action":"set-current-schema","schema-id":-1},
			{"action":"add-spec","spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"name","transform":"identity"}]}},{"action":"set-default-spec","spec-id":-1},
			{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
			{"action":"set-location","location":"s3://floe/bench/t%d"}]`, i), &updates); err != nil {
			b.Fatal(err)
		}
		tc := catalog.TableCommit{Ident: catalog.Ident{Namespace: ns, Name: fmt.Sprintf("t%d", i)},
			Requirements: table.Requirements{table.AssertCreate()}, Updates: updates}
		if _, err := cat.CommitTable(ctx, "floe", tc); err != nil {
			b.Fatal(err)
		}
	}
}
