package restcat

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/internal/testkit/localcat"
	"github.com/floe-lake/floe/lake"
)

// planFiles plans through h (polling a submitted plan) and returns, for
// each data file, the sorted delete files its task references, and the
// number of pages.
func planFiles(t *testing.T, h *Handler, path, body string) (map[string][]string, int) {
	t.Helper()
	do := func(method, p, body string) []byte {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, p, strings.NewReader(body)))
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, p, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	type page struct {
		Status      string   `json:"status"`
		PlanID      string   `json:"plan-id"`
		PlanTasks   []string `json:"plan-tasks"`
		DeleteFiles []struct {
			FilePath string `json:"file-path"`
		} `json:"delete-files"`
		Tasks []struct {
			DataFile struct {
				FilePath string `json:"file-path"`
			} `json:"data-file"`
			Refs []int `json:"delete-file-references"`
		} `json:"file-scan-tasks"`
	}
	var first page
	_ = json.Unmarshal(do("POST", path+"/plan", body), &first)
	for first.Status == "submitted" {
		id := first.PlanID
		waitFor(t, "the plan", func() bool {
			first = page{}
			_ = json.Unmarshal(do("GET", path+"/plan/"+id, ""), &first)
			return first.Status != "submitted"
		})
	}
	if first.Status != "completed" {
		t.Fatalf("plan %s", first.Status)
	}
	out := map[string][]string{}
	collect := func(p page) {
		for _, tk := range p.Tasks {
			if _, dup := out[tk.DataFile.FilePath]; dup {
				t.Fatalf("%s planned twice", tk.DataFile.FilePath)
			}
			ds := []string{}
			for _, i := range tk.Refs {
				ds = append(ds, p.DeleteFiles[i].FilePath)
			}
			slices.Sort(ds)
			out[tk.DataFile.FilePath] = ds
		}
	}
	collect(first)
	for _, pt := range first.PlanTasks {
		var p page
		_ = json.Unmarshal(do("POST", path+"/tasks", `{"plan-task":"`+pt+`"}`), &p)
		collect(p)
	}
	return out, len(first.PlanTasks) + 1
}

// TestPlanBatchesMatchWholePlan: a large plan made one data manifest at a
// time (with every delete manifest in each batch) lists the same files,
// with the same position and equality deletes, as the plan made whole.
func TestPlanBatchesMatchWholePlan(t *testing.T) {
	ctx := context.Background()
	lc := localcat.New(t)
	tbl, fsys := lc.RegionTable(t, "t", 4, 5) // 20 files, r0..r4 in each of 4 manifests
	del := func(content iceberg.ManifestEntryContent, name, region string) *iceberg.DataFileBuilder {
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), content, tbl.Location()+"/data/"+name, iceberg.ParquetFile,
			map[int]any{1000: region}, nil, nil, 3, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(del(iceberg.EntryContentPosDeletes, "pos-r0.parquet", "r0").Build(),
		del(iceberg.EntryContentEqDeletes, "eq-r1.parquet", "r1").EqualityFieldIDs([]int{1}).Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Appended after the deletes: the equality delete does not apply to it.
	if _, err := lake.AppendFiles(ctx, tbl, []iceberg.DataFile{del(iceberg.EntryContentData, "late-r1.parquet", "r1").Build()}, nil); err != nil {
		t.Fatal(err)
	}
	path := "/v1/" + localcat.Warehouse + "/namespaces/bench/tables/t"
	whole := New(lc.Catalog, Options{DefaultWarehouse: localcat.Warehouse, Planning: &Planning{FS: fsys, PageSize: 3,
		Async: AsyncPlanning{ThresholdFiles: -1}}})
	batched := New(lc.Catalog, Options{DefaultWarehouse: localcat.Warehouse, Planning: &Planning{FS: fsys, PageSize: 3,
		Async: AsyncPlanning{ThresholdFiles: 5}}})
	batched.plans.async.batchFiles = 5 // one data manifest a batch
	t.Cleanup(batched.Close)
	for _, c := range []struct {
		body  string
		pages int
	}{
		// 21 files in five batches (5, 5, 5, 5, 1), pages of at most
		// three: 2+2+2+2+1 (whole: 7).
		{`{}`, 9},
		// 13 files, 3 a batch and 1: a page each.
		{`{"filter":{"type":"in","term":"region","values":["r0","r1","r3"]}}`, 5},
	} {
		body := c.body
		want, _ := planFiles(t, whole, path, body)
		got, pages := planFiles(t, batched, path, body)
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("%s: batched %d files, whole %d", body, len(got), len(want))
		}
		withDeletes := 0
		for f, ds := range want {
			if !slices.Equal(got[f], ds) {
				t.Errorf("%s: %s deletes %v batched, %v whole", body, f, got[f], ds)
			}
			if len(ds) > 0 {
				withDeletes++
			}
		}
		if withDeletes == 0 {
			t.Errorf("%s: no file has deletes", body)
		}
		if pages != c.pages {
			t.Errorf("%s: %d pages, want %d", body, pages, c.pages)
		}
	}
}
