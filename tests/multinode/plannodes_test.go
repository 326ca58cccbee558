package multinode

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
	"github.com/floe-lake/floe/internal/pgtest"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
)

// planNodes starts n nodes as nodes does, with scan planning configured by
// sp on every node.
func planNodes(t *testing.T, n int, sp func(*app.ScanPlanningSettings)) []*testkit.Floe {
	dsn := pgtest.Fresh(t, pgtest.ServerDSN(t))
	shared := t.TempDir()
	var out []*testkit.Floe
	for i := 0; i < n; i++ {
		out = append(out, testkit.Start(t, func(c *app.Config) {
			c.Store = dsn
			c.DataDir = shared
			c.PublicURL = "http://floe.multinode.test"
			sp(&c.ScanPlanning)
		}))
	}
	return out
}

// planTable creates table pn.<name> with files data files (planning reads
// manifests only: the files need not exist) and returns its path.
func planTable(t *testing.T, f *testkit.Floe, name string, files int) string {
	t.Helper()
	ctx := context.Background()
	cat := f.App.Catalog()
	nsp := catalog.Namespace{"pn"}
	if err := cat.CreateNamespace(ctx, f.Warehouse, nsp, nil); err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(ctx, f.Warehouse, nsp, catalog.CreateTableRequest{Name: name, Schema: sc}); err != nil {
		t.Fatal(err)
	}
	id := catalog.Ident{Namespace: nsp, Name: name}
	tbl, err := lake.New(cat, lake.NewBucketFS(f.App.Objects()), lake.Options{}).LoadTable(ctx, f.Warehouse, id)
	if err != nil {
		t.Fatal(err)
	}
	dfs := make([]iceberg.DataFile, files)
	for i := range dfs {
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, fmt.Sprintf("%s/data/f-%03d.parquet", tbl.Location(), i),
			iceberg.ParquetFile, map[int]any{}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		dfs[i] = b.Build()
	}
	if _, err := lake.AppendFiles(ctx, tbl, dfs, nil); err != nil {
		t.Fatal(err)
	}
	return "/namespaces/pn/tables/" + name
}

// reader creates principal name with SELECT on the table and returns a
// token for it (valid on every node).
func reader(t *testing.T, f *testkit.Floe, name, table string) string {
	t.Helper()
	c := f.NewPrincipal(t, name)
	id := catalog.Ident{Namespace: catalog.Namespace{"pn"}, Name: table}
	if _, err := f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(name), Privilege: authz.Select,
		On: authz.Table(f.Warehouse, id)}); err != nil {
		t.Fatal(err)
	}
	return f.TokenFor(t, c.ClientID, c.Secret)
}

type planAnswer struct {
	Status    string   `json:"status"`
	PlanID    string   `json:"plan-id"`
	PlanTasks []string `json:"plan-tasks"`
	Tasks     []struct {
		DataFile struct {
			FilePath string `json:"file-path"`
		} `json:"data-file"`
	} `json:"file-scan-tasks"`
}

func (p planAnswer) files() []string {
	var out []string
	for _, tk := range p.Tasks {
		out = append(out, tk.DataFile.FilePath)
	}
	return out
}

// allFiles returns the files of a completed plan: its first page and
// every plan task's page, each fetched from node f.
func allFiles(t *testing.T, f *testkit.Floe, tok, path string, p planAnswer) []string {
	t.Helper()
	files := p.files()
	for _, pt := range p.PlanTasks {
		r := f.DoAs(t, tok, "POST", f.P(path+"/tasks"), map[string]string{"plan-task": pt})
		if r.Status != 200 {
			t.Fatalf("plan task on %s: %d %s", f.URL, r.Status, r.Body)
		}
		var pg planAnswer
		r.JSON(t, &pg)
		if len(pg.Tasks) == 0 {
			t.Fatalf("plan task on %s: an empty page %s", f.URL, r.Body)
		}
		files = append(files, pg.files()...)
	}
	slices.Sort(files)
	return files
}

// TestNodes_SyncPlanOnAnyNode: a paged plan made on node A is answered by
// node B (plan result and plan tasks) with the same files, for the
// principal it was planned for only; a tampered plan id or plan task is
// 404 on every node.
func TestNodes_SyncPlanOnAnyNode(t *testing.T) {
	ns := planNodes(t, 2, func(s *app.ScanPlanningSettings) { s.PageSize = 2 })
	a, b := ns[0], ns[1]
	path := planTable(t, a, "s", 7)
	alice, eve := reader(t, a, "alice", "s"), reader(t, a, "eve", "s")

	r := a.DoAs(t, alice, "POST", a.P(path+"/plan"), `{}`)
	if r.Status != 200 {
		t.Fatalf("plan on A: %d %s", r.Status, r.Body)
	}
	var p planAnswer
	r.JSON(t, &p)
	if p.Status != "completed" || len(p.PlanTasks) != 3 {
		t.Fatalf("plan on A: want completed with 3 plan tasks: %s", r.Body)
	}
	onA := allFiles(t, a, alice, path, p)
	if len(onA) != 7 {
		t.Fatalf("files planned on A: %v", onA)
	}
	// the plan tasks, fetched from B, which never saw the plan
	if onB := allFiles(t, b, alice, path, p); !slices.Equal(onA, onB) {
		t.Errorf("plan tasks on B: %v, want %v", onB, onA)
	}
	// the plan result, fetched from B
	r = b.DoAs(t, alice, "GET", b.P(path+"/plan/"+p.PlanID), nil)
	if r.Status != 200 {
		t.Fatalf("plan result on B: %d %s", r.Status, r.Body)
	}
	var pb planAnswer
	r.JSON(t, &pb)
	if pb.Status != "completed" || !slices.Equal(pb.files(), p.files()) || !slices.Equal(pb.PlanTasks, p.PlanTasks) {
		t.Errorf("plan result on B: %s, want the first page and plan tasks of A", r.Body)
	}

	// another principal presenting alice's plan id and plan tasks
	for _, n := range ns {
		if r := n.DoAs(t, eve, "GET", n.P(path+"/plan/"+p.PlanID), nil); r.Status != 404 || !strings.Contains(string(r.Body), "NoSuchPlanIdException") {
			t.Errorf("eve's plan result on %s: %d %s, want 404 NoSuchPlanIdException", n.URL, r.Status, r.Body)
		}
		if r := n.DoAs(t, eve, "POST", n.P(path+"/tasks"), map[string]string{"plan-task": p.PlanTasks[0]}); r.Status != 404 || !strings.Contains(string(r.Body), "NoSuchPlanTaskException") {
			t.Errorf("eve's plan task on %s: %d %s, want 404 NoSuchPlanTaskException", n.URL, r.Status, r.Body)
		}
	}

	// tampered plan ids: a changed payload (the principal or the table
	// swapped would change it), a changed signature, an unsigned id
	tampered := []string{flip(p.PlanID, 10), flip(p.PlanID, len(p.PlanID)-3), "fp1.e30.a2lk.c2ln", strings.Repeat("a", 32)}
	for _, id := range tampered {
		for _, n := range ns {
			if r := n.DoAs(t, alice, "GET", n.P(path+"/plan/"+id), nil); r.Status != 404 {
				t.Errorf("tampered plan id %.40s... on %s: %d %s, want 404", id, n.URL, r.Status, r.Body)
			}
			tok := base64.RawURLEncoding.EncodeToString([]byte("pt1:" + id + ":1"))
			if r := n.DoAs(t, alice, "POST", n.P(path+"/tasks"), map[string]string{"plan-task": tok}); r.Status != 404 {
				t.Errorf("tampered plan task on %s: %d %s, want 404", n.URL, r.Status, r.Body)
			}
		}
	}
	// the plan id of table s presented on another table
	other := planTable(t, a, "o", 1)
	if _, err := a.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.Select,
		On: authz.Table(a.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"pn"}, Name: "o"})}); err != nil {
		t.Fatal(err)
	}
	if r := b.DoAs(t, alice, "GET", b.P(other+"/plan/"+p.PlanID), nil); r.Status != 404 {
		t.Errorf("plan id of table s on table o: %d %s, want 404", r.Status, r.Body)
	}
}

// flip changes the character at i of a base64url string to another one.
func flip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

// TestNodes_AsyncPlanOnAnyNode: a plan submitted on node A (background,
// as the table holds more files than async_threshold_files) is answered
// by node B, which plans it in its own background pool, and its plan
// tasks by node C, which never saw it: the same files as A plans.
func TestNodes_AsyncPlanOnAnyNode(t *testing.T) {
	ns := planNodes(t, 3, func(s *app.ScanPlanningSettings) { s.PageSize = 3; s.AsyncThresholdFiles = 5 })
	a, b, c := ns[0], ns[1], ns[2]
	path := planTable(t, a, "big", 11)
	alice, eve := reader(t, a, "alice", "big"), reader(t, a, "eve", "big")

	r := a.DoAs(t, alice, "POST", a.P(path+"/plan"), `{}`)
	var p planAnswer
	r.JSON(t, &p)
	if r.Status != 200 || p.Status != "submitted" || p.PlanID == "" {
		t.Fatalf("plan on A: %d %s, want submitted", r.Status, r.Body)
	}
	if r := b.DoAs(t, eve, "GET", b.P(path+"/plan/"+p.PlanID), nil); r.Status != 404 {
		t.Errorf("eve's plan result on B: %d %s, want 404", r.Status, r.Body)
	}
	done := func(n *testkit.Floe) planAnswer {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			r := n.DoAs(t, alice, "GET", n.P(path+"/plan/"+p.PlanID), nil)
			var q planAnswer
			r.JSON(t, &q)
			if r.Status != 200 || (q.Status != "submitted" && q.Status != "completed") {
				t.Fatalf("plan result on %s: %d %s", n.URL, r.Status, r.Body)
			}
			if q.Status == "completed" {
				return q
			}
			if time.Now().After(deadline) {
				t.Fatalf("plan on %s still submitted", n.URL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	onA, onB := done(a), done(b)
	if !slices.Equal(onA.PlanTasks, onB.PlanTasks) || !slices.Equal(onA.files(), onB.files()) {
		t.Errorf("plan on B: %v %v, want A's %v %v", onB.files(), onB.PlanTasks, onA.files(), onA.PlanTasks)
	}
	filesA := allFiles(t, a, alice, path, onA)
	if len(filesA) != 11 {
		t.Fatalf("files planned on A: %v", filesA)
	}
	// C never saw the plan: it plans it on its pool for the plan task
	if filesC := allFiles(t, c, alice, path, onA); !slices.Equal(filesA, filesC) {
		t.Errorf("plan tasks on C: %v, want %v", filesC, filesA)
	}
}

// eventually polls cond every 20 ms for up to 2 s (a cancel reaches the
// other nodes with their revocation refresh, every 250 ms), well within
// the plans' TTL.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		ok, got := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %s", what, got)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNodes_PlanCancelAndExpiryOnAnyNode: a plan cancelled on node A is
// cancelled on node B too, even where B already served it (sync: 404;
// async: "cancelled", its work on B stopped); after the TTL a plan id is
// 404 on every node.
func TestNodes_PlanCancelAndExpiryOnAnyNode(t *testing.T) {
	ns := planNodes(t, 2, func(s *app.ScanPlanningSettings) {
		s.PageSize = 2
		s.AsyncThresholdFiles = 5
		s.TTL = 5 * time.Second
	})
	a, b := ns[0], ns[1]
	small, big := planTable(t, a, "s", 4), planTable(t, a, "big", 9)
	alice := reader(t, a, "alice", "s")
	if _, err := a.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal("alice"), Privilege: authz.Select,
		On: authz.Table(a.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"pn"}, Name: "big"})}); err != nil {
		t.Fatal(err)
	}
	plan := func(path string) planAnswer {
		t.Helper()
		r := a.DoAs(t, alice, "POST", a.P(path+"/plan"), `{}`)
		if r.Status != 200 {
			t.Fatalf("plan on A: %d %s", r.Status, r.Body)
		}
		var p planAnswer
		r.JSON(t, &p)
		return p
	}

	// sync: B serves the plan, A cancels it, B refuses it
	p := plan(small)
	if p.Status != "completed" || len(p.PlanTasks) != 1 {
		t.Fatalf("plan on A: %+v", p)
	}
	task := map[string]string{"plan-task": p.PlanTasks[0]}
	if r := b.DoAs(t, alice, "POST", b.P(small+"/tasks"), task); r.Status != 200 {
		t.Fatalf("plan task on B: %d %s", r.Status, r.Body)
	}
	if r := a.DoAs(t, alice, "DELETE", a.P(small+"/plan/"+p.PlanID), nil); r.Status != 204 {
		t.Fatalf("cancel on A: %d %s", r.Status, r.Body)
	}
	eventually(t, "plan task on B after a cancel on A", func() (bool, string) {
		r := b.DoAs(t, alice, "POST", b.P(small+"/tasks"), task)
		return r.Status == 404 && strings.Contains(string(r.Body), "NoSuchPlanTaskException"), fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	if r := b.DoAs(t, alice, "GET", b.P(small+"/plan/"+p.PlanID), nil); r.Status != 404 {
		t.Errorf("plan result on B after a cancel on A: %d %s, want 404", r.Status, r.Body)
	}

	// async: B adopts the plan, A cancels it, B answers cancelled
	q := plan(big)
	if q.Status != "submitted" {
		t.Fatalf("plan on A: %+v, want submitted", q)
	}
	if r := b.DoAs(t, alice, "GET", b.P(big+"/plan/"+q.PlanID), nil); r.Status != 200 {
		t.Fatalf("plan result on B: %d %s", r.Status, r.Body)
	}
	if r := a.DoAs(t, alice, "DELETE", a.P(big+"/plan/"+q.PlanID), nil); r.Status != 204 {
		t.Fatalf("cancel on A: %d %s", r.Status, r.Body)
	}
	for _, n := range ns {
		eventually(t, "plan result after a cancel on A", func() (bool, string) {
			r := n.DoAs(t, alice, "GET", n.P(big+"/plan/"+q.PlanID), nil)
			var got planAnswer
			if r.Status == 200 {
				r.JSON(t, &got)
			}
			return r.Status == 200 && got.Status == "cancelled", fmt.Sprintf("%s: %d %s", n.URL, r.Status, r.Body)
		})
	}

	// expiry: a fresh plan works on B, and is 404 on every node after the TTL
	e := plan(small)
	if r := b.DoAs(t, alice, "GET", b.P(small+"/plan/"+e.PlanID), nil); r.Status != 200 {
		t.Fatalf("plan result on B: %d %s", r.Status, r.Body)
	}
	time.Sleep(5100 * time.Millisecond)
	for _, n := range ns {
		if r := n.DoAs(t, alice, "GET", n.P(small+"/plan/"+e.PlanID), nil); r.Status != 404 {
			t.Errorf("plan result on %s after the TTL: %d %s, want 404", n.URL, r.Status, r.Body)
		}
		if r := n.DoAs(t, alice, "POST", n.P(small+"/tasks"), map[string]string{"plan-task": e.PlanTasks[0]}); r.Status != 404 {
			t.Errorf("plan task on %s after the TTL: %d %s, want 404", n.URL, r.Status, r.Body)
		}
	}
}

// TestNodes_PolicyFilteredPlanTasksOnAnyNode: a policy-filtered plan made
// on node A is paged on node B with the same (filtered) files, and its
// plan id, signed but readable, does not hold the caller's row filter.
func TestNodes_PolicyFilteredPlanTasksOnAnyNode(t *testing.T) {
	ns := planNodes(t, 2, func(s *app.ScanPlanningSettings) { s.PageSize = 1 })
	a, b := ns[0], ns[1]
	ctx := context.Background()
	cat := a.App.Catalog()
	nsp := catalog.Namespace{"pn"}
	if err := cat.CreateNamespace(ctx, a.Warehouse, nsp, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	if _, err := cat.CreateTable(ctx, a.Warehouse, nsp, catalog.CreateTableRequest{Name: "p", Schema: sc, Spec: &spec}); err != nil {
		t.Fatal(err)
	}
	id := catalog.Ident{Namespace: nsp, Name: "p"}
	tbl, err := lake.New(cat, lake.NewBucketFS(a.App.Objects()), lake.Options{}).LoadTable(ctx, a.Warehouse, id)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]iceberg.DataFile, 6)
	for i := range files {
		bld, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, fmt.Sprintf("%s/data/f-%d.parquet", tbl.Location(), i),
			iceberg.ParquetFile, map[int]any{1000: fmt.Sprintf("zone%d", i%2)}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = bld.Build()
	}
	if _, err := lake.AppendFiles(ctx, tbl, files, nil); err != nil {
		t.Fatal(err)
	}
	c := a.NewPrincipal(t, "eu")
	if _, err := a.App.Authz().Grant(ctx, authz.Grant{Grantee: authz.Principal("eu"), Privilege: authz.Select,
		On: authz.Table(a.Warehouse, id), Filter: &authz.DataFilter{RowFilter: "region = 'zone1'"}}); err != nil {
		t.Fatal(err)
	}
	tok := a.TokenFor(t, c.ClientID, c.Secret)
	path := "/namespaces/pn/tables/p"
	r := a.DoAs(t, tok, "POST", a.P(path+"/plan"), `{}`)
	if r.Status != 200 {
		t.Fatalf("plan on A: %d %s", r.Status, r.Body)
	}
	var p planAnswer
	r.JSON(t, &p)
	onA := allFiles(t, a, tok, path, p)
	onB := allFiles(t, b, tok, path, p)
	if len(onA) != 3 || !slices.Equal(onA, onB) {
		t.Fatalf("filtered files on A %v, on B %v: want the same 3", onA, onB)
	}
	for _, f := range onB {
		if !strings.Contains(f, "f-1.") && !strings.Contains(f, "f-3.") && !strings.Contains(f, "f-5.") {
			t.Errorf("node B listed %s, outside the row filter", f)
		}
	}
	parts := strings.Split(p.PlanID, ".")
	z, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	payload, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"t":"`) || strings.Contains(string(payload), "zone1") {
		t.Errorf("plan id payload %s: want the plan's request without the row filter", payload)
	}
}
