package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/catalog"
)

const wh = "wh"

func ns(levels ...string) catalog.Namespace { return catalog.Namespace(levels) }

func ident(name string, levels ...string) catalog.Ident {
	return catalog.Ident{Namespace: ns(levels...), Name: name}
}

// setup creates warehouse wh and the given namespaces (levels joined by ".").
func (e *env) setup(t *testing.T, namespaces ...string) {
	t.Helper()
	must(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{Name: wh, Location: "file:///tmp/wh"}))
	for _, n := range namespaces {
		must(t, e.s.CreateNamespace(e.ctx, wh, ns(strings.Split(n, ".")...), nil))
	}
}

// create creates an entity with SwapPointers.
func (e *env) create(t *testing.T, id catalog.Ident, kind catalog.Kind, loc string) {
	t.Helper()
	must(t, e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: kind, New: loc}}))
}

// pointer returns the metadata location of id, or "" if it does not exist.
func (e *env) pointer(t *testing.T, id catalog.Ident) string {
	t.Helper()
	ent, err := e.s.Entity(e.ctx, wh, id)
	if floe.KindOf(err) == floe.NotFound {
		return ""
	}
	must(t, err)
	return ent.MetadataLocation
}

func testWarehouses(t *testing.T, e *env) {
	_, err := e.s.Warehouse(e.ctx, "nope")
	wantErr(t, err, floe.NotFound, "warehouse", "Warehouse does not exist: nope")
	if !errors.Is(err, catalog.ErrNoSuchWarehouse) {
		t.Errorf("errors.Is(%v, ErrNoSuchWarehouse) = false", err)
	}
	wantErr(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{}), floe.Invalid, "warehouse", "")

	w := catalog.Warehouse{Name: "w1", Location: "s3://bucket/w1"}
	must(t, e.s.PutWarehouse(e.ctx, w))
	must(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{Name: "w2", Location: "file:///w2"}))
	got, err := e.s.Warehouse(e.ctx, "w1")
	must(t, err)
	if got != w {
		t.Errorf("Warehouse = %+v, want %+v", got, w)
	}
	w.Location = "s3://bucket/moved"
	must(t, e.s.PutWarehouse(e.ctx, w))
	if got, _ := e.s.Warehouse(e.ctx, "w1"); got != w {
		t.Errorf("after update Warehouse = %+v, want %+v", got, w)
	}
	if got, _ := e.s.Warehouse(e.ctx, "w2"); got.Location != "file:///w2" {
		t.Errorf("w2 changed: %+v", got)
	}
}

func testCreateNamespace(t *testing.T, e *env) {
	props := map[string]string{"owner": "ann"}
	err := e.s.CreateNamespace(e.ctx, wh, ns("a"), props)
	wantErr(t, err, floe.NotFound, "warehouse", "Warehouse does not exist: wh")
	e.setup(t)

	tests := []struct {
		name   string
		ns     catalog.Namespace
		kind   floe.Kind // 0 (Internal) means success
		entity string
		msg    string
	}{
		{"top level", ns("a"), 0, "", ""},
		{"again", ns("a"), floe.AlreadyExists, "namespace", "Namespace already exists: a"},
		{"nested", ns("a", "b"), 0, "", ""},
		{"nested again", ns("a", "b"), floe.AlreadyExists, "namespace", "Namespace already exists: a.b"},
		{"deeper", ns("a", "b", "c"), 0, "", ""},
		{"missing parent", ns("x", "y"), floe.NotFound, "namespace", "Namespace does not exist: x"},
		{"missing grandparent", ns("a", "q", "r"), floe.NotFound, "namespace", "Namespace does not exist: a.q"},
		{"odd characters", ns("Ünïcode", "with space"), floe.NotFound, "namespace", "Namespace does not exist: Ünïcode"},
		{"unicode", ns("Ünïcode"), 0, "", ""},
		{"empty", ns(), floe.Invalid, "namespace", ""},
	}
	for _, tt := range tests {
		err := e.s.CreateNamespace(e.ctx, wh, tt.ns, props)
		if tt.kind == 0 {
			if err != nil {
				t.Fatalf("%s: CreateNamespace(%v) = %v", tt.name, tt.ns, err)
			}
			continue
		}
		wantErr(t, err, tt.kind, tt.entity, tt.msg)
	}
	// Namespaces are per warehouse.
	must(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{Name: "other", Location: "file:///o"}))
	must(t, e.s.CreateNamespace(e.ctx, "other", ns("a"), nil))
	wantErr(t, e.s.CreateNamespace(e.ctx, "other", ns("a", "b", "c"), nil), floe.NotFound, "namespace", "Namespace does not exist: a.b")
}

func testNamespaceProperties(t *testing.T, e *env) {
	e.setup(t)
	_, err := e.s.NamespaceProperties(e.ctx, wh, ns("a", "b"))
	wantErr(t, err, floe.NotFound, "namespace", "Namespace does not exist: a.b")
	if !errors.Is(err, catalog.ErrNoSuchNamespace) {
		t.Errorf("errors.Is(%v, ErrNoSuchNamespace) = false", err)
	}

	props := map[string]string{"owner": "ann", "comment": "with \"quotes\" and ünïcode", "empty": ""}
	must(t, e.s.CreateNamespace(e.ctx, wh, ns("a"), props))
	must(t, e.s.CreateNamespace(e.ctx, wh, ns("a", "b"), nil))
	got, err := e.s.NamespaceProperties(e.ctx, wh, ns("a"))
	must(t, err)
	if !maps.Equal(got, props) {
		t.Errorf("properties = %v, want %v", got, props)
	}
	got, err = e.s.NamespaceProperties(e.ctx, wh, ns("a", "b"))
	must(t, err)
	if got == nil || len(got) != 0 {
		t.Errorf("properties of a namespace created with nil = %#v, want an empty map", got)
	}
	_, err = e.s.NamespaceProperties(e.ctx, "other", ns("a"))
	wantErr(t, err, floe.NotFound, "namespace", "Namespace does not exist: a")
}

func testUpdateNamespaceProperties(t *testing.T, e *env) {
	e.setup(t)
	called := false
	err := e.s.UpdateNamespaceProperties(e.ctx, wh, ns("a"), func(map[string]string) error { called = true; return nil })
	wantErr(t, err, floe.NotFound, "namespace", "Namespace does not exist: a")
	if called {
		t.Error("fn called for a missing namespace")
	}

	must(t, e.s.CreateNamespace(e.ctx, wh, ns("a"), map[string]string{"keep": "1", "drop": "2"}))
	must(t, e.s.UpdateNamespaceProperties(e.ctx, wh, ns("a"), func(p map[string]string) error {
		if want := map[string]string{"keep": "1", "drop": "2"}; !maps.Equal(p, want) {
			t.Errorf("fn got %v, want %v", p, want)
		}
		delete(p, "drop")
		p["new"] = "3"
		return nil
	}))
	want := map[string]string{"keep": "1", "new": "3"}
	if got, _ := e.s.NamespaceProperties(e.ctx, wh, ns("a")); !maps.Equal(got, want) {
		t.Errorf("after update: %v, want %v", got, want)
	}

	// An error from fn aborts the update and is returned as is.
	boom := errors.New("boom")
	err = e.s.UpdateNamespaceProperties(e.ctx, wh, ns("a"), func(p map[string]string) error {
		p["new"] = "changed"
		return boom
	})
	if err != boom {
		t.Errorf("error = %v, want fn's error", err)
	}
	if got, _ := e.s.NamespaceProperties(e.ctx, wh, ns("a")); !maps.Equal(got, want) {
		t.Errorf("after failed update: %v, want %v", got, want)
	}

	// Concurrent read-modify-write updates lose nothing.
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- e.s.UpdateNamespaceProperties(e.ctx, wh, ns("a"), func(p map[string]string) error {
				p[fmt.Sprintf("k%02d", i)] = "v"
				return nil
			})
		}()
	}
	for range n {
		must(t, <-errs)
	}
	got, _ := e.s.NamespaceProperties(e.ctx, wh, ns("a"))
	if len(got) != 2+n {
		t.Errorf("after %d concurrent updates: %d properties, want %d: %v", n, len(got), 2+n, got)
	}
}

func testDropNamespace(t *testing.T, e *env) {
	e.setup(t, "a", "a.b", "t", "v", "gone")
	wantErr(t, e.s.DropNamespace(e.ctx, wh, ns("x")), floe.NotFound, "namespace", "Namespace does not exist: x")
	wantErr(t, e.s.DropNamespace(e.ctx, wh, ns("a", "x")), floe.NotFound, "namespace", "Namespace does not exist: a.x")

	e.create(t, ident("tbl", "t"), catalog.KindTable, "file:///t/1.json")
	e.create(t, ident("vw", "v"), catalog.KindView, "file:///v/1.json")
	tests := []struct {
		ns  catalog.Namespace
		msg string
	}{
		{ns("a"), "Namespace a is not empty"},    // holds a namespace
		{ns("t"), "Namespace t is not empty"},    // holds a table
		{ns("v"), "Namespace v is not empty"},    // holds a view
		{ns("a", "b"), ""},                       // empty
		{ns("a"), ""},                            // empty now
		{ns("gone"), ""},                         // empty
		{ns("gone"), "Namespace does not exist"}, // dropped
	}
	for _, tt := range tests {
		err := e.s.DropNamespace(e.ctx, wh, tt.ns)
		switch {
		case tt.msg == "":
			if err != nil {
				t.Fatalf("DropNamespace(%v) = %v", tt.ns, err)
			}
			_, err := e.s.NamespaceProperties(e.ctx, wh, tt.ns)
			wantErr(t, err, floe.NotFound, "namespace", "")
		case strings.HasSuffix(tt.msg, "not empty"):
			wantErr(t, err, floe.NotEmpty, "namespace", tt.msg)
		default:
			wantErr(t, err, floe.NotFound, "namespace", tt.msg+": "+tt.ns.String())
		}
	}
	// After the entities go, their namespaces can be dropped.
	_, err := e.s.DeleteEntity(e.ctx, wh, ident("tbl", "t"), catalog.KindTable, nil)
	must(t, err)
	must(t, e.s.DropNamespace(e.ctx, wh, ns("t")))
	_, err = e.s.DeleteEntity(e.ctx, wh, ident("vw", "v"), catalog.KindView, nil)
	must(t, err)
	must(t, e.s.DropNamespace(e.ctx, wh, ns("v")))
	// A dropped namespace can be created again, empty.
	must(t, e.s.CreateNamespace(e.ctx, wh, ns("t"), nil))
	names, err := e.s.ListEntities(e.ctx, wh, ns("t"), catalog.KindTable, "", 0)
	must(t, err)
	if len(names) != 0 {
		t.Errorf("re-created namespace lists %v", names)
	}
}

// listAll pages through ListNamespaces with the given page size.
func listAll(t *testing.T, e *env, parent catalog.Namespace, limit int) []string {
	t.Helper()
	var out []string
	after := ""
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("ListNamespaces does not terminate")
		}
		got, err := e.s.ListNamespaces(e.ctx, wh, parent, after, limit)
		must(t, err)
		if got == nil {
			t.Fatal("ListNamespaces returned nil, want an empty slice")
		}
		if limit > 0 && len(got) > limit {
			t.Fatalf("page of %d namespaces, limit %d", len(got), limit)
		}
		for _, n := range got {
			out = append(out, n.String())
		}
		if limit <= 0 || len(got) < limit {
			return out
		}
		after = got[len(got)-1].Key()
	}
}

func testListNamespaces(t *testing.T, e *env) {
	e.setup(t)
	if got := listAll(t, e, nil, 0); len(got) != 0 {
		t.Fatalf("empty warehouse lists %v", got)
	}
	var top []string
	for i := range 23 {
		top = append(top, fmt.Sprintf("n%02d", i))
	}
	// Bytewise order, whatever the database's collation.
	top = append(top, "B", "a", "a b", "Ünï", "z", "Z_", "_x", "a-b", "é")
	for _, n := range top {
		must(t, e.s.CreateNamespace(e.ctx, wh, ns(n), nil))
	}
	var kids []string
	for i := range 9 {
		kids = append(kids, fmt.Sprintf("n05.c%d", i))
		must(t, e.s.CreateNamespace(e.ctx, wh, ns("n05", fmt.Sprintf("c%d", i)), nil))
	}
	must(t, e.s.CreateNamespace(e.ctx, wh, ns("n05", "c3", "deep"), nil))
	must(t, e.s.PutWarehouse(e.ctx, catalog.Warehouse{Name: "other", Location: "file:///o"}))
	must(t, e.s.CreateNamespace(e.ctx, "other", ns("n00x"), nil))
	slices.Sort(top)

	for _, limit := range []int{0, -1, 1, 2, 7, len(top) - 1, len(top), len(top) + 1, 1000} {
		if got := listAll(t, e, nil, limit); !slices.Equal(got, top) {
			t.Errorf("top level, limit %d:\n got %q\nwant %q", limit, got, top)
		}
		if got := listAll(t, e, ns("n05"), limit); !slices.Equal(got, kids) {
			t.Errorf("children of n05, limit %d:\n got %q\nwant %q", limit, got, kids)
		}
	}
	if got := listAll(t, e, ns("n05", "c3"), 0); !slices.Equal(got, []string{"n05.c3.deep"}) {
		t.Errorf("children of n05.c3 = %q", got)
	}
	if got := listAll(t, e, ns("n01"), 0); len(got) != 0 {
		t.Errorf("children of n01 = %q, want none", got)
	}
	// `after` need not name an existing namespace.
	got, err := e.s.ListNamespaces(e.ctx, wh, nil, "n10x", 3)
	must(t, err)
	if want := []string{"n11", "n12", "n13"}; len(got) != 3 || got[0].String() != want[0] || got[2].String() != want[2] {
		t.Errorf("after n10x: %v, want %v", got, want)
	}
	got, err = e.s.ListNamespaces(e.ctx, wh, ns("n05"), catalog.Namespace{"n05", "c6"}.Key(), 0)
	must(t, err)
	if len(got) != 2 || !slices.Equal(got[0], ns("n05", "c7")) {
		t.Errorf("children of n05 after n05.c6: %v", got)
	}
}

func testCreateEntity(t *testing.T, e *env) {
	e.setup(t, "db", "db.inner")
	tbl := ident("t", "db")
	tests := []struct {
		name   string
		swap   catalog.Swap
		kind   floe.Kind
		entity string
		msg    string
	}{
		{"table", catalog.Swap{Warehouse: wh, Ident: tbl, Kind: catalog.KindTable, New: "file:///t/1"}, 0, "", ""},
		{"view in nested namespace", catalog.Swap{Warehouse: wh, Ident: ident("v", "db", "inner"), Kind: catalog.KindView, New: "file:///v/1"}, 0, "", ""},
		{"table again", catalog.Swap{Warehouse: wh, Ident: tbl, Kind: catalog.KindTable, New: "file:///t/2"},
			floe.AlreadyExists, "table", "Table already exists: db.t"},
		{"view over table", catalog.Swap{Warehouse: wh, Ident: tbl, Kind: catalog.KindView, New: "file:///t/2"},
			floe.AlreadyExists, "table", "Table already exists: db.t"},
		{"table over view", catalog.Swap{Warehouse: wh, Ident: ident("v", "db", "inner"), Kind: catalog.KindTable, New: "file:///t/2"},
			floe.AlreadyExists, "view", "View already exists: db.inner.v"},
		{"missing namespace", catalog.Swap{Warehouse: wh, Ident: ident("t", "nope", "x"), Kind: catalog.KindTable, New: "file:///t/2"},
			floe.NotFound, "namespace", "Namespace does not exist: nope.x"},
		{"missing warehouse", catalog.Swap{Warehouse: "nowh", Ident: tbl, Kind: catalog.KindTable, New: "file:///t/2"},
			floe.NotFound, "namespace", "Namespace does not exist: db"},
		{"bad kind", catalog.Swap{Warehouse: wh, Ident: ident("x", "db"), Kind: "index", New: "file:///t/2"}, floe.Invalid, "", ""},
		{"empty location", catalog.Swap{Warehouse: wh, Ident: ident("x", "db"), Kind: catalog.KindTable}, floe.Invalid, "commit", ""},
	}
	for _, tt := range tests {
		err := e.s.SwapPointers(e.ctx, []catalog.Swap{tt.swap})
		if tt.kind == 0 {
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			continue
		}
		t.Logf("%s: %v", tt.name, err)
		wantErr(t, err, tt.kind, tt.entity, tt.msg)
	}
	if got := e.pointer(t, tbl); got != "file:///t/1" {
		t.Errorf("pointer = %q after failed creates", got)
	}
	if got := e.pointer(t, ident("x", "db")); got != "" {
		t.Errorf("invalid create left %q", got)
	}
	must(t, e.s.SwapPointers(e.ctx, nil))
}

func testEntity(t *testing.T, e *env) {
	e.setup(t, "db")
	id := ident("t", "db")
	_, err := e.s.Entity(e.ctx, wh, id)
	wantErr(t, err, floe.NotFound, "table", "")
	created := e.clock.Now()
	e.create(t, id, catalog.KindTable, "file:///t/1")
	e.create(t, ident("v", "db"), catalog.KindView, "file:///v/1")
	e.clock.Advance(time.Hour)

	ent, err := e.s.Entity(e.ctx, wh, id)
	must(t, err)
	want := catalog.Entity{Warehouse: wh, Ident: id, Kind: catalog.KindTable, MetadataLocation: "file:///t/1",
		UpdatedAt: created.Truncate(time.Microsecond)}
	if !entityEqual(ent, want) {
		t.Errorf("Entity = %+v, want %+v", ent, want)
	}
	if ent.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt %v is not in UTC", ent.UpdatedAt)
	}
	ent, err = e.s.Entity(e.ctx, wh, ident("v", "db"))
	must(t, err)
	if ent.Kind != catalog.KindView || ent.MetadataLocation != "file:///v/1" {
		t.Errorf("view entity = %+v", ent)
	}
	// Other warehouses and namespaces do not see it.
	for _, c := range []struct {
		wh string
		id catalog.Ident
	}{{"other", id}, {wh, ident("t", "db", "t")}, {wh, ident("t", "d")}, {wh, ident("T", "db")}} {
		_, err := e.s.Entity(e.ctx, c.wh, c.id)
		wantErr(t, err, floe.NotFound, "table", "")
	}
}

func entityEqual(a, b catalog.Entity) bool {
	return a.Warehouse == b.Warehouse && slices.Equal(a.Ident.Namespace, b.Ident.Namespace) && a.Ident.Name == b.Ident.Name &&
		a.Kind == b.Kind && a.MetadataLocation == b.MetadataLocation && a.UpdatedAt.Equal(b.UpdatedAt)
}

func testListEntities(t *testing.T, e *env) {
	e.setup(t, "db", "db.sub", "empty")
	_, err := e.s.ListEntities(e.ctx, wh, ns("nope"), catalog.KindTable, "", 0)
	wantErr(t, err, floe.NotFound, "namespace", "Namespace does not exist: nope")
	_, err = e.s.ListEntities(e.ctx, wh, ns("db"), "index", "", 0)
	wantErr(t, err, floe.Invalid, "", "")

	var tables, views []string
	for i := range 31 {
		n := fmt.Sprintf("t%02d", i)
		tables = append(tables, n)
		e.create(t, ident(n, "db"), catalog.KindTable, "file:///"+n)
		if i%3 == 0 {
			v := fmt.Sprintf("t%02dv", i) // interleaves with the tables
			views = append(views, v)
			e.create(t, ident(v, "db"), catalog.KindView, "file:///"+v)
		}
	}
	tables = append(tables, "B", "a", "Ünï", "_")
	for _, n := range tables[31:] {
		e.create(t, ident(n, "db"), catalog.KindTable, "file:///"+n)
	}
	slices.Sort(tables)
	e.create(t, ident("elsewhere", "db", "sub"), catalog.KindTable, "file:///e")

	pageAll := func(kind catalog.Kind, limit int) []string {
		var out []string
		after := ""
		for {
			got, err := e.s.ListEntities(e.ctx, wh, ns("db"), kind, after, limit)
			must(t, err)
			if got == nil {
				t.Fatal("ListEntities returned nil, want an empty slice")
			}
			if limit > 0 && len(got) > limit {
				t.Fatalf("page of %d, limit %d", len(got), limit)
			}
			out = append(out, got...)
			if limit <= 0 || len(got) < limit {
				return out
			}
			after = got[len(got)-1]
		}
	}
	for _, limit := range []int{0, 1, 4, 10, len(tables), 100} {
		if got := pageAll(catalog.KindTable, limit); !slices.Equal(got, tables) {
			t.Errorf("tables, limit %d:\n got %q\nwant %q", limit, got, tables)
		}
		if got := pageAll(catalog.KindView, limit); !slices.Equal(got, views) {
			t.Errorf("views, limit %d:\n got %q\nwant %q", limit, got, views)
		}
	}
	got, err := e.s.ListEntities(e.ctx, wh, ns("empty"), catalog.KindTable, "", 10)
	must(t, err)
	if got == nil || len(got) != 0 {
		t.Errorf("empty namespace lists %#v", got)
	}
	got, err = e.s.ListEntities(e.ctx, wh, ns("db"), catalog.KindTable, "t29x", 0)
	must(t, err)
	if !slices.Equal(got, []string{"t30", "Ünï"}) {
		t.Errorf("after t29x: %q", got)
	}
}

func testSwapPointers(t *testing.T, e *env) {
	e.setup(t, "db")
	id := ident("t", "db")
	e.create(t, id, catalog.KindTable, "m1")
	e.create(t, ident("v", "db"), catalog.KindView, "v1")
	e.clock.Advance(time.Minute)
	must(t, e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable, Old: "m1", New: "m2"}}))
	ent, err := e.s.Entity(e.ctx, wh, id)
	must(t, err)
	if ent.MetadataLocation != "m2" || !ent.UpdatedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Errorf("after swap: %+v (now %v)", ent, e.clock.Now())
	}

	tests := []struct {
		name   string
		swap   catalog.Swap
		kind   floe.Kind
		entity string
	}{
		{"stale old", catalog.Swap{Ident: id, Kind: catalog.KindTable, Old: "m1", New: "m3"}, floe.Conflict, "commit"},
		{"wrong kind", catalog.Swap{Ident: id, Kind: catalog.KindView, Old: "m2", New: "m3"}, floe.Conflict, "commit"},
		{"view as table", catalog.Swap{Ident: ident("v", "db"), Kind: catalog.KindTable, Old: "v1", New: "m3"}, floe.Conflict, "commit"},
		{"missing entity", catalog.Swap{Ident: ident("gone", "db"), Kind: catalog.KindTable, Old: "m1", New: "m3"}, floe.Conflict, "commit"},
		{"missing namespace", catalog.Swap{Ident: ident("t", "nope"), Kind: catalog.KindTable, Old: "m1", New: "m3"}, floe.NotFound, "namespace"},
		{"old is new", catalog.Swap{Ident: id, Kind: catalog.KindTable, Old: "m3", New: "m3"}, floe.Conflict, "commit"},
	}
	for _, tt := range tests {
		tt.swap.Warehouse = wh
		err := e.s.SwapPointers(e.ctx, []catalog.Swap{tt.swap})
		t.Logf("%s: %v", tt.name, err)
		wantErr(t, err, tt.kind, tt.entity, "")
		if tt.kind == floe.Conflict && !errors.Is(err, catalog.ErrCommitFailed) {
			t.Errorf("%s: errors.Is(%v, ErrCommitFailed) = false", tt.name, err)
		}
	}
	if got := e.pointer(t, id); got != "m2" {
		t.Errorf("pointer = %q after failed swaps, want m2", got)
	}
	if got := e.pointer(t, ident("v", "db")); got != "v1" {
		t.Errorf("view pointer = %q after failed swaps, want v1", got)
	}
	// A swap to the same location is allowed (a no-op commit).
	must(t, e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable, Old: "m2", New: "m2"}}))
	// The same entity twice in one call is refused.
	err = e.s.SwapPointers(e.ctx, []catalog.Swap{
		{Warehouse: wh, Ident: id, Kind: catalog.KindTable, Old: "m2", New: "m3"},
		{Warehouse: wh, Ident: id, Kind: catalog.KindTable, Old: "m3", New: "m4"},
	})
	wantErr(t, err, floe.Invalid, "commit", "")
}

func testSwapPointersAtomic(t *testing.T, e *env) {
	e.setup(t, "db", "db2")
	a, b, c := ident("a", "db"), ident("b", "db2"), ident("c", "db")
	e.create(t, a, catalog.KindTable, "a1")
	e.create(t, b, catalog.KindTable, "b1")
	e.create(t, ident("view", "db"), catalog.KindView, "v1")

	tests := []struct {
		name  string
		swaps []catalog.Swap
		kind  floe.Kind
	}{
		{"one stale", []catalog.Swap{
			{Ident: a, Old: "a1", New: "a2"}, {Ident: b, Old: "b0", New: "b2"}, {Ident: c, New: "c1"}}, floe.Conflict},
		{"stale first", []catalog.Swap{
			{Ident: b, Old: "b0", New: "b2"}, {Ident: a, Old: "a1", New: "a2"}}, floe.Conflict},
		{"create taken", []catalog.Swap{
			{Ident: a, Old: "a1", New: "a2"}, {Ident: c, New: "c1"}, {Ident: b, New: "b2"}}, floe.AlreadyExists},
		{"create over view", []catalog.Swap{
			{Ident: c, New: "c1"}, {Ident: ident("view", "db"), New: "x"}}, floe.AlreadyExists},
		{"missing namespace", []catalog.Swap{
			{Ident: a, Old: "a1", New: "a2"}, {Ident: ident("z", "nope"), New: "z1"}}, floe.NotFound},
		{"missing entity", []catalog.Swap{
			{Ident: a, Old: "a1", New: "a2"}, {Ident: ident("gone", "db2"), Old: "g1", New: "g2"}}, floe.Conflict},
	}
	for _, tt := range tests {
		for i := range tt.swaps {
			tt.swaps[i].Warehouse, tt.swaps[i].Kind = wh, catalog.KindTable
		}
		err := e.s.SwapPointers(e.ctx, tt.swaps)
		if floe.KindOf(err) != tt.kind {
			t.Errorf("%s: error %v, want kind %v", tt.name, err, tt.kind)
		}
		if pa, pb, pc := e.pointer(t, a), e.pointer(t, b), e.pointer(t, c); pa != "a1" || pb != "b1" || pc != "" {
			t.Fatalf("%s: a partial swap was applied: a=%q b=%q c=%q", tt.name, pa, pb, pc)
		}
	}
	must(t, e.s.SwapPointers(e.ctx, []catalog.Swap{
		{Warehouse: wh, Ident: b, Kind: catalog.KindTable, Old: "b1", New: "b2"},
		{Warehouse: wh, Ident: c, Kind: catalog.KindTable, New: "c1"},
		{Warehouse: wh, Ident: a, Kind: catalog.KindTable, Old: "a1", New: "a2"},
	}))
	if pa, pb, pc := e.pointer(t, a), e.pointer(t, b), e.pointer(t, c); pa != "a2" || pb != "b2" || pc != "c1" {
		t.Errorf("multi-swap: a=%q b=%q c=%q", pa, pb, pc)
	}
}

// race runs fn on n goroutines released together and returns their errors.
func race(n int, fn func(i int) error) []error {
	start := make(chan struct{})
	errs := make([]error, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
	return errs
}

// Contenders is how many goroutines race in the concurrency tests.
const Contenders = 16

func testSwapConcurrentRounds(t *testing.T, e *env) {
	e.setup(t, "db")
	id := ident("t", "db")
	e.create(t, id, catalog.KindTable, "r0")
	cur := "r0"
	for round := 1; round <= 12; round++ {
		errs := race(Contenders, func(i int) error {
			return e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable,
				Old: cur, New: fmt.Sprintf("r%d-g%d", round, i)}})
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: goroutines %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case floe.KindOf(err) != floe.Conflict:
				t.Fatalf("round %d: goroutine %d: %v (want success or Conflict)", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won", round)
		}
		cur = fmt.Sprintf("r%d-g%d", round, winner)
		if got := e.pointer(t, id); got != cur {
			t.Fatalf("round %d: pointer %q, want the winner's %q", round, got, cur)
		}
	}
}

func testSwapNoLostUpdate(t *testing.T, e *env) {
	e.setup(t, "db")
	id := ident("counter", "db")
	e.create(t, id, catalog.KindTable, "0")
	const perWorker = 6
	var conflicts [Contenders]int
	errs := race(Contenders, func(i int) error {
		for done := 0; done < perWorker; {
			ent, err := e.s.Entity(e.ctx, wh, id)
			if err != nil {
				return err
			}
			var v int
			if _, err := fmt.Sscan(ent.MetadataLocation, &v); err != nil {
				return err
			}
			err = e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable,
				Old: ent.MetadataLocation, New: fmt.Sprint(v + 1)}})
			if err != nil && floe.KindOf(err) == floe.Conflict {
				conflicts[i]++
				continue
			}
			if err != nil {
				return err
			}
			done++
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	total := 0
	for _, c := range conflicts {
		total += c
	}
	want := fmt.Sprint(Contenders * perWorker)
	if got := e.pointer(t, id); got != want {
		t.Errorf("counter = %s, want %s (lost updates)", got, want)
	}
	t.Logf("%d increments, %d conflicts", Contenders*perWorker, total)
}

func testSwapConcurrentCreate(t *testing.T, e *env) {
	e.setup(t, "db")
	for round := range 4 {
		id := ident(fmt.Sprintf("t%d", round), "db")
		errs := race(Contenders, func(i int) error {
			kind := catalog.KindTable
			if i%2 == 1 {
				kind = catalog.KindView
			}
			return e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: kind, New: fmt.Sprint(i)}})
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: goroutines %d and %d both created %v", round, winner, i, id)
			case err == nil:
				winner = i
			case floe.KindOf(err) != floe.AlreadyExists:
				t.Fatalf("round %d: goroutine %d: %v (want success or AlreadyExists)", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody created %v", round, id)
		}
		if got := e.pointer(t, id); got != fmt.Sprint(winner) {
			t.Fatalf("round %d: pointer %q, want %d", round, got, winner)
		}
	}
}

func testReplaceEntity(t *testing.T, e *env) {
	e.setup(t, "db")
	id := ident("t", "db")
	wantErr(t, e.s.ReplaceEntity(e.ctx, wh, ident("t", "nope"), catalog.KindTable, "x", "", catalog.Claimant{}),
		floe.NotFound, "namespace", "Namespace does not exist: nope")
	must(t, e.s.ReplaceEntity(e.ctx, wh, id, catalog.KindTable, "m1", "", catalog.Claimant{}))
	if got := e.pointer(t, id); got != "m1" {
		t.Errorf("created pointer %q", got)
	}
	e.clock.Advance(time.Second)
	must(t, e.s.ReplaceEntity(e.ctx, wh, id, catalog.KindTable, "m2", "", catalog.Claimant{}))
	ent, err := e.s.Entity(e.ctx, wh, id)
	must(t, err)
	if ent.MetadataLocation != "m2" || ent.Kind != catalog.KindTable || !ent.UpdatedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Errorf("replaced entity = %+v", ent)
	}
	e.create(t, ident("v", "db"), catalog.KindView, "v1")
	wantErr(t, e.s.ReplaceEntity(e.ctx, wh, ident("v", "db"), catalog.KindTable, "m3", "", catalog.Claimant{}),
		floe.AlreadyExists, "view", "View already exists: db.v")
	wantErr(t, e.s.ReplaceEntity(e.ctx, wh, id, catalog.KindView, "m3", "", catalog.Claimant{}),
		floe.AlreadyExists, "table", "Table already exists: db.t")
	if got := e.pointer(t, ident("v", "db")); got != "v1" {
		t.Errorf("view pointer %q", got)
	}
	must(t, e.s.ReplaceEntity(e.ctx, wh, ident("v", "db"), catalog.KindView, "v2", "", catalog.Claimant{}))
	if got := e.pointer(t, ident("v", "db")); got != "v2" {
		t.Errorf("view pointer %q after replace", got)
	}
}

func testDeleteEntity(t *testing.T, e *env) {
	e.setup(t, "db")
	tbl, vw := ident("t", "db"), ident("v", "db")
	_, err := e.s.DeleteEntity(e.ctx, wh, tbl, catalog.KindTable, nil)
	wantErr(t, err, floe.NotFound, "table", "Table does not exist: db.t")
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("errors.Is(%v, ErrNoSuchTable) = false", err)
	}
	_, err = e.s.DeleteEntity(e.ctx, wh, vw, catalog.KindView, nil)
	wantErr(t, err, floe.NotFound, "view", "View does not exist: db.v")
	if !errors.Is(err, catalog.ErrNoSuchView) {
		t.Errorf("errors.Is(%v, ErrNoSuchView) = false", err)
	}
	created := e.clock.Now()
	e.create(t, tbl, catalog.KindTable, "t1")
	e.create(t, vw, catalog.KindView, "v1")
	// The wrong kind deletes nothing.
	_, err = e.s.DeleteEntity(e.ctx, wh, tbl, catalog.KindView, nil)
	wantErr(t, err, floe.NotFound, "view", "View does not exist: db.t")
	_, err = e.s.DeleteEntity(e.ctx, wh, vw, catalog.KindTable, nil)
	wantErr(t, err, floe.NotFound, "table", "Table does not exist: db.v")

	ent, err := e.s.DeleteEntity(e.ctx, wh, tbl, catalog.KindTable, nil)
	must(t, err)
	want := catalog.Entity{Warehouse: wh, Ident: tbl, Kind: catalog.KindTable, MetadataLocation: "t1", UpdatedAt: created.Truncate(time.Microsecond)}
	if !entityEqual(ent, want) {
		t.Errorf("deleted %+v, want %+v", ent, want)
	}
	if got := e.pointer(t, tbl); got != "" {
		t.Errorf("table still points at %q", got)
	}
	ent, err = e.s.DeleteEntity(e.ctx, wh, vw, catalog.KindView, nil)
	must(t, err)
	if ent.MetadataLocation != "v1" || ent.Kind != catalog.KindView {
		t.Errorf("deleted view %+v", ent)
	}
	_, err = e.s.DeleteEntity(e.ctx, wh, tbl, catalog.KindTable, nil)
	wantErr(t, err, floe.NotFound, "table", "Table does not exist: db.t")
	// The name is free again, for either kind.
	e.create(t, tbl, catalog.KindView, "v9")
}

func testRenameEntity(t *testing.T, e *env) {
	e.setup(t, "db", "db2", "db.sub")
	t1, t2, v1 := ident("t1", "db"), ident("t2", "db"), ident("v1", "db")
	e.create(t, t1, catalog.KindTable, "m-t1")
	e.create(t, t2, catalog.KindTable, "m-t2")
	e.create(t, v1, catalog.KindView, "m-v1")

	tests := []struct {
		name     string
		from, to catalog.Ident
		kind     catalog.Kind
		err      floe.Kind
		entity   string
		msg      string
	}{
		{"missing source", ident("no", "db"), ident("x", "db"), catalog.KindTable, floe.NotFound, "table", "Table does not exist: db.no"},
		{"missing source view", ident("no", "db"), ident("x", "db"), catalog.KindView, floe.NotFound, "view", "View does not exist: db.no"},
		{"source of other kind", v1, ident("x", "db"), catalog.KindTable, floe.NotFound, "table", "Table does not exist: db.v1"},
		{"source namespace missing", ident("t1", "zz"), ident("x", "db"), catalog.KindTable, floe.NotFound, "table", "Table does not exist: zz.t1"},
		{"destination namespace missing", t1, ident("x", "nope"), catalog.KindTable, floe.NotFound, "namespace", "Namespace does not exist: nope"},
		{"destination nested namespace missing", t1, ident("x", "db", "nope"), catalog.KindTable, floe.NotFound, "namespace", "Namespace does not exist: db.nope"},
		{"destination is a table", t1, t2, catalog.KindTable, floe.AlreadyExists, "table", "Table already exists: db.t2"},
		{"destination is a view", t1, v1, catalog.KindTable, floe.AlreadyExists, "view", "View already exists: db.v1"},
		{"view onto table", v1, t1, catalog.KindView, floe.AlreadyExists, "table", "Table already exists: db.t1"},
		{"onto itself", t1, t1, catalog.KindTable, floe.AlreadyExists, "table", "Table already exists: db.t1"},
	}
	for _, tt := range tests {
		err := e.s.RenameEntity(e.ctx, wh, tt.from, tt.to, tt.kind)
		wantErr(t, err, tt.err, tt.entity, tt.msg)
	}
	for id, want := range map[*catalog.Ident]string{&t1: "m-t1", &t2: "m-t2", &v1: "m-v1"} {
		if got := e.pointer(t, *id); got != want {
			t.Errorf("after failed renames %v = %q, want %q", *id, got, want)
		}
	}

	e.clock.Advance(time.Minute)
	dest := ident("moved", "db", "sub")
	must(t, e.s.RenameEntity(e.ctx, wh, t1, dest, catalog.KindTable))
	if got := e.pointer(t, t1); got != "" {
		t.Errorf("source still points at %q", got)
	}
	ent, err := e.s.Entity(e.ctx, wh, dest)
	must(t, err)
	if ent.Kind != catalog.KindTable || ent.MetadataLocation != "m-t1" {
		t.Errorf("renamed entity = %+v", ent)
	}
	must(t, e.s.RenameEntity(e.ctx, wh, v1, ident("v1", "db2"), catalog.KindView))
	ent, err = e.s.Entity(e.ctx, wh, ident("v1", "db2"))
	must(t, err)
	if ent.Kind != catalog.KindView || ent.MetadataLocation != "m-v1" {
		t.Errorf("renamed view = %+v", ent)
	}
	names, err := e.s.ListEntities(e.ctx, wh, ns("db"), catalog.KindTable, "", 0)
	must(t, err)
	if !slices.Equal(names, []string{"t2"}) {
		t.Errorf("tables left in db: %q", names)
	}
	// The emptied namespace can be dropped; the destination cannot.
	must(t, e.s.RenameEntity(e.ctx, wh, t2, ident("t2", "db2"), catalog.KindTable))
	wantErr(t, e.s.DropNamespace(e.ctx, wh, ns("db", "sub")), floe.NotEmpty, "namespace", "Namespace db.sub is not empty")
	wantErr(t, e.s.DropNamespace(e.ctx, wh, ns("db2")), floe.NotEmpty, "namespace", "Namespace db2 is not empty")
}

// testTableLocations: no table may be placed at, above or below another
// table's location (vended credentials are scoped by location prefix);
// siblings sharing a name prefix, renames and moves away are fine.
func testTableLocations(t *testing.T, e *env) {
	e.setup(t, "a", "b")
	claim := func(id catalog.Ident, old, meta, loc string) error {
		return e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable, Old: old, New: meta,
			Location: loc, ClaimLocation: true}})
	}
	must(t, claim(ident("t", "a"), "", "m1", "s3://floe/a/t"))
	tests := []struct {
		name, loc string
		ok        bool
	}{
		{"same location", "s3://floe/a/t", false},
		{"same with slash", "s3://floe/a/t/", false},
		{"inside", "s3://floe/a/t/data", false},
		{"deep inside", "s3://floe/a/t/x/y/z", false},
		{"parent", "s3://floe/a", false},
		{"root", "s3://floe", false},
		{"sibling sharing a prefix", "s3://floe/a/t2", true},
		{"sibling with dash", "s3://floe/a/t-1", true},
		{"other namespace", "s3://floe/b/t", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := ident(fmt.Sprint("n", i), "b")
			err := claim(id, "", fmt.Sprint("m-", i), tt.loc)
			if tt.ok {
				must(t, err)
				must(t, errOnly(e.s.DeleteEntity(e.ctx, wh, id, catalog.KindTable, nil)))
				return
			}
			wantErr(t, err, floe.Invalid, "location", "")
			if !strings.Contains(err.Error(), "a.t") {
				t.Errorf("error %q does not name the owner a.t", err)
			}
			if e.pointer(t, id) != "" {
				t.Error("refused table was created")
			}
		})
	}
	// Registering over a location is refused too (ReplaceEntity).
	wantErr(t, e.s.ReplaceEntity(e.ctx, wh, ident("r", "b"), catalog.KindTable, "m9", "s3://floe/a/t/metadata", catalog.Claimant{}), floe.Invalid, "location", "")
	// A commit that keeps its location does not claim; moving into another table's location is refused.
	must(t, e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: ident("t", "a"), Kind: catalog.KindTable, Old: "m1", New: "m2", Location: "s3://floe/a/t"}}))
	must(t, claim(ident("u", "b"), "", "u1", "s3://floe/b/u"))
	wantErr(t, claim(ident("u", "b"), "u1", "u2", "s3://floe/a/t/u"), floe.Invalid, "location", "")
	// Moving away frees the old location; renaming keeps the claim.
	must(t, claim(ident("t", "a"), "m2", "m3", "s3://floe/a/moved"))
	must(t, claim(ident("v", "b"), "", "v1", "s3://floe/a/t"))
	must(t, e.s.RenameEntity(e.ctx, wh, ident("v", "b"), ident("w", "b"), catalog.KindTable))
	wantErr(t, claim(ident("x", "b"), "", "x1", "s3://floe/a/t/x"), floe.Invalid, "location", "")
}

func errOnly(_ any, err error) error { return err }

// testTombstones: a drop that keeps a tombstone keeps its location claimed
// (at, inside and above) against everyone but its owner and
// administrators, whose claim consumes it; it can be listed and released.
func testTombstones(t *testing.T, e *env) {
	e.setup(t, "a", "b")
	claim := func(id catalog.Ident, loc string, by catalog.Claimant) error {
		return e.s.SwapPointers(e.ctx, []catalog.Swap{{Warehouse: wh, Ident: id, Kind: catalog.KindTable, New: "m-" + id.Name,
			Location: loc, ClaimLocation: true, Claimant: by}})
	}
	alice, bob, admin := catalog.Claimant{Principal: "p-alice"}, catalog.Claimant{Principal: "p-bob"}, catalog.Claimant{Admin: true}
	must(t, claim(ident("t", "a"), "s3://floe/a/t", alice))
	// The location defaults to the stored one.
	must(t, errOnly(e.s.DeleteEntity(e.ctx, wh, ident("t", "a"), catalog.KindTable, &catalog.Tombstone{Owner: "p-alice"})))
	tombs, err := e.s.Tombstones(e.ctx, wh, "", 0)
	must(t, err)
	if len(tombs) != 1 || tombs[0].Location != "s3://floe/a/t" || tombs[0].Owner != "p-alice" || tombs[0].Ident.String() != "a.t" ||
		!tombs[0].DroppedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("tombstones = %+v", tombs)
	}
	for _, loc := range []string{"s3://floe/a/t", "s3://floe/a/t/x", "s3://floe/a"} {
		wantErr(t, claim(ident("x", "b"), loc, bob), floe.Forbidden, "location", "")
		wantErr(t, e.s.ReplaceEntity(e.ctx, wh, ident("x", "b"), catalog.KindTable, "m", loc, bob), floe.Forbidden, "location", "")
		if over, err := e.s.TombstonesOver(e.ctx, wh, loc); err != nil || len(over) != 1 {
			t.Errorf("TombstonesOver(%s) = %+v, %v", loc, over, err)
		}
	}
	must(t, claim(ident("sib", "b"), "s3://floe/a/t2", bob)) // a sibling sharing a prefix is free
	if over, err := e.s.TombstonesOver(e.ctx, wh, "s3://floe/a/t2"); err != nil || len(over) != 0 {
		t.Errorf("TombstonesOver(sibling) = %+v, %v", over, err)
	}
	// A refused claim in a multi-swap leaves nothing behind.
	err = e.s.SwapPointers(e.ctx, []catalog.Swap{
		{Warehouse: wh, Ident: ident("ok", "b"), Kind: catalog.KindTable, New: "m", Location: "s3://floe/b/ok", ClaimLocation: true, Claimant: bob},
		{Warehouse: wh, Ident: ident("no", "b"), Kind: catalog.KindTable, New: "m", Location: "s3://floe/a/t", ClaimLocation: true, Claimant: bob}})
	wantErr(t, err, floe.Forbidden, "location", "")
	if e.pointer(t, ident("ok", "b")) != "" {
		t.Error("a swap of a refused batch was applied")
	}
	// The owner's claim consumes it.
	must(t, claim(ident("t", "a"), "s3://floe/a/t/inner", alice))
	if tombs, _ := e.s.Tombstones(e.ctx, wh, "", 0); len(tombs) != 0 {
		t.Fatalf("tombstones after the owner's claim: %+v", tombs)
	}
	// An ownerless tombstone yields only to an administrator.
	must(t, errOnly(e.s.DeleteEntity(e.ctx, wh, ident("t", "a"), catalog.KindTable, &catalog.Tombstone{Location: "s3://floe/a/t/inner"})))
	wantErr(t, claim(ident("y", "b"), "s3://floe/a/t/inner", catalog.Claimant{}), floe.Forbidden, "location", "")
	must(t, claim(ident("y", "b"), "s3://floe/a/t/inner/y", admin))
	// Listing pages, and release.
	for i, loc := range []string{"s3://floe/c/1", "s3://floe/c/2", "s3://floe/c/3"} {
		id := ident(fmt.Sprint("c", i), "b")
		must(t, claim(id, loc, bob))
		must(t, errOnly(e.s.DeleteEntity(e.ctx, wh, id, catalog.KindTable, &catalog.Tombstone{Location: loc})))
	}
	page, err := e.s.Tombstones(e.ctx, wh, "s3://floe/c/1", 1)
	must(t, err)
	if len(page) != 1 || page[0].Location != "s3://floe/c/2" {
		t.Errorf("page after c/1 = %+v", page)
	}
	got, err := e.s.DeleteTombstone(e.ctx, wh, "s3://floe/c/2/")
	must(t, err)
	if got.Ident.String() != "b.c1" {
		t.Errorf("released %+v", got)
	}
	_, err = e.s.DeleteTombstone(e.ctx, wh, "s3://floe/c/2")
	wantErr(t, err, floe.NotFound, "tombstone", "")
	must(t, claim(ident("z", "b"), "s3://floe/c/2", bob))
	// A view's drop keeps nothing.
	e.create(t, ident("v", "b"), catalog.KindView, "v1")
	must(t, errOnly(e.s.DeleteEntity(e.ctx, wh, ident("v", "b"), catalog.KindView, &catalog.Tombstone{})))
	if tombs, _ := e.s.Tombstones(e.ctx, wh, "", 0); len(tombs) != 2 {
		t.Errorf("tombstones = %+v, want c/1 and c/3", tombs)
	}
}
