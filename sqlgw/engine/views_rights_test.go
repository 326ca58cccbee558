package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/view"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/sqlgw/engine"
)

// foreignView stores a view as another engine would: representations of
// the given dialects (dialect, sql pairs), a default catalog and the
// namespace crm as default namespace, and props.
func (e *env) foreignView(t *testing.T, name, defaultCatalog string, props map[string]string, reps ...string) {
	t.Helper()
	var rs []view.Representation
	for i := 0; i+1 < len(reps); i += 2 {
		rs = append(rs, view.NewRepresentation(reps[i+1], reps[i]))
	}
	ver := &view.Version{VersionID: 1, SchemaID: 0, TimestampMS: time.Now().UnixMilli(),
		Summary: view.VersionSummary{"engine-name": "spark"}, Representations: rs,
		DefaultCatalog: defaultCatalog, DefaultNamespace: []string{"crm"}}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	if props == nil {
		props = map[string]string{}
	}
	if _, err := e.f.App.Catalog().CreateView(context.Background(), e.f.Warehouse, catalog.Namespace{"crm"},
		catalog.CreateViewRequest{Name: name, Schema: sc, Version: ver, Properties: props}); err != nil {
		t.Fatal(err)
	}
}

// Views other engines wrote: a spark or trino representation runs when
// its SQL is within the shared subset (translated on the syntax tree),
// preferring duckdb, then trino, then spark; otherwise the error names the
// dialects present and why none runs.
func TestViewsOfOtherEngines(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	for i, tc := range []struct {
		catalog string
		reps    []string // dialect, sql, ...
		ids     []int64  // the ids read; nil: refused
		err     string   // part of the refusal's message
	}{
		{"spark_cat", []string{"spark", "SELECT `id` FROM `spark_cat`.`crm`.`people` WHERE `id` > 1"}, []int64{2, 3, 4}, ""},
		{"spark_cat", []string{"spark", `SELECT id FROM people WHERE name = "person-2" OR id = 4`}, []int64{2, 4}, ""},
		{"spark_cat", []string{"spark", "WITH people AS (SELECT 7 AS id) SELECT id FROM people"}, []int64{7}, ""},
		{"spark_cat", []string{"spark", "SELECT id FROM crm.people WHERE date_format(name, 'y') = 'x'"}, nil,
			"view crm.v3 has representations spark (uses function date_format, outside the subset Floe runs): create a duckdb or trino representation"},
		{"spark_cat", []string{"spark", "SELECT id FROM other.crm.people"}, nil, "spark (names catalog other"},
		{"spark_cat", []string{"spark", `SELECT id FROM crm.people WHERE name = "a\"b"`}, nil, "spark (quotes or escapes"},
		{"spark_cat", []string{"spark", "SELECT id FROM crm.people LIMIT 1"}, nil, "spark (uses LIMIT"},
		{"iceberg", []string{"trino", `SELECT "id" FROM "iceberg"."crm"."people" WHERE id <= 2`}, []int64{1, 2}, ""},
		{"iceberg", []string{"trino", `SELECT id / 2 AS id FROM crm.people`}, nil, "trino (uses function /"},
		{"iceberg", []string{"trino", `SELECT CAST(id AS varchar) AS id FROM crm.people`}, nil, "trino (uses a cast expression"},
		// duckdb first, then trino, then spark.
		{"x", []string{"spark", "SELECT id FROM crm.people WHERE id = 1", "duckdb", "SELECT id FROM crm.people WHERE id = 2"}, []int64{2}, ""},
		{"x", []string{"spark", "SELECT id FROM crm.people WHERE id = 1", "trino", "SELECT id FROM crm.people WHERE id = 3"}, []int64{3}, ""},
		{"x", []string{"trino", "SELECT id FROM crm.people LIMIT 1", "spark", "SELECT id FROM crm.people WHERE id = 1"}, []int64{1}, ""},
		{"x", []string{"hive", "SELECT id FROM crm.people"}, nil, "hive (a dialect Floe does not run)"},
	} {
		name := fmt.Sprintf("v%d", i)
		e.foreignView(t, name, tc.catalog, nil, tc.reps...)
		q := "SELECT id FROM crm." + name + " ORDER BY id"
		if tc.ids == nil {
			execErr(t, c, q, "0A000", tc.err)
			continue
		}
		rows := mustRows(t, c, q)
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprint(r[0]))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.ids) {
			t.Errorf("%v: ids %v, want %v", tc.reps, got, tc.ids)
		}
	}
}

// grantOn grants priv on a securable and returns the grant.
func (e *env) grantOn(t *testing.T, principal string, priv authz.Privilege, on authz.Securable, f *authz.DataFilter) authz.Grant {
	t.Helper()
	g, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(principal), Privilege: priv, On: on, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Definer and invoker rights: a definer view reads its tables with its
// owner's rights (and row filters), the reader needs SELECT on the view
// alone and reaches the base table by no other path; its own filters on
// the view apply; an owner who lost SELECT breaks the view; an invoker
// view reads with the reader's rights.
func TestViewDefinerRights(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	wh := e.f.Warehouse
	crm := authz.NamespaceOf(wh, catalog.Namespace{"crm"})
	view := func(name string) authz.Securable {
		return authz.View(wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: name})
	}
	ctx := context.Background()
	// The owner may read people 1-3 (a row filter) and create views.
	e.grantOn(t, "owner", authz.CreateView, crm, nil)
	ownerRead := e.grantOn(t, "owner", authz.Select, authz.Table(wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"}), &authz.DataFilter{RowFilter: "id <= 3"})
	owner := e.as(t, "owner")
	execTag(t, owner, "CREATE VIEW crm.dv SECURITY DEFINER AS SELECT id, name FROM crm.people")
	execTag(t, owner, "CREATE VIEW crm.iv SECURITY INVOKER AS SELECT id, name FROM crm.people")
	execTag(t, owner, "CREATE VIEW crm.plain AS SELECT id, name FROM crm.people")
	v, err := e.f.App.Catalog().LoadView(ctx, wh, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "dv"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Metadata.Properties()["floe.security"] != "definer" || v.Metadata.CurrentVersion().Summary["floe.definer"] != "owner" {
		t.Fatalf("definer view: properties %v, summary %v", v.Metadata.Properties(), v.Metadata.CurrentVersion().Summary)
	}
	// An administrator's rights are its token's: no definer view.
	execErr(t, e.admin(t), "CREATE VIEW crm.adm SECURITY DEFINER AS SELECT id FROM crm.people", "0A000", "administrator")

	// reader: SELECT on the views alone, and CREATE_VIEW (to try its own views).
	for _, n := range []string{"dv", "iv", "plain"} {
		e.grantOn(t, "reader", authz.Select, view(n), nil)
	}
	e.grantOn(t, "reader", authz.CreateView, crm, nil)
	reader := e.as(t, "reader")
	ids := func(c interface{}, q string) string {
		rows := mustRows(t, reader, q)
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprint(r[0]))
		}
		return strings.Join(out, ",")
	}
	if got := ids(nil, "SELECT id FROM crm.dv ORDER BY id"); got != "1,2,3" {
		t.Fatalf("through the definer view: ids %s, want the owner's 1,2,3", got)
	}
	// Every other path to the base table is refused.
	for _, tc := range []struct{ sql, code string }{
		{"SELECT * FROM crm.people", "42501"},
		{"WITH x AS (SELECT * FROM crm.people) SELECT * FROM x", "42501"},
		{"SELECT d.id, p.ssn FROM crm.dv d JOIN crm.people p ON d.id = p.id", "42501"},
		{"SELECT * FROM crm.dv WHERE id IN (SELECT id FROM crm.people)", "42501"},
		{"SELECT * FROM crm.iv", "42501"},
		{"SELECT * FROM crm.plain", "42501"},
		{"SELECT * FROM crm.dv AT (VERSION => 1)", "0A000"},
		{"CREATE VIEW crm.steal AS SELECT * FROM crm.people", "42501"},
		{"CREATE VIEW crm.steal AS SELECT d.id, p.ssn FROM crm.dv d JOIN crm.people p ON d.id = p.id", "42501"},
		{"CREATE VIEW crm.steal SECURITY DEFINER AS SELECT * FROM crm.people", "42501"},
		{"CREATE OR REPLACE VIEW crm.dv SECURITY INVOKER AS SELECT id FROM crm.people", "42501"},
		{"DROP VIEW crm.dv", "42501"},
	} {
		execErr(t, reader, tc.sql, tc.code, "")
	}
	// The system catalog shows metadata, never rows.
	for _, q := range []string{"SELECT * FROM information_schema.columns", "SELECT * FROM information_schema.tables", "SELECT * FROM pg_catalog.pg_class"} {
		for _, r := range mustRows(t, reader, q) {
			if s := fmt.Sprint(r); strings.Contains(s, "person-") || strings.Contains(s, "ssn-") {
				t.Fatalf("%s shows data: %s", q, s)
			}
		}
	}
	// The reader's own invoker view over the definer view: its own part
	// resolves with its rights, the definer view's with the owner's.
	execTag(t, reader, "CREATE VIEW crm.mine AS SELECT id FROM crm.dv WHERE id > 1")
	if got := ids(nil, "SELECT id FROM crm.mine ORDER BY id"); got != "2,3" {
		t.Fatalf("reader's view over the definer view: %s", got)
	}
	// A view another engine wrote claiming definer rights, with no definer
	// in its version, is refused (fail closed).
	e.foreignView(t, "forged", "spark_cat", map[string]string{"floe.security": "definer"}, "spark", "SELECT id FROM crm.people")
	e.grantOn(t, "reader", authz.Select, view("forged"), nil)
	execErr(t, reader, "SELECT * FROM crm.forged", "42501", "records no definer")

	// The reader's own row filter on the view still applies.
	e.grantOn(t, "narrow", authz.Select, view("dv"), &authz.DataFilter{RowFilter: "id = 2", ExcludeColumns: []string{"name"}})
	rows := mustRows(t, e.as(t, "narrow"), "SELECT * FROM crm.dv")
	if len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] != int64(2) {
		t.Fatalf("filtered reader through the definer view: %v, want [[2]]", rows)
	}
	// Invoker rights: the invoker's filter on the base table.
	e.grantOn(t, "filtered", authz.Select, view("iv"), nil)
	e.grant(t, "filtered", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "id >= 3"})
	if rows := mustRows(t, e.as(t, "filtered"), "SELECT id FROM crm.iv ORDER BY id"); fmt.Sprint(rows) != "[[3] [4]]" {
		t.Fatalf("through the invoker view: %v, want the invoker's rows 3, 4", rows)
	}

	// The owner loses SELECT on the table: the definer view fails, naming both.
	if err := e.f.App.Authz().RevokeID(ctx, ownerRead.ID); err != nil {
		t.Fatal(err)
	}
	execErr(t, e.as(t, "reader"), "SELECT * FROM crm.dv", "42501", `its owner principal "owner"`)
	execErr(t, e.as(t, "reader"), "SELECT * FROM crm.dv", "42501", "crm.people")
}

// The engine keeps at most MaxViewTrees parsed view expansions: reading
// more distinct views than that leaves the cache at its bound, and every
// view still reads right.
func TestViewTreeCacheBound(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	n := engine.MaxViewTrees + 8
	execTag(t, c, "CREATE SCHEMA cache0")
	for i := range n {
		execTag(t, c, fmt.Sprintf("CREATE VIEW cache0.v%d AS SELECT %d AS k", i, i))
		rows := mustRows(t, c, fmt.Sprintf("SELECT k FROM cache0.v%d", i))
		if len(rows) != 1 || fmt.Sprint(rows[0][0]) != fmt.Sprint(i) {
			t.Fatalf("view %d: %v", i, rows)
		}
	}
	if got := e.f.App.SQLEngine().ViewTreesForTest(); got != engine.MaxViewTrees {
		t.Fatalf("%d view trees kept, want the bound %d", got, engine.MaxViewTrees)
	}
}

// A table lookup that finds a view answers NotFound with the usual
// message, carrying the view's pointer (what the SQL endpoint loads the
// view from, without a second lookup); a name that is nothing carries none.
func TestOtherKindLookup(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	execTag(t, c, "CREATE SCHEMA ok")
	execTag(t, c, "CREATE VIEW ok.v AS SELECT 1 AS a")
	for _, tc := range []struct {
		name string
		view bool
	}{{"v", true}, {"nothing", false}} {
		_, err := e.f.App.Catalog().LoadTable(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"ok"}, Name: tc.name})
		if err == nil || err.Error() != "Table does not exist: ok."+tc.name {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var other *catalog.OtherKindError
		if errors.As(err, &other) != tc.view || tc.view && (other.Entity.Kind != catalog.KindView || other.Entity.MetadataLocation == "") {
			t.Fatalf("%s: %#v", tc.name, err)
		}
	}
}
