package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// A view never widens access: its query runs with the invoker's
// privileges, row filters included.
func TestViewDoesNotWidenAccess(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	execTag(t, c, "CREATE VIEW crm.v AS SELECT id, name FROM crm.people")
	viewID := catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "v"}
	grantView := func(p string) {
		if _, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(p), Privilege: authz.Select,
			On: authz.View(e.f.Warehouse, viewID)}); err != nil {
			t.Fatal(err)
		}
	}
	// SELECT on the view, a row filter on the table: the filtered rows.
	grantView("filtered")
	e.grant(t, "filtered", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "id <= 2"})
	if n := len(mustRows(t, e.as(t, "filtered"), "SELECT * FROM crm.v")); n != 2 {
		t.Fatalf("through the view: %d rows, want the 2 the filter shows", n)
	}
	// SELECT on the view, none on the table: refused.
	grantView("viewonly")
	execErr(t, e.as(t, "viewonly"), "SELECT * FROM crm.v", "42501", "")
	// No SELECT on the view: refused, whatever the table's grants.
	e.grant(t, "tableonly", authz.Select, "crm", "people", nil)
	execErr(t, e.as(t, "tableonly"), "SELECT * FROM crm.v", "42501", "")
}

func TestViewDDL(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	execTag(t, c, `create view "floe"."crm"."stg" as (select id, upper(name) as name from crm.people where id > 1)`)
	v, err := e.f.App.Catalog().LoadView(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "stg"})
	if err != nil {
		t.Fatal(err)
	}
	ver := v.Metadata.CurrentVersion()
	const query = "(select id, upper(name) as name from crm.people where id > 1)"
	const trino = `(select id, upper(name) as name from "floe"."crm"."people" where id > 1)`
	if len(ver.Representations) != 3 || ver.Representations[0].Dialect != "duckdb" || ver.Representations[0].Sql != query ||
		ver.Representations[1].Dialect != "trino" || ver.Representations[1].Sql != trino ||
		ver.Representations[2].Dialect != "spark" || ver.Representations[2].Sql != query {
		t.Fatalf("representations %+v", ver.Representations)
	}
	if len(ver.DefaultNamespace) != 1 || ver.DefaultNamespace[0] != "crm" {
		t.Fatalf("default namespace %v", ver.DefaultNamespace)
	}
	if f := v.Metadata.CurrentSchema().Fields(); len(f) != 2 || f[1].Name != "name" {
		t.Fatalf("schema %v", v.Metadata.CurrentSchema())
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.stg")); n != 3 {
		t.Fatalf("view: %d rows", n)
	}
	// Views over views, and tables built from views (dbt's table model).
	execTag(t, c, "CREATE VIEW crm.stg2 AS SELECT id FROM crm.stg WHERE id > 2")
	execTag(t, c, "CREATE TABLE crm.fct AS SELECT * FROM crm.stg2")
	if n := len(mustRows(t, c, "SELECT * FROM crm.fct")); n != 2 {
		t.Fatalf("fct: %d rows", n)
	}
	execErr(t, c, "CREATE VIEW crm.stg AS SELECT 1 AS a", "42P07", "")
	execTag(t, c, "CREATE OR REPLACE VIEW crm.stg AS SELECT id, name FROM crm.people")
	if n := len(mustRows(t, c, "SELECT id, name FROM crm.stg")); n != 4 {
		t.Fatalf("replaced view: %d rows", n)
	}
	execTag(t, c, "ALTER VIEW crm.stg2 RENAME TO stg3")
	if n := len(mustRows(t, c, "SELECT * FROM crm.stg3")); n != 2 {
		t.Fatalf("renamed view: %d rows", n)
	}
	execTag(t, c, "DROP VIEW crm.stg3 CASCADE")
	execTag(t, c, "DROP VIEW IF EXISTS crm.stg3")
	execErr(t, c, "DROP VIEW crm.stg3", "42P01", "")
	execErr(t, c, "SELECT * FROM crm.stg3", "42P01", "")
	// A principal needs CREATE_VIEW on the namespace.
	execErr(t, e.as(t, "nobody"), "CREATE VIEW crm.x AS SELECT 1 AS a", "42501", "CREATE_VIEW")
	// A view that names itself (through a replace) does not loop.
	execTag(t, c, "CREATE VIEW crm.loop1 AS SELECT 1 AS a")
	execTag(t, c, "CREATE VIEW crm.loop2 AS SELECT * FROM crm.loop1")
	execTag(t, c, "CREATE OR REPLACE VIEW crm.loop1 AS SELECT * FROM crm.loop2")
	execErr(t, c, "SELECT * FROM crm.loop1", "54001", "")
}

// dbt's view materialization: inside one block, the new view under an
// intermediate name, the old one renamed to a backup (with ALTER TABLE),
// the intermediate renamed to the model's name; the backup dropped after.
func TestViewMaterializationInBlock(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	run := func(where string) {
		execTag(t, c, "BEGIN")
		execTag(t, c, `drop view if exists "floe"."crm"."v__dbt_tmp" cascade`)
		execTag(t, c, `create view "floe"."crm"."v__dbt_tmp" as (select id from crm.people where `+where+`)`)
		if e.viewExists(t, "v") {
			execTag(t, c, `alter table "floe"."crm"."v" rename to "v__dbt_backup"`)
		}
		execTag(t, c, `alter table "floe"."crm"."v__dbt_tmp" rename to "v"`)
		// Inside the block the names are as the block left them.
		mustRows(t, c, `SELECT id FROM crm.v`)
		execTag(t, c, "COMMIT")
		execTag(t, c, `drop view if exists "floe"."crm"."v__dbt_backup" cascade`)
	}
	run("id > 1")
	if n := len(mustRows(t, c, "SELECT id FROM crm.v")); n != 3 {
		t.Fatalf("first run: %d rows", n)
	}
	run("id > 2")
	if n := len(mustRows(t, c, "SELECT * FROM crm.v")); n != 2 {
		t.Fatalf("rerun: %d rows", n)
	}
	if e.viewExists(t, "v__dbt_tmp") || e.viewExists(t, "v__dbt_backup") {
		t.Fatal("intermediate or backup view left")
	}
	// A rolled-back block creates, renames and drops no view.
	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE VIEW crm.w AS SELECT 1 AS a")
	execTag(t, c, "ALTER VIEW crm.v RENAME TO v2")
	execTag(t, c, "ROLLBACK")
	if e.viewExists(t, "w") || !e.viewExists(t, "v") || e.viewExists(t, "v2") {
		t.Fatal("a rolled-back block changed views")
	}
}

func (e *env) viewExists(t *testing.T, name string) bool {
	t.Helper()
	ok, err := e.f.App.Catalog().Exists(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: name}, catalog.KindView)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// A view whose query means the same in Spark SQL also gets a "spark"
// representation (quoted identifiers in backticks, the warehouse
// qualifier dropped); any other keeps its duckdb one alone.
func TestViewSparkRepresentation(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	execTag(t, c, "CREATE SCHEMA vs")
	execTag(t, c, "CREATE TABLE vs.t (id bigint, name text, amount double, stage text)")
	for i, tc := range []struct {
		query string
		spark string // "" = no spark representation
		trino string // "" = no trino representation
	}{
		{`select id, name as account_name, coalesce(amount, 0) as amount from "floe"."vs"."t"`,
			"select id, name as account_name, coalesce(amount, 0) as amount from `vs`.`t`",
			`select id, name as account_name, coalesce(amount, 0) as amount from "floe"."vs"."t"`},
		{`select id, count(*) as n, sum(case when lower(stage) = 'won' then amount end) as won from vs.t where amount is not null and stage in ('a', 'b') group by id`,
			`select id, count(*) as n, sum(case when lower(stage) = 'won' then amount end) as won from vs.t where amount is not null and stage in ('a', 'b') group by id`,
			`select id, count(*) as n, sum(case when lower(stage) = 'won' then amount end) as won from "floe"."vs"."t" where amount is not null and stage in ('a', 'b') group by id`},
		{`select a.id, b.name from vs.t a left join vs.t b on a.id = b.id where a.name like 'x%'`,
			`select a.id, b.name from vs.t a left join vs.t b on a.id = b.id where a.name like 'x%'`,
			`select a.id, b.name from "floe"."vs"."t" a left join "floe"."vs"."t" b on a.id = b.id where a.name like 'x%'`},
		{`select t.id from vs.t`, `select t.id from vs.t`, `select t.id from "floe"."vs"."t"`},
		{`select id / 2 as h from vs.t`, `select id / 2 as h from vs.t`, ""},
		{`select * from vs.t`, `select * from vs.t`, `select * from "floe"."vs"."t"`},
		{`select cast(id as varchar) as s from vs.t`, "", ""},
		{`select id::varchar as s from vs.t`, "", ""},
		{`select row_number() over (order by id) as r from vs.t`, "", ""},
		{`select id from vs.t limit 5`, "", ""},
		{`select date_trunc('day', now()) as d from vs.t`, "", ""},
		{`select concat(name, 'x') as s from vs.t`, "", ""},
		{`select * exclude (name) from vs.t`, "", ""},
		{`select id, count(*) as n from vs.t group by all`, "", ""},
		{`select 'it''s' as s from vs.t`, "", ""},
	} {
		name := fmt.Sprintf("v%d", i)
		execTag(t, c, "CREATE VIEW vs."+name+" AS "+tc.query)
		v, err := e.f.App.Catalog().LoadView(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"vs"}, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range v.Metadata.CurrentVersion().Representations {
			got[r.Dialect] = r.Sql
		}
		if got["duckdb"] != tc.query {
			t.Errorf("%s: duckdb representation %q", tc.query, got["duckdb"])
		}
		if got["spark"] != tc.spark {
			t.Errorf("%s: spark representation %q, want %q", tc.query, got["spark"], tc.spark)
		}
		if got["trino"] != tc.trino {
			t.Errorf("%s: trino representation %q, want %q", tc.query, got["trino"], tc.trino)
		}
	}
}
