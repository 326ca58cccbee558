package engine_test

import (
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/internal/app"
)

// dbt's incremental delete+insert strategy: the new rows into a session
// temporary table, then a delete and an insert of the model in one block.
func TestTempTableIncrementalDeleteInsert(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	execTag(t, c, "CREATE TABLE crm.m AS SELECT id, name FROM crm.people WHERE id <= 2")
	execTag(t, c, "UPDATE crm.m SET name = 'stale'")
	execTag(t, c, "BEGIN")
	if tag := execTag(t, c, `create temporary table "m__dbt_tmp215530" as (select id, name from crm.people where id >= 2)`); tag != "SELECT 3" {
		t.Fatalf("tag %q", tag)
	}
	execTag(t, c, `delete from "floe"."crm"."m" where (id) in (select (id) from "m__dbt_tmp215530")`)
	execTag(t, c, `insert into "floe"."crm"."m" ("id", "name") (select "id", "name" from "m__dbt_tmp215530")`)
	execTag(t, c, "COMMIT")
	rows := mustRows(t, c, "SELECT id, name FROM crm.m ORDER BY id")
	if len(rows) != 4 || rows[0][1] != "stale" || rows[1][1] == "stale" {
		t.Fatalf("m: %v", rows)
	}
	// DELETE ... USING reads it too.
	execTag(t, c, "CREATE TEMP TABLE gone AS SELECT id FROM crm.people WHERE id = 4")
	execTag(t, c, "DELETE FROM crm.m USING gone WHERE m.id = gone.id")
	if n := len(mustRows(t, c, "SELECT * FROM crm.m")); n != 3 {
		t.Fatalf("m after DELETE USING: %d rows", n)
	}
	// Another session does not see it.
	execErr(t, e.admin(t), `SELECT * FROM "m__dbt_tmp215530"`, "42P01", "")
	// It is the session's: no catalog table, and dropped with DROP TABLE.
	if e.tableExists(t, "crm", "m__dbt_tmp215530") {
		t.Fatal("a temporary table reached the catalog")
	}
	execTag(t, c, "DROP TABLE gone")
	execErr(t, c, "SELECT * FROM gone", "42P01", "")
	// The engine's own working tables are not the client's to name.
	execErr(t, c, "CREATE TEMP TABLE __floe_tbl_1 AS SELECT 1 AS a", "42939", "")
	execErr(t, c, "CREATE TEMP TABLE pg_class AS SELECT 1 AS a", "42939", "")
	// Nor are temporary tables written through DML.
	execErr(t, c, `INSERT INTO "m__dbt_tmp215530" VALUES (9, 'x')`, "42501", "")
}

// A temporary table's rows come through the checked query path: a row
// filter applies, and a table the caller may not read is refused.
func TestTempTableHonoursPolicy(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	e.createPeople(t, "crm", "secret")
	e.grant(t, "analyst", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "id <= 2"})
	c := e.as(t, "analyst")
	execTag(t, c, "CREATE TEMP TABLE mine AS SELECT * FROM crm.people")
	if n := len(mustRows(t, c, "SELECT * FROM mine")); n != 2 {
		t.Fatalf("the temporary table holds %d rows, want the 2 the filter shows", n)
	}
	execErr(t, c, "CREATE TEMP TABLE s AS SELECT * FROM crm.secret", "42501", "")
	// A temporary table is not a privilege on anything: a read-only token
	// may still make one (it changes nothing but the session).
	execTag(t, e.as(t, "analyst", "catalog:read"), "CREATE TEMP TABLE ro AS SELECT id FROM crm.people")
}

// A session's temporary tables are bounded in number and rows.
func TestTempTableBounds(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLMaxTempTables = 2; c.SQLMaxTempRows = 5 })
	appendPeople(t, e.createPeople(t, "crm", "people"), people(4)...)
	c := e.admin(t)
	execTag(t, c, "CREATE TEMP TABLE a AS SELECT * FROM crm.people")
	execErr(t, c, "CREATE TEMP TABLE b AS SELECT * FROM crm.people", "54000", "rows")
	execErr(t, c, "SELECT * FROM b", "42P01", "")
	execTag(t, c, "CREATE TEMP TABLE b AS SELECT * FROM crm.people WHERE id = 1")
	execErr(t, c, "CREATE TEMP TABLE c AS SELECT 1 AS x", "54000", "temporary tables")
	execTag(t, c, "DROP TABLE a")
	execTag(t, c, "CREATE TEMP TABLE c AS SELECT * FROM crm.people")
}
