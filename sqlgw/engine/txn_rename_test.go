package engine_test

import (
	"context"
	"testing"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
)

// dbtTableMaterialization is dbt-postgres's table materialization for an
// existing model m: build m__dbt_tmp, swap the names in one block, then
// drop the backup.
func dbtTableMaterialization(t *testing.T, e *env, run func(sql string)) {
	t.Helper()
	run(`begin`)
	run(`create table "` + e.f.Warehouse + `"."crm"."m__dbt_tmp" as (select id, name from crm.people where id > 1)`)
	run(`alter table "` + e.f.Warehouse + `"."crm"."m" rename to "m__dbt_backup"`)
	run(`alter table "` + e.f.Warehouse + `"."crm"."m__dbt_tmp" rename to "m"`)
	run(`commit`)
	run(`drop table if exists "` + e.f.Warehouse + `"."crm"."m__dbt_backup" cascade`)
}

func TestTxnRenameAndDropAreAtomic(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(3)...)
	c := e.admin(t)
	execTag(t, c, "CREATE TABLE crm.m AS SELECT id FROM crm.people")
	dbtTableMaterialization(t, e, func(sql string) { execTag(t, c, sql) })
	if e.tableExists(t, "crm", "m__dbt_tmp") || e.tableExists(t, "crm", "m__dbt_backup") {
		t.Fatal("the swap left the temporary or the backup table")
	}
	rows := mustRows(t, c, "SELECT id, name FROM crm.m ORDER BY id")
	if len(rows) != 2 {
		t.Fatalf("m: %v, want the 2 rows of the new build", rows)
	}
	// A block that fails after its renames renames nothing; nor does one
	// rolled back.
	execTag(t, c, "BEGIN")
	execTag(t, c, "ALTER TABLE crm.m RENAME TO m_old")
	execTag(t, c, "DROP TABLE crm.people")
	// Inside the block the names are as the block left them.
	execErr(t, c, "SELECT * FROM crm.people", "42P01", "")
	execTag(t, c, "ROLLBACK")
	execTag(t, c, "BEGIN")
	execTag(t, c, "ALTER TABLE crm.m RENAME TO m_old")
	if n := len(mustRows(t, c, "SELECT * FROM crm.m_old")); n != 2 {
		t.Fatalf("inside the block the renamed table has %d rows", n)
	}
	execTag(t, c, "DROP TABLE crm.people")
	execErr(t, c, "INSERT INTO crm.nothere VALUES (1)", "42P01", "")
	execTag(t, c, "COMMIT")
	if !e.tableExists(t, "crm", "m") || e.tableExists(t, "crm", "m_old") || !e.tableExists(t, "crm", "people") {
		t.Fatal("a failed block renamed or dropped tables")
	}
	// A block whose table commit fails at COMMIT (a concurrent change)
	// renames and drops nothing: one store transaction.
	execTag(t, c, "BEGIN")
	execTag(t, c, "INSERT INTO crm.people (id) VALUES (50)")
	execTag(t, c, "ALTER TABLE crm.m RENAME TO m_old")
	execTag(t, c, "DROP TABLE crm.m_old")
	execTag(t, e.admin(t), "INSERT INTO crm.people (id) VALUES (51)")
	execErr(t, c, "COMMIT", "40001", "")
	if !e.tableExists(t, "crm", "m") || e.tableExists(t, "crm", "m_old") {
		t.Fatal("a block whose commit failed renamed or dropped a table")
	}
	// A committed block applies its drop with its table commits.
	execTag(t, c, "BEGIN")
	execTag(t, c, "INSERT INTO crm.m (id) VALUES (9)")
	execTag(t, c, "ALTER TABLE crm.m RENAME TO m2")
	execTag(t, c, "INSERT INTO crm.m2 (id) VALUES (10)")
	execTag(t, c, "DROP TABLE crm.people")
	execTag(t, c, "COMMIT")
	if e.tableExists(t, "crm", "people") || e.tableExists(t, "crm", "m") {
		t.Fatal("the committed block did not drop or rename")
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.m2")); n != 4 {
		t.Fatalf("m2: %d rows, want 4", n)
	}
}

// A principal with CREATE_TABLE on the namespace runs dbt's table
// materialization on a model it created: renaming the table it created in
// the block claims no location.
func TestTxnRenameCreatedTableAsCreator(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(3)...)
	if _, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal("dbt"), Privilege: authz.CreateTable,
		On: authz.NamespaceOf(e.f.Warehouse, catalog.Namespace{"crm"})}); err != nil {
		t.Fatal(err)
	}
	e.grant(t, "dbt", authz.Select, "crm", "people", nil)
	c := e.as(t, "dbt")
	// First run: no m yet.
	execTag(t, c, "BEGIN")
	execTag(t, c, `create table "`+e.f.Warehouse+`"."crm"."m__dbt_tmp" as (select id from crm.people)`)
	execTag(t, c, `alter table "`+e.f.Warehouse+`"."crm"."m__dbt_tmp" rename to "m"`)
	execTag(t, c, "COMMIT")
	if n := len(mustRows(t, c, "SELECT * FROM crm.m")); n != 3 {
		t.Fatalf("m: %d rows", n)
	}
	// Rerun: swap with the backup, as the owner of m.
	dbtTableMaterialization(t, e, func(sql string) { execTag(t, c, sql) })
	// (Another statement text: pgx caches the first one's result columns.)
	if n := len(mustRows(t, c, "SELECT id, name FROM crm.m")); n != 2 {
		t.Fatalf("m after the rerun: %d rows", n)
	}
	// Still no rights on others' tables inside a block.
	execTag(t, c, "BEGIN")
	execErr(t, c, "DROP TABLE crm.people", "42501", "lacks DROP")
	execTag(t, c, "ROLLBACK")
}

// The renames and drops a block stages count against
// sql_max_transaction_statements.
func TestTxnOpsBounded(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLMaxTransactionStatements = 2 })
	for _, n := range []string{"a", "b", "c"} {
		e.createPeople(t, "crm", n)
	}
	c := e.admin(t)
	execTag(t, c, "BEGIN")
	execTag(t, c, "ALTER TABLE crm.a RENAME TO a2")
	execTag(t, c, "DROP TABLE crm.b")
	execErr(t, c, "ALTER TABLE crm.c RENAME TO c2", "54000", "at most 2")
	execTag(t, c, "ROLLBACK")
	if !e.tableExists(t, "crm", "a") || !e.tableExists(t, "crm", "b") || !e.tableExists(t, "crm", "c") {
		t.Fatal("a rolled-back block renamed or dropped tables")
	}
}
