package mgmtapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/lake"
	"github.com/floe-lake/floe/maint"
	"github.com/floe-lake/floe/mgmtapi"
)

// smallFilesTable creates ns.name with n single-row appends.
func smallFilesTable(t *testing.T, e *env, ns, name string, n int) {
	t.Helper()
	ctx := t.Context()
	cat := e.f.App.Catalog()
	if err := cat.CreateNamespace(ctx, e.f.Warehouse, catalog.Namespace{ns}, nil); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(ctx, e.f.Warehouse, catalog.Namespace{ns}, catalog.CreateTableRequest{Name: name, Schema: sc}); err != nil {
		t.Fatal(err)
	}
	lk := lake.New(cat, lake.NewBucketFS(e.f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(ctx, e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		rec := b.NewRecordBatch()
		b.Release()
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		rec.Release()
		tbl, err = lake.AppendTable(ctx, tbl, at, nil)
		at.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMaintenance: MODIFY runs maintenance on demand (dry run first), SELECT
// reads the table summary, and both are refused without the privilege.
func TestMaintenance(t *testing.T) {
	// No background scheduler: its minute tick would run jobs on the
	// table in the middle of the test.
	e := newEnv(t, func(c *app.Config) { c.Maintenance = false })
	smallFilesTable(t, e, "mnt", "events", 8)
	path := "/api/v1/tables/" + e.f.Warehouse + "/mnt/events"
	bob := e.f.PrincipalToken(t, "bob")

	var res mgmtapi.MaintenanceResult
	e.ok(t, 200, "POST", path+"/maintenance", map[string]any{"dry_run": true}).JSON(t, &res)
	if len(res.Reports) != 5 || res.Reports[0].Job != maint.CompactJob || res.Reports[0].Changed || res.Reports[4].Job != maint.LifecycleJob ||
		res.Reports[0].Stats["rewritten_data_files"] != 8 {
		t.Fatalf("dry run: %+v", res)
	}

	r := e.do(t, bob, "POST", path+"/maintenance", map[string]any{"compact": true})
	wantError(t, r, 403, "ForbiddenException", `principal "bob" lacks MODIFY on table "mnt.events"`)
	e.ok(t, 201, "POST", "/api/v1/grants", grantBody("principal", "bob", "MODIFY", tableOn("mnt", "events")))
	r = e.do(t, bob, "POST", path+"/maintenance", map[string]any{"compact": true})
	if r.Status != 200 {
		t.Fatalf("bob with MODIFY: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &res)
	if len(res.Reports) != 1 || !res.Reports[0].Changed || res.Reports[0].Stats["added_data_files"] != 1 {
		t.Fatalf("compaction: %+v", res)
	}

	r = e.do(t, bob, "GET", path+"/summary", nil)
	wantError(t, r, 403, "ForbiddenException", "")
	var info maint.TableInfo
	e.ok(t, 200, "GET", path+"/summary", nil).JSON(t, &info)
	if info.DataFiles != 1 || info.Records != 8 || info.SnapshotCount != 9 || len(info.Partitions) != 1 ||
		info.Snapshots[0].Operation != "replace" || !info.Policy.CompactionEnabled {
		t.Errorf("summary %+v", info)
	}
	// The on-demand compaction is recorded (the background scheduler may
	// have run a job on the table too, when its minute tick fell inside
	// the test).
	var onDemand []maint.RunInfo
	for _, r := range info.Runs {
		if r.OnDemand {
			onDemand = append(onDemand, r)
		}
	}
	if len(onDemand) != 1 || onDemand[0].Job != maint.CompactJob || onDemand[0].Outcome != "ok" {
		t.Errorf("maintenance runs %+v", info.Runs)
	}
	var hist int64
	for _, b := range info.SizeHistogram {
		hist += b.Files
	}
	if hist != 1 {
		t.Errorf("histogram %+v", info.SizeHistogram)
	}

	r = e.do(t, e.admin, "POST", "/api/v1/tables/"+e.f.Warehouse+"/mnt/nosuch/maintenance", map[string]any{})
	wantError(t, r, 404, "NoSuchTableException", "")
	r = e.do(t, e.admin, "POST", path+"/maintenance", map[string]any{"vacuum": true})
	wantError(t, r, 400, "BadRequestException", "")
	// A namespace of two levels, with the unit separator.
	r = e.do(t, e.admin, "GET", "/api/v1/tables/"+e.f.Warehouse+"/"+url.PathEscape("a\x1fb")+"/t/summary", nil)
	if r.Status != 404 {
		t.Errorf("two-level namespace: %d %s", r.Status, r.Body)
	}
}
