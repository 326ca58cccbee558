package restcat_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
)

// planFixture is a server with table plan.events (id long, region string,
// partitioned by region) holding two appends of five files each.
type planFixture struct {
	f           *testkit.Floe
	snapshots   []int64
	path, path2 string
}

func startPlanning(t *testing.T, pageSize, cacheEntries int, edit ...func(*app.Config)) *planFixture {
	t.Helper()
	f := testkit.Start(t, func(c *app.Config) {
		c.ScanPlanning.PageSize = pageSize
		c.ScanPlanning.CacheEntries = cacheEntries
		for _, e := range edit {
			e(c)
		}
	})
	ctx := context.Background()
	cat := f.App.Catalog()
	ns := catalog.Namespace{"plan"}
	if err := cat.CreateNamespace(ctx, f.Warehouse, ns, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	lk := lake.New(cat, lake.NewBucketFS(f.App.Objects()), lake.Options{})
	pf := &planFixture{f: f, path: "/namespaces/plan/tables/events", path2: "/namespaces/plan/tables/other"}
	for _, name := range []string{"events", "other"} {
		if _, err := cat.CreateTable(ctx, f.Warehouse, ns, catalog.CreateTableRequest{Name: name, Schema: sc, Spec: &spec}); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := lk.LoadTable(ctx, f.Warehouse, catalog.Ident{Namespace: ns, Name: "events"})
	if err != nil {
		t.Fatal(err)
	}
	le := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	for a := range 2 {
		files := make([]iceberg.DataFile, 5)
		for i := range files {
			n := int64(a*5 + i)
			b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
				fmt.Sprintf("%s/data/f-%d.parquet", tbl.Location(), n), iceberg.ParquetFile,
				map[int]any{1000: fmt.Sprintf("r%d", n%3)}, nil, nil, 10, 1000)
			if err != nil {
				t.Fatal(err)
			}
			// ids n*100 .. n*100+9
			b.LowerBoundValues(map[int][]byte{1: le(n * 100)}).UpperBoundValues(map[int][]byte{1: le(n*100 + 9)}).
				ValueCounts(map[int]int64{1: 10, 2: 10}).NullValueCounts(map[int]int64{1: 0, 2: 0})
			files[i] = b.Build()
		}
		if tbl, err = lake.AppendFiles(ctx, tbl, files, nil); err != nil {
			t.Fatal(err)
		}
		pf.snapshots = append(pf.snapshots, tbl.CurrentSnapshot().SnapshotID)
	}
	return pf
}

type planResponse struct {
	Status      string   `json:"status"`
	PlanID      string   `json:"plan-id"`
	PlanTasks   []string `json:"plan-tasks"`
	DeleteFiles []any    `json:"delete-files"`
	Tasks       []struct {
		DataFile struct {
			Content    string                `json:"content"`
			FilePath   string                `json:"file-path"`
			Partition  []any                 `json:"partition"`
			SpecID     int                   `json:"spec-id"`
			LowerBound *struct{ Keys []int } `json:"lower-bounds"`
			ValueCount *struct{ Keys []int } `json:"value-counts"`
		} `json:"data-file"`
		Residual any `json:"residual-filter"`
	} `json:"file-scan-tasks"`
	Creds []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

// planAll plans and follows every plan task, returning the data files.
func (p *planFixture) planAll(t *testing.T, tok, path, body string) (planResponse, []string) {
	t.Helper()
	r := p.f.DoAs(t, tok, "POST", p.f.P(path+"/plan"), body)
	mustStatus(t, r, 200)
	var first planResponse
	r.JSON(t, &first)
	if first.Status != "completed" || first.PlanID == "" {
		t.Fatalf("plan %s", r.Body)
	}
	var files []string
	collect := func(pr planResponse) {
		for _, tk := range pr.Tasks {
			files = append(files, tk.DataFile.FilePath[strings.LastIndex(tk.DataFile.FilePath, "/")+1:])
		}
	}
	collect(first)
	queue := slices.Clone(first.PlanTasks)
	for len(queue) > 0 {
		tk := queue[0]
		queue = queue[1:]
		r := p.f.DoAs(t, tok, "POST", p.f.P(path+"/tasks"), map[string]string{"plan-task": tk})
		mustStatus(t, r, 200)
		var page planResponse
		r.JSON(t, &page)
		collect(page)
		queue = append(queue, page.PlanTasks...)
	}
	slices.Sort(files)
	return first, files
}

func fileNames(ns ...int) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, fmt.Sprintf("f-%d.parquet", n))
	}
	slices.Sort(out)
	return out
}

func TestPlanTableScan(t *testing.T) {
	p := startPlanning(t, 3, 0)
	tok := p.f.Token(t)
	s1, s2 := p.snapshots[0], p.snapshots[1]
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"full scan, no body fields", `{}`, fileNames(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		{"partition filter", `{"filter":{"type":"eq","term":"region","value":"r1"}}`, fileNames(1, 4, 7)},
		{"case-insensitive", `{"case-sensitive":false,"filter":{"type":"eq","term":"REGION","value":"r1"}}`, fileNames(1, 4, 7)},
		{"metrics filter", `{"filter":{"type":"gt","term":"id","value":605}}`, fileNames(6, 7, 8, 9)},
		{"in", `{"filter":{"type":"in","term":"region","values":["r0","r2"]}}`, fileNames(0, 2, 3, 5, 6, 8, 9)},
		{"and/or/not", `{"filter":{"type":"or","left":{"type":"and","left":{"type":"eq","term":"region","value":"r0"},"right":{"type":"lt","term":"id","value":100}},"right":{"type":"not","child":{"type":"lt-eq","term":"id","value":805}}}}`, fileNames(0, 8, 9)},
		{"is-null", `{"filter":{"type":"is-null","term":"region"}}`, []string{}},
		{"always false", `{"filter":false}`, []string{}},
		{"transform term", `{"filter":{"type":"eq","term":{"type":"transform","transform":"identity","term":"region"},"value":"r2"}}`, fileNames(2, 5, 8)},
		{"time travel", fmt.Sprintf(`{"snapshot-id":%d}`, s1), fileNames(0, 1, 2, 3, 4)},
		{"incremental append", fmt.Sprintf(`{"start-snapshot-id":%d,"end-snapshot-id":%d}`, s1, s2), fileNames(5, 6, 7, 8, 9)},
		{"select and stats", `{"select":["id"],"stats-fields":["id"],"min-rows-requested":5}`, fileNames(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got := p.planAll(t, tok, p.path, c.body)
			if !slices.Equal(got, c.want) {
				t.Errorf("files %v, want %v", got, c.want)
			}
		})
	}
}

func TestPlanResponseShape(t *testing.T) {
	p := startPlanning(t, 4, 0)
	tok := p.f.Token(t)
	first, _ := p.planAll(t, tok, p.path, `{"stats-fields":["id"],"filter":{"type":"gt-eq","term":"id","value":0}}`)
	if len(first.Tasks) != 4 || len(first.PlanTasks) != 2 {
		t.Fatalf("first page: %d tasks, %d plan tasks; want 4 and 2", len(first.Tasks), len(first.PlanTasks))
	}
	d := first.Tasks[0].DataFile
	if d.Content != "data" || len(d.Partition) != 1 || d.SpecID != 0 {
		t.Errorf("data file %+v", d)
	}
	if d.LowerBound == nil || !slices.Equal(d.LowerBound.Keys, []int{1}) || d.ValueCount == nil || !slices.Equal(d.ValueCount.Keys, []int{1}) {
		t.Errorf("stats of only field 1 expected: %+v", d)
	}
	if len(first.Creds) != 1 || first.Creds[0].Config["s3.access-key-id"] == "" || !strings.HasPrefix(first.Creds[0].Prefix, "s3://") {
		t.Errorf("storage credentials %+v", first.Creds)
	}
	// Without stats-fields no statistics are sent.
	r := p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/plan"), `{}`)
	var plain planResponse
	r.JSON(t, &plain)
	if plain.Tasks[0].DataFile.LowerBound != nil || plain.Tasks[0].DataFile.ValueCount != nil {
		t.Errorf("statistics without stats-fields: %s", r.Body)
	}
	// fetchPlanningResult answers like planTableScan; cancel forgets the plan.
	r = p.f.DoAs(t, tok, "GET", p.f.P(p.path+"/plan/"+first.PlanID), nil)
	mustStatus(t, r, 200)
	var again planResponse
	r.JSON(t, &again)
	if again.Status != "completed" || len(again.Tasks) != 4 || !slices.Equal(again.PlanTasks, first.PlanTasks) {
		t.Errorf("fetchPlanningResult %s", r.Body)
	}
	mustStatus(t, p.f.DoAs(t, tok, "DELETE", p.f.P(p.path+"/plan/"+first.PlanID), nil), 204)
	wantErr(t, p.f.DoAs(t, tok, "GET", p.f.P(p.path+"/plan/"+first.PlanID), nil), 404, "NoSuchPlanIdException", "does not exist")
	wantErr(t, p.f.DoAs(t, tok, "DELETE", p.f.P(p.path+"/plan/"+first.PlanID), nil), 404, "NoSuchPlanIdException", "does not exist")
	wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/tasks"), map[string]string{"plan-task": first.PlanTasks[0]}), 404,
		"NoSuchPlanTaskException", "does not exist")
}

func TestPlanBadRequests(t *testing.T) {
	p := startPlanning(t, 0, 0)
	tok := p.f.Token(t)
	deep := strings.Repeat(`{"type":"not","child":`, 100) + "true" + strings.Repeat("}", 100)
	for _, c := range []struct {
		name, body string
		status     int
		typ, msg   string
	}{
		{"unknown column", `{"filter":{"type":"eq","term":"nope","value":1}}`, 400, "BadRequestException", "invalid filter"},
		{"unknown type", `{"filter":{"type":"between","term":"id","value":1}}`, 400, "BadRequestException", "invalid filter"},
		{"wrong literal type", `{"filter":{"type":"eq","term":"id","value":"abc"}}`, 400, "BadRequestException", "invalid filter"},
		{"too deep", `{"filter":` + deep + `}`, 400, "BadRequestException", "nested deeper"},
		{"case-sensitive mismatch", `{"filter":{"type":"eq","term":"ID","value":1}}`, 400, "BadRequestException", "invalid filter"},
		{"unknown select", `{"select":["nope"]}`, 400, "BadRequestException", `no column "nope"`},
		{"unknown stats field", `{"stats-fields":["nope"]}`, 400, "BadRequestException", `no column "nope"`},
		{"missing snapshot", `{"snapshot-id":12345}`, 400, "BadRequestException", "snapshot 12345 does not exist"},
		{"both point and incremental", fmt.Sprintf(`{"snapshot-id":%d,"start-snapshot-id":%d,"end-snapshot-id":%d}`, p.snapshots[0], p.snapshots[0], p.snapshots[1]),
			400, "BadRequestException", "cannot be combined"},
		{"start without end", fmt.Sprintf(`{"start-snapshot-id":%d}`, p.snapshots[0]), 400, "BadRequestException", "end-snapshot-id is required"},
		{"start not an ancestor", fmt.Sprintf(`{"start-snapshot-id":%d,"end-snapshot-id":%d}`, p.snapshots[1], p.snapshots[0]), 400, "BadRequestException", "not an ancestor"},
		{"malformed body", `{"filter":`, 400, "BadRequestException", "malformed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/plan"), c.body), c.status, c.typ, c.msg)
		})
	}
	wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P("/namespaces/plan/tables/missing/plan"), `{}`), 404, "NoSuchTableException", "")
	wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/tasks"), map[string]string{"plan-task": "garbage"}), 404, "NoSuchPlanTaskException", "")
}

func TestPlanTokensBoundToPrincipalAndTable(t *testing.T) {
	p := startPlanning(t, 2, 0)
	tok := p.f.Token(t)
	other := principal(t, p.f, "reader")
	for _, name := range []string{"events", "other"} {
		grant(t, p.f, authz.Grant{Grantee: authz.Principal("reader"), Privilege: authz.Select,
			On: authz.Table(p.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: name})})
	}
	first, _ := p.planAll(t, tok, p.path, `{}`)
	if len(first.PlanTasks) == 0 {
		t.Fatal("no plan tasks")
	}
	tk := map[string]string{"plan-task": first.PlanTasks[0]}
	// Another principal, or the same plan task on another table: not found.
	wantErr(t, p.f.DoAs(t, other, "POST", p.f.P(p.path+"/tasks"), tk), 404, "NoSuchPlanTaskException", "")
	wantErr(t, p.f.DoAs(t, other, "GET", p.f.P(p.path+"/plan/"+first.PlanID), nil), 404, "NoSuchPlanIdException", "")
	wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path2+"/tasks"), tk), 404, "NoSuchPlanTaskException", "")
	mustStatus(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/tasks"), tk), 200)
	// The other principal may plan for itself.
	if _, files := p.planAll(t, other, p.path, `{}`); len(files) != 10 {
		t.Errorf("reader planned %d files", len(files))
	}
}

func TestPlanCacheBound(t *testing.T) {
	// One plan is kept: planning another evicts the first, whose plan
	// tasks are then answered by planning it again, at the same snapshot
	// even after a commit.
	p := startPlanning(t, 2, 1)
	tok := p.f.Token(t)
	r := p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/plan"), `{}`)
	var a planResponse
	r.JSON(t, &a)
	if len(a.PlanTasks) != 4 {
		t.Fatalf("%d plan tasks, want 4", len(a.PlanTasks))
	}
	page := func(tk string) string {
		r := p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/tasks"), map[string]string{"plan-task": tk})
		mustStatus(t, r, 200)
		return string(r.Body)
	}
	before := page(a.PlanTasks[3])
	mustStatus(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/plan"), `{"filter":{"type":"eq","term":"region","value":"r1"}}`), 200)
	mustStatus(t, p.f.Do(t, "POST", p.f.P(p.path), `{"requirements":[],"updates":[{"action":"remove-snapshot-ref","ref-name":"main"}]}`), 200)
	if after := page(a.PlanTasks[3]); after != before {
		t.Errorf("page after eviction %s, before %s", after, before)
	}
	// Without the snapshot, the plan cannot be made again.
	mustStatus(t, p.f.Do(t, "POST", p.f.P(p.path), fmt.Sprintf(`{"requirements":[],"updates":[{"action":"remove-snapshots","snapshot-ids":[%d]}]}`, p.snapshots[1])), 200)
	mustStatus(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/plan"), `{"filter":{"type":"eq","term":"region","value":"r2"}}`), 200)
	wantErr(t, p.f.DoAs(t, tok, "POST", p.f.P(p.path+"/tasks"), map[string]string{"plan-task": a.PlanTasks[0]}), 404,
		"NoSuchPlanTaskException", "plan the scan again")
}

func TestPlanAuthorization(t *testing.T) {
	p := startPlanning(t, 0, 0)
	f := p.f
	events := authz.Table(f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: "events"})
	describer := principal(t, f, "describer")
	grant(t, f, authz.Grant{Grantee: authz.Principal("describer"), Privilege: authz.Describe, On: events})
	filtered := principal(t, f, "eu")
	grant(t, f, authz.Grant{Grantee: authz.Principal("eu"), Privilege: authz.Select, On: events,
		Filter: &authz.DataFilter{RowFilter: "lower(region) = 'r1'"}}) // not decidable per file (see TestPlanPolicy)
	reader := principal(t, f, "reader")
	grant(t, f, authz.Grant{Grantee: authz.Principal("reader"), Privilege: authz.Select, On: events})
	for _, c := range []struct {
		name, tok string
		status    int
		msg       []string
	}{
		{"describe only", describer, 403, []string{`lacks SELECT on table "plan.events"`}},
		{"row filter", filtered, 403, []string{`may read table "plan.events" only through a data filter`, "SQL endpoint at " + f.App.SQLAddr()}},
		{"select", reader, 200, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.DoAs(t, c.tok, "POST", f.P(p.path+"/plan"), `{}`)
			if c.status != 200 {
				for _, m := range c.msg {
					wantErr(t, r, c.status, "ForbiddenException", m)
				}
				return
			}
			mustStatus(t, r, 200)
		})
	}
	// Each plan is audited with its snapshot and file count.
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := f.App.Store().AuditRecords(context.Background(), 0, 100000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range recs {
			var d map[string]any
			_ = json.Unmarshal(rec.Detail, &d)
			if rec.Action == "catalog.planTableScan" && rec.Principal == "reader" && d["data_files"] == float64(10) &&
				d["snapshot_id"] == float64(p.snapshots[1]) && d["plan_id"] != nil {
				found = true
			}
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit event of reader's plan of 10 files at snapshot %d", p.snapshots[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPlanEndpointsAdvertised(t *testing.T) {
	p := startPlanning(t, 0, 0)
	r := p.f.Do(t, "GET", "/v1/config", nil)
	var cfg struct {
		Endpoints []string `json:"endpoints"`
	}
	r.JSON(t, &cfg)
	for _, e := range []string{
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
	} {
		if !slices.Contains(cfg.Endpoints, e) {
			t.Errorf("%s not advertised", e)
		}
	}
	off := testkit.Start(t, func(c *app.Config) { c.ScanPlanning.Disabled = true })
	r = off.Do(t, "GET", "/v1/config", nil)
	r.JSON(t, &cfg)
	for _, e := range cfg.Endpoints {
		if strings.Contains(e, "/plan") || strings.HasSuffix(e, "/tasks") {
			t.Errorf("planning off, yet %s advertised", e)
		}
	}
}

func TestPlanDeleteFiles(t *testing.T) {
	p := startPlanning(t, 0, 0)
	ctx := context.Background()
	f := p.f
	lk := lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})
	tbl, err := lk.LoadTable(ctx, f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"plan"}, Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	// A table without snapshots plans no tasks.
	if first, files := p.planAll(t, f.Token(t), p.path2, `{}`); len(files) != 0 || len(first.PlanTasks) != 0 {
		t.Fatalf("empty table planned %v", files)
	}
	file := func(content iceberg.ManifestEntryContent, name, region string) *iceberg.DataFileBuilder {
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), content, tbl.Location()+"/data/"+name, iceberg.ParquetFile,
			map[int]any{1000: region}, nil, nil, 3, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if tbl, err = lake.AppendFiles(ctx, tbl, []iceberg.DataFile{file(iceberg.EntryContentData, "a.parquet", "r0").Build(),
		file(iceberg.EntryContentData, "b.parquet", "r1").Build()}, nil); err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddDeletes(file(iceberg.EntryContentPosDeletes, "pos.parquet", "r0").Build(),
		file(iceberg.EntryContentEqDeletes, "eq.parquet", "r0").EqualityFieldIDs([]int{1}).Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := f.Do(t, "POST", f.P(p.path2+"/plan"), `{}`)
	mustStatus(t, r, 200)
	var out struct {
		DeleteFiles []struct {
			Content     string `json:"content"`
			FilePath    string `json:"file-path"`
			EqualityIDs []int  `json:"equality-ids"`
			Partition   []any  `json:"partition"`
		} `json:"delete-files"`
		Tasks []struct {
			DataFile struct {
				FilePath string `json:"file-path"`
			} `json:"data-file"`
			Refs []int `json:"delete-file-references"`
		} `json:"file-scan-tasks"`
	}
	r.JSON(t, &out)
	if len(out.Tasks) != 2 || len(out.DeleteFiles) != 2 {
		t.Fatalf("plan %s", r.Body)
	}
	for _, tk := range out.Tasks {
		var got []string
		for _, i := range tk.Refs {
			d := out.DeleteFiles[i]
			got = append(got, d.Content)
			if d.Content == "equality-deletes" && !slices.Equal(d.EqualityIDs, []int{1}) {
				t.Errorf("equality ids %v", d.EqualityIDs)
			}
			if len(d.Partition) != 1 || d.Partition[0] != "r0" {
				t.Errorf("delete file partition %v", d.Partition)
			}
		}
		slices.Sort(got)
		want := []string{}
		if strings.HasSuffix(tk.DataFile.FilePath, "/a.parquet") {
			want = []string{"equality-deletes", "position-deletes"}
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: deletes %v, want %v", tk.DataFile.FilePath, got, want)
		}
	}
}

func TestPlanUseSnapshotSchema(t *testing.T) {
	p := startPlanning(t, 0, 0)
	f := p.f
	mustStatus(t, f.Do(t, "POST", f.P(p.path), `{"requirements":[],"updates":[`+
		`{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":true,"type":"long"},`+
		`{"id":2,"name":"region","required":false,"type":"string"},{"id":3,"name":"extra","required":false,"type":"int"}]}},`+
		`{"action":"set-current-schema","schema-id":-1}]}`), 200)
	body := func(snapshotSchema bool) string {
		return fmt.Sprintf(`{"snapshot-id":%d,"use-snapshot-schema":%t,"filter":{"type":"is-null","term":"extra"}}`, p.snapshots[0], snapshotSchema)
	}
	// The current schema has "extra"; the snapshot's does not.
	if _, files := p.planAll(t, f.Token(t), p.path, `{"filter":{"type":"is-null","term":"extra"}}`); len(files) != 10 {
		t.Errorf("current schema: files %v", files)
	}
	wantErr(t, f.Do(t, "POST", f.P(p.path+"/plan"), body(true)), 400, "BadRequestException", "invalid filter")
	wantErr(t, f.Do(t, "POST", f.P(p.path+"/plan"), body(false)), 400, "BadRequestException", "invalid filter")
}
