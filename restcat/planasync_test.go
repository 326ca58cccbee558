package restcat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
)

// bigTable creates table ns.name (id, region; partitioned by region over
// ten values) with appends commits of files data files each, writing only
// metadata: the data files need not exist to be planned.
func bigTable(t *testing.T, f *testkit.Floe, ns, name string, appends, files int) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := f.App.Catalog()
	if err := cat.CreateNamespace(ctx, f.Warehouse, catalog.Namespace{ns}, nil); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	if _, err := cat.CreateTable(ctx, f.Warehouse, catalog.Namespace{ns}, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: &spec}); err != nil {
		t.Fatal(err)
	}
	lk := lake.New(cat, lake.NewBucketFS(f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(ctx, f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	for a := range appends {
		dfs := make([]iceberg.DataFile, files)
		for i := range dfs {
			b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
				fmt.Sprintf("%s/data/region=r%d/f-%d-%d.parquet", tbl.Location(), i%10, a, i), iceberg.ParquetFile,
				map[int]any{1000: fmt.Sprintf("r%d", i%10)}, nil, nil, 10, 1000)
			if err != nil {
				t.Fatal(err)
			}
			dfs[i] = b.Build()
		}
		if tbl, err = lake.AppendFiles(ctx, tbl, dfs, nil); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

// pollPlan fetches a submitted plan until it is no longer submitted.
func pollPlan(t *testing.T, f *testkit.Floe, tok, path, planID string) planResponse {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := f.DoAs(t, tok, "GET", f.P(path+"/plan/"+planID), nil)
		mustStatus(t, r, 200)
		var pr planResponse
		r.JSON(t, &pr)
		if pr.Status != "submitted" {
			return pr
		}
		if len(pr.Tasks) > 0 || len(pr.PlanTasks) > 0 {
			t.Fatalf("a submitted plan carries tasks: %.300s", r.Body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("plan %s still submitted after two minutes", planID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAsyncPlan50000Files plans a table of 50,000 data files (ten
// manifests): above the default threshold, planTableScan answers
// "submitted"; fetchPlanningResult answers "submitted" until the plan is
// done, then "completed" with the first page and a plan task for each
// further page; the pages hold every file exactly once. iceberg-go's REST
// client, planning on the server, follows the same exchange and gets the
// files local planning gets. Every exchange is checked against the spec.
func TestAsyncPlan50000Files(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 50,000-file table")
	}
	f := testkit.Start(t)
	ctx := context.Background()
	tbl := bigTable(t, f, "big", "events", 10, 5000)
	tok := f.Token(t)
	path := "/namespaces/big/tables/events"

	plan := func(body string) (string, map[string]int) {
		r := f.DoAs(t, tok, "POST", f.P(path+"/plan"), body)
		mustStatus(t, r, 200)
		var sub planResponse
		r.JSON(t, &sub)
		if sub.Status != "submitted" || sub.PlanID == "" || len(sub.Tasks) != 0 {
			t.Fatalf("a 50,000-file plan: %.300s", r.Body)
		}
		done := pollPlan(t, f, tok, path, sub.PlanID)
		if done.Status != "completed" || done.PlanID != sub.PlanID {
			t.Fatalf("plan ended %s", done.Status)
		}
		seen := map[string]int{}
		for _, tk := range done.Tasks {
			seen[tk.DataFile.FilePath]++
		}
		for _, pt := range done.PlanTasks {
			r := f.DoAs(t, tok, "POST", f.P(path+"/tasks"), map[string]string{"plan-task": pt})
			mustStatus(t, r, 200)
			var page planResponse
			r.JSON(t, &page)
			if len(page.PlanTasks) != 0 || len(page.Tasks) > 1000 {
				t.Fatalf("page of %d tasks and %d plan tasks", len(page.Tasks), len(page.PlanTasks))
			}
			for _, tk := range page.Tasks {
				seen[tk.DataFile.FilePath]++
			}
		}
		if len(done.PlanTasks) == 0 {
			t.Fatal("no plan tasks")
		}
		return sub.PlanID, seen
	}
	_, seen := plan(`{}`)
	if len(seen) != 50_000 {
		t.Fatalf("%d distinct files, want 50000", len(seen))
	}
	for p, n := range seen {
		if n != 1 {
			t.Fatalf("%s listed %d times", p, n)
		}
	}
	// A filter: one region's 5,000 files, still planned in the background.
	id, seen := plan(`{"filter":{"type":"eq","term":"region","value":"r3"}}`)
	if len(seen) != 5000 {
		t.Fatalf("region r3: %d files", len(seen))
	}
	for p := range seen {
		if !strings.Contains(p, "/region=r3/") {
			t.Fatalf("region r3 planned %s", p)
		}
	}
	// Cancelled after completion: the plan id answers "cancelled", its
	// plan tasks are gone.
	mustStatus(t, f.DoAs(t, tok, "DELETE", f.P(path+"/plan/"+id), nil), 204)
	r := f.DoAs(t, tok, "GET", f.P(path+"/plan/"+id), nil)
	mustStatus(t, r, 200)
	if !strings.Contains(string(r.Body), `"status":"cancelled"`) || strings.Contains(string(r.Body), "file-scan-tasks") {
		t.Errorf("cancelled plan: %s", r.Body)
	}

	// iceberg-go's REST client, planning on the server: it polls the
	// submitted plan and fetches every plan task.
	rc, err := rest.NewCatalog(ctx, "floe", f.URL, rest.WithCredential(f.Cred.String()), rest.WithCustomTransport(f.ClientTransport),
		rest.WithWarehouseLocation(f.Warehouse))
	if err != nil {
		t.Fatal(err)
	}
	before := f.ClientTransport.Checked()
	rt, err := rc.LoadTable(ctx, table.Identifier{"big", "events"})
	if err != nil {
		t.Fatal(err)
	}
	for _, filter := range []iceberg.BooleanExpression{iceberg.AlwaysTrue{}, iceberg.EqualTo(iceberg.Reference("region"), "r7")} {
		remote, err := rt.Scan(table.WithScanPlanningMode(table.ScanPlanningRemote), table.WithRowFilter(filter)).PlanFiles(ctx)
		if err != nil {
			t.Fatalf("server-side plan through iceberg-go: %v", err)
		}
		local, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := func(ts []table.FileScanTask) []string {
			out := make([]string, 0, len(ts))
			for _, x := range lake.WholeFiles(ts) {
				out = append(out, x.File.FilePath())
			}
			slices.Sort(out)
			return slices.Compact(out)
		}
		got, want := names(remote), names(local)
		if len(want) < 5000 || !slices.Equal(got, want) {
			t.Fatalf("filter %v: iceberg-go planned %d files on the server, %d locally", filter, len(got), len(want))
		}
	}
	if n := f.ClientTransport.Checked() - before; n < 50 {
		t.Errorf("only %d of iceberg-go's exchanges were checked against the spec", n)
	}
}

// TestAsyncPlanThresholdConfig: with the threshold lowered, a small table
// plans in the background; -1 turns asynchronous planning off.
func TestAsyncPlanThresholdConfig(t *testing.T) {
	for _, c := range []struct {
		threshold int
		want      string
	}{{5, "submitted"}, {-1, "completed"}} {
		t.Run(fmt.Sprint(c.threshold), func(t *testing.T) {
			f := testkit.Start(t, func(cfg *app.Config) { cfg.ScanPlanning.AsyncThresholdFiles = c.threshold })
			bigTable(t, f, "small", "t", 1, 10)
			r := f.Do(t, "POST", f.P("/namespaces/small/tables/t/plan"), `{}`)
			mustStatus(t, r, 200)
			var pr planResponse
			r.JSON(t, &pr)
			if pr.Status != c.want {
				t.Fatalf("status %s, want %s", pr.Status, c.want)
			}
			if c.want == "submitted" {
				if done := pollPlan(t, f, f.Token(t), "/namespaces/small/tables/t", pr.PlanID); done.Status != "completed" || len(done.Tasks) != 10 {
					t.Fatalf("plan ended %s with %d tasks", done.Status, len(done.Tasks))
				}
			}
		})
	}
}
