package restcat_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/localcat"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/restcat"
)

// BenchmarkPlanTableScan plans a scan of a table of 10,000 data files in
// 100 manifests (100 appends of 100 files, partitioned by region over 10
// values), through the REST handler, with the default page size (1,000
// tasks: the first page and nine plan tasks). "warm" repeats one request,
// answered from the plan cache; "replan" changes the filter's literal each
// time (a filter every file passes), so each iteration reads the manifest
// list and the 100 manifests (from the operating system's page cache) and
// encodes the plan again; "client-side-iceberg-go" is iceberg-go planning
// the same scan locally, for comparison. Each reports its median (p50-ms).
func BenchmarkPlanTableScan(b *testing.B) {
	ctx := context.Background()
	lc := localcat.New(b)
	cat, ns := lc.Catalog, localcat.Namespace
	_, fsys := lc.RegionTable(b, "t", 100, 100)
	lk := lake.New(cat, fsys, lake.Options{})
	h := restcat.New(cat, restcat.Options{DefaultWarehouse: localcat.Warehouse, Planning: &restcat.Planning{FS: fsys}})
	path := "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t/plan"
	plan := func(body string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"plan-tasks":[`) {
			b.Fatalf("plan: %d %.300s", w.Code, w.Body.String())
		}
	}
	for _, c := range []struct {
		name string
		body func(i int) string
	}{
		{"warm", func(int) string { return `{}` }},
		{"replan", func(i int) string {
			return fmt.Sprintf(`{"filter":{"type":"not-eq","term":"region","value":"x%d"}}`, i)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			plan(c.body(-1)) // the first plan (and the OS cache) warms up
			var durs []time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				plan(c.body(i))
				durs = append(durs, time.Since(start))
				i++
			}
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
		})
	}
	// What a client planning locally with iceberg-go does for the same
	// scan (reading the same manifests, no encoding), for the ratio.
	b.Run("client-side-iceberg-go", func(b *testing.B) {
		var durs []time.Duration
		for b.Loop() {
			start := time.Now()
			t, err := lk.LoadTable(ctx, localcat.Warehouse, catalog.Ident{Namespace: ns, Name: "t"})
			if err != nil {
				b.Fatal(err)
			}
			tasks, err := t.Scan().PlanFiles(ctx)
			if err != nil || len(lake.WholeFiles(tasks)) != 10_000 {
				b.Fatalf("%d tasks, %v", len(tasks), err)
			}
			durs = append(durs, time.Since(start))
		}
		slices.Sort(durs)
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	})
}
