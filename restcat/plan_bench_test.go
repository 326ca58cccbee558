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
	// A policy-filtered plan (a caller whose row filter is region = 'r3')
	// against the same plan for a whole-table reader, and against a
	// whole-table reader asking for region = 'r3' itself, each computed
	// anew (no plan cache): the cost of deciding the filter on each of the
	// 10,000 files, and the saving of encoding 1,000 of them. The three run
	// in turn within each iteration (rotating which goes first), so that a
	// shared machine's changing load falls on all three alike; the ratios
	// are the medians of each iteration's own ratios.
	b.Run("replan-policy-vs-unfiltered", func(b *testing.B) {
		id := catalog.Ident{Namespace: ns, Name: "t"}
		cases := []struct {
			body, rowFilter string
			listed          int
		}{
			{`{}`, "", 10_000},
			{`{"filter":{"type":"eq","term":"region","value":"r3"}}`, "", 1_000},
			{`{}`, "region = 'r3'", 1_000},
		}
		durs := make([][]time.Duration, len(cases))
		var policyRatio, clientRatio []float64
		i := 0
		for b.Loop() {
			var d [3]time.Duration
			for k := range cases {
				c := (i + k) % len(cases)
				start := time.Now()
				listed, _, err := restcat.PlanAsFiltered(ctx, h, localcat.Warehouse, id, cases[c].body, cases[c].rowFilter)
				if err != nil || listed != cases[c].listed {
					b.Fatalf("listed %d, want %d: %v", listed, cases[c].listed, err)
				}
				d[c] = time.Since(start)
				durs[c] = append(durs[c], d[c])
			}
			policyRatio = append(policyRatio, float64(d[2])/float64(d[0]))
			clientRatio = append(clientRatio, float64(d[2])/float64(d[1]))
			i++
		}
		for k, name := range []string{"unfiltered", "client-filtered", "policy-filtered"} {
			slices.Sort(durs[k])
			b.ReportMetric(float64(durs[k][len(durs[k])/2].Microseconds())/1000, name+"-p50-ms")
		}
		slices.Sort(policyRatio)
		slices.Sort(clientRatio)
		b.ReportMetric(policyRatio[len(policyRatio)/2], "policy/unfiltered")
		b.ReportMetric(clientRatio[len(clientRatio)/2], "policy/client-filtered")
	})
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
