package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/localcat"
)

// BenchmarkCreateCommit commits one assert-create per iteration, with the
// updates in the order PyIceberg and Java send them (set-current-schema
// right after add-schema), which Floe accepted before issue 16 too: the
// figure to compare before and after the reference-order layer.
func BenchmarkCreateCommit(b *testing.B) {
	ctx := context.Background()
	lc := localcat.New(b)
	cat, ns := lc.Catalog, localcat.Namespace
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
