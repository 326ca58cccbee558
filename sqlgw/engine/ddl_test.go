package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/audit"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/app"
)

// as connects as principal name (created if needed) with a token of the
// given scopes.
func (e *env) as(t *testing.T, name string, scopes ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	p, err := e.f.App.Store().PrincipalByName(ctx, name)
	if err != nil {
		e.f.NewPrincipal(t, name)
		if p, err = e.f.App.Store().PrincipalByName(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if len(scopes) == 0 {
		scopes = []string{"catalog"}
	}
	tok, err := e.f.App.Auth().Issue(ctx, p, scopes)
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(t, name, tok.AccessToken)
}

// tableExists reports whether the catalog holds table ns.name.
func (e *env) tableExists(t *testing.T, ns, name string) bool {
	t.Helper()
	ok, err := e.f.App.Catalog().Exists(context.Background(), e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name}, catalog.KindTable)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func execErr(t *testing.T, c *pgx.Conn, sql, code, msg string) {
	t.Helper()
	_, err := c.Exec(context.Background(), sql)
	pe := wantCode(t, err, code)
	if msg != "" && !strings.Contains(pe.Message, msg) {
		t.Fatalf("%s: message %q, want it to contain %q", sql, pe.Message, msg)
	}
}

func TestDDLCreateTableIsAnIcebergTable(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	if tag := execTag(t, c, "CREATE SCHEMA sales"); tag != "CREATE SCHEMA" {
		t.Fatalf("tag %q", tag)
	}
	execTag(t, c, "CREATE SCHEMA IF NOT EXISTS sales")
	execErr(t, c, "CREATE SCHEMA sales", "42P06", "already exists")
	tag := execTag(t, c, `CREATE TABLE sales.orders (
		id bigint NOT NULL, qty int, small smallint, name text, code varchar(8), amount numeric(10,2),
		ratio real, score double precision, f float, ok boolean, day date, at timestamp, seen timestamptz,
		t time, raw bytea, uid uuid COMMENT 'the order''s uuid')
		PARTITIONED BY (bucket(16, id), day(seen), truncate(4, name))
		WITH ('write.format.default' = 'parquet', owner_team = 'sales')`)
	if tag != "CREATE TABLE" {
		t.Fatalf("tag %q", tag)
	}
	tbl := e.loadTable(t, "sales", "orders")
	want := map[string]struct {
		typ      iceberg.Type
		required bool
	}{
		"id": {iceberg.PrimitiveTypes.Int64, true}, "qty": {iceberg.PrimitiveTypes.Int32, false}, "small": {iceberg.PrimitiveTypes.Int32, false},
		"name": {iceberg.PrimitiveTypes.String, false}, "code": {iceberg.PrimitiveTypes.String, false}, "amount": {iceberg.DecimalTypeOf(10, 2), false},
		"ratio": {iceberg.PrimitiveTypes.Float32, false}, "score": {iceberg.PrimitiveTypes.Float64, false}, "f": {iceberg.PrimitiveTypes.Float64, false},
		"ok": {iceberg.PrimitiveTypes.Bool, false}, "day": {iceberg.PrimitiveTypes.Date, false}, "at": {iceberg.PrimitiveTypes.Timestamp, false},
		"seen": {iceberg.PrimitiveTypes.TimestampTz, false}, "t": {iceberg.PrimitiveTypes.Time, false}, "raw": {iceberg.PrimitiveTypes.Binary, false},
		"uid": {iceberg.PrimitiveTypes.UUID, false},
	}
	fields := tbl.Schema().Fields()
	if len(fields) != len(want) {
		t.Fatalf("%d columns, want %d", len(fields), len(want))
	}
	for _, f := range fields {
		w, ok := want[f.Name]
		if !ok || !f.Type.Equals(w.typ) || f.Required != w.required {
			t.Errorf("column %s: %s required=%v, want %v", f.Name, f.Type, f.Required, w)
		}
		if f.Name == "uid" && f.Doc != "the order's uuid" {
			t.Errorf("doc %q", f.Doc)
		}
	}
	var got []string
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		src, _ := tbl.Schema().FindFieldByID(pf.SourceID())
		got = append(got, pf.Transform.String()+"("+src.Name+")")
	}
	if strings.Join(got, ",") != "bucket[16](id),day(seen),truncate[4](name)" {
		t.Fatalf("partition spec %v", got)
	}
	if p := tbl.Properties(); p["write.format.default"] != "parquet" || p["owner_team"] != "sales" {
		t.Fatalf("properties %v", p)
	}
	execTag(t, c, "INSERT INTO sales.orders (id, name, seen) VALUES (1, 'apple', TIMESTAMPTZ '2026-01-02 03:04:05+00'), (2, 'banana', NULL)")
	rows := mustRows(t, c, "SELECT id, name FROM sales.orders ORDER BY id")
	if len(rows) != 2 || rows[1][1] != "banana" {
		t.Fatalf("rows %v", rows)
	}
	// IF NOT EXISTS on an existing table changes nothing; without it, 42P07.
	execTag(t, c, "CREATE TABLE IF NOT EXISTS sales.orders (x int)")
	execErr(t, c, "CREATE TABLE sales.orders (x int)", "42P07", "already exists")
	// The database part of a three-part name is the warehouse.
	execTag(t, c, "CREATE TABLE "+e.f.Warehouse+".sales.lines (id bigint)")
	if !e.tableExists(t, "sales", "lines") {
		t.Fatal("three-part CREATE TABLE made no table")
	}
	execErr(t, c, "CREATE TABLE otherdb.sales.lines (id bigint)", "0A000", "cross-database")
	execErr(t, c, "CREATE TABLE lonely (id bigint)", "3F000", "schema")
	execErr(t, c, "CREATE TABLE nope.t (id bigint)", "3F000", `schema "nope" does not exist`)
}

func TestDDLErrors(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	execTag(t, c, "CREATE SCHEMA s")
	for _, tc := range []struct{ sql, code, msg string }{
		{"CREATE TABLE s.t (a json)", "0A000", "json"},
		{"CREATE TABLE s.t (a interval)", "0A000", "interval"},
		{"CREATE TABLE s.t (a frobnicator)", "42704", `type "frobnicator" does not exist`},
		{"CREATE TABLE s.t (a int[])", "0A000", "array"},
		{"CREATE TABLE s.t (a int PRIMARY KEY)", "0A000", "PRIMARY"},
		{"CREATE TABLE s.t (a int, a text)", "42701", "more than once"},
		{"CREATE TABLE s.t (a int) PARTITIONED BY (b)", "42703", `"b"`},
		{"CREATE TABLE s.t (a int) PARTITIONED BY (bucket(a))", "42601", "number"},
		{"CREATE TABLE s.t (a int", "42601", ""},
		{"CREATE TABLE s.t (a numeric(50, 2))", "0A000", "precision"},
		{"CREATE TABLE", "42601", ""},
		{"CREATE VIEW s.v (a) AS SELECT 1", "0A000", "column names"},
		{"CREATE MATERIALIZED VIEW s.v AS SELECT 1", "0A000", "MATERIALIZED"},
		{"CREATE TEMP TABLE t (a int)", "0A000", "temporary"},
		{"DROP SCHEMA s CASCADE", "0A000", "CASCADE"},
		{"DROP TABLE s.missing", "42P01", "does not exist"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			_, err := c.Exec(context.Background(), tc.sql)
			pe := wantCode(t, err, tc.code)
			if !strings.Contains(pe.Message, tc.msg) {
				t.Fatalf("message %q, want %q", pe.Message, tc.msg)
			}
		})
	}
	if e.tableExists(t, "s", "t") {
		t.Fatal("a refused CREATE TABLE made a table")
	}
	// Nothing refused claims that only SELECT works.
	_, err := c.Exec(context.Background(), "GRANT SELECT ON s.t TO bob")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.Contains(pe.Message, "only queries") {
		t.Fatalf("refusal still says only queries run: %q", pe.Message)
	}
}

func TestDDLAlterTable(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	execTag(t, c, "CREATE SCHEMA s")
	execTag(t, c, "CREATE TABLE s.t (id int NOT NULL, name text, price real, amount decimal(9,2), ts timestamp)")
	execTag(t, c, "INSERT INTO s.t VALUES (1, 'a', 1.5, 2.25, TIMESTAMP '2026-01-01 00:00:00')")
	before := e.loadTable(t, "s", "t").Metadata().TableUUID()
	for _, sql := range []string{
		"ALTER TABLE s.t ADD COLUMN note varchar",
		"ALTER TABLE s.t ADD COLUMN IF NOT EXISTS note text",
		"ALTER TABLE s.t RENAME COLUMN name TO title",
		"ALTER TABLE s.t ALTER COLUMN id TYPE bigint",
		"ALTER TABLE s.t ALTER COLUMN price SET DATA TYPE double precision",
		"ALTER TABLE s.t ALTER COLUMN amount TYPE numeric(18,2)",
		"ALTER TABLE s.t ALTER COLUMN id DROP NOT NULL",
		"ALTER TABLE s.t SET ('commit.retry.num-retries' = '7', team = 'x')",
		"ALTER TABLE s.t RESET (team)",
		"ALTER TABLE s.t ADD PARTITION FIELD month(ts)",
		"ALTER TABLE s.t ADD PARTITION FIELD bucket(4, id) AS id_b",
		"ALTER TABLE s.t DROP PARTITION FIELD month(ts)",
		"COMMENT ON TABLE s.t IS 'the t table'",
		"COMMENT ON COLUMN s.t.title IS 'what it is called'",
		"ALTER TABLE s.t DROP COLUMN note",
	} {
		if tag := execTag(t, c, sql); tag != "ALTER TABLE" && tag != "COMMENT" {
			t.Fatalf("%s: tag %q", sql, tag)
		}
	}
	tbl := e.loadTable(t, "s", "t")
	if tbl.Metadata().TableUUID() != before {
		t.Fatal("ALTER TABLE replaced the table")
	}
	sc := tbl.Schema()
	check := func(name string, typ iceberg.Type, required bool) {
		t.Helper()
		f, ok := sc.FindFieldByName(name)
		if !ok || !f.Type.Equals(typ) || f.Required != required {
			t.Fatalf("column %s: %v %v (found %v)", name, f.Type, f.Required, ok)
		}
	}
	check("id", iceberg.PrimitiveTypes.Int64, false)
	check("title", iceberg.PrimitiveTypes.String, false)
	check("price", iceberg.PrimitiveTypes.Float64, false)
	check("amount", iceberg.DecimalTypeOf(18, 2), false)
	if _, ok := sc.FindFieldByName("note"); ok {
		t.Fatal("note was not dropped")
	}
	if f, _ := sc.FindFieldByName("title"); f.Doc != "what it is called" {
		t.Fatalf("doc %q", f.Doc)
	}
	p := tbl.Properties()
	if p["commit.retry.num-retries"] != "7" || p["comment"] != "the t table" {
		t.Fatalf("properties %v", p)
	}
	if _, ok := p["team"]; ok {
		t.Fatal("RESET left team")
	}
	var parts []string
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		parts = append(parts, pf.Name+"="+pf.Transform.String())
	}
	if strings.Join(parts, ",") != "id_b=bucket[4]" {
		t.Fatalf("spec %v", parts)
	}
	// The old rows read under the evolved schema.
	rows := mustRows(t, c, "SELECT id, title, price FROM s.t")
	if len(rows) != 1 || rows[0][0] != int64(1) || rows[0][1] != "a" {
		t.Fatalf("rows %v", rows)
	}
	// Narrowing and impossible changes are refused clearly.
	execErr(t, c, "ALTER TABLE s.t ALTER COLUMN id TYPE int", "42804", "only widens")
	execErr(t, c, "ALTER TABLE s.t ALTER COLUMN title TYPE int", "42804", "only widens")
	execErr(t, c, "ALTER TABLE s.t ALTER COLUMN amount TYPE numeric(18,3)", "42804", "only widens")
	execErr(t, c, "ALTER TABLE s.t ADD COLUMN must int NOT NULL", "0A000", "NOT NULL")
	execErr(t, c, "ALTER TABLE s.t RENAME COLUMN missing TO x", "42703", "missing")
	execErr(t, c, "ALTER TABLE s.missing ADD COLUMN x int", "42P01", "does not exist")
	execTag(t, c, "ALTER TABLE IF EXISTS s.missing ADD COLUMN x int")
	// TRUNCATE is a delete-all snapshot; history keeps the rows.
	snaps := len(tbl.Metadata().Snapshots())
	if tag := execTag(t, c, "TRUNCATE s.t"); tag != "TRUNCATE TABLE" {
		t.Fatalf("tag %q", tag)
	}
	tbl = e.loadTable(t, "s", "t")
	if n := len(mustRows(t, c, "SELECT * FROM s.t")); n != 0 || len(tbl.Metadata().Snapshots()) != snaps+1 {
		t.Fatalf("after TRUNCATE: %d rows, %d snapshots (before %d)", n, len(tbl.Metadata().Snapshots()), snaps)
	}
	// Rename, then drop.
	execTag(t, c, "ALTER TABLE s.t RENAME TO t2")
	if e.tableExists(t, "s", "t") || !e.tableExists(t, "s", "t2") {
		t.Fatal("rename did not move the table")
	}
	execErr(t, c, "DROP SCHEMA s", "2BP01", "depend")
	execTag(t, c, "DROP TABLE s.t2")
	execTag(t, c, "DROP TABLE IF EXISTS s.t2 CASCADE")
	execTag(t, c, "DROP SCHEMA s")
	execTag(t, c, "DROP SCHEMA IF EXISTS s")
	execErr(t, c, "DROP SCHEMA s", "3F000", "does not exist")
}

func TestDDLCreateTableAs(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(6)...)
	c := e.admin(t)
	tag := execTag(t, c, "CREATE TABLE crm.eu PARTITIONED BY (region) AS SELECT id, name, region, salary * 2 AS double_pay, CAST(salary AS DECIMAL(12,2)) AS pay FROM crm.people WHERE region = 'eu'")
	if tag != "SELECT 3" {
		t.Fatalf("tag %q", tag)
	}
	eu := e.loadTable(t, "crm", "eu")
	if f, ok := eu.Schema().FindFieldByName("pay"); !ok || !f.Type.Equals(iceberg.DecimalTypeOf(12, 2)) {
		t.Fatalf("pay: %v", f.Type)
	}
	if spec := eu.Spec(); spec.NumFields() != 1 {
		t.Fatalf("spec %v", eu.Spec())
	}
	rows := mustRows(t, c, "SELECT id, double_pay FROM crm.eu ORDER BY id")
	if len(rows) != 3 || rows[0][1] != float64(2000) {
		t.Fatalf("rows %v", rows)
	}
	// The CTAS's audit event names the table it read and the one it wrote.
	waitAudit(t, e, func(r audit.Record) bool {
		d := string(r.Detail)
		return r.Outcome == audit.OutcomeSuccess && strings.Contains(d, `"statement":"CREATE TABLE"`) &&
			strings.Contains(d, `"tables":["floe.crm.people"]`) && strings.Contains(d, `"written":["floe.crm.eu"]`)
	})
	// A CTAS whose query fails while running leaves no table.
	execErr(t, c, "CREATE TABLE crm.bad AS SELECT id, CAST(name AS INTEGER) AS n FROM crm.people", "22P02", "")
	if e.tableExists(t, "crm", "bad") {
		t.Fatal("a failed CREATE TABLE AS left a table")
	}
	execErr(t, c, "CREATE TABLE crm.bad2 AS SELECT * FROM crm.nothere", "42P01", "")
	if e.tableExists(t, "crm", "bad2") {
		t.Fatal("a failed CREATE TABLE AS left a table")
	}
	// CREATE OR REPLACE: the same table (uuid, history), a new schema and
	// snapshot, in one commit.
	before := e.loadTable(t, "crm", "eu").Metadata()
	execTag(t, c, "CREATE OR REPLACE TABLE crm.eu AS SELECT id, upper(name) AS shout FROM crm.people WHERE id <= 2")
	after := e.loadTable(t, "crm", "eu").Metadata()
	if after.TableUUID() != before.TableUUID() || len(after.Snapshots()) != len(before.Snapshots())+1 {
		t.Fatalf("replace: uuid %s->%s, snapshots %d->%d", before.TableUUID(), after.TableUUID(), len(before.Snapshots()), len(after.Snapshots()))
	}
	if n := len(after.CurrentSchema().Fields()); n != 2 {
		t.Fatalf("replaced schema has %d fields", n)
	}
	rows = mustRows(t, c, "SELECT shout FROM crm.eu ORDER BY id")
	if len(rows) != 2 || rows[0][0] != "PERSON-1" {
		t.Fatalf("rows %v", rows)
	}
	execTag(t, c, "CREATE OR REPLACE TABLE crm.fresh (a int)")
	if !e.tableExists(t, "crm", "fresh") {
		t.Fatal("CREATE OR REPLACE of a new name made no table")
	}
}

func TestDDLPrivileges(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(3)...)
	nobody := e.as(t, "nobody")
	execErr(t, nobody, "CREATE SCHEMA mine", "42501", "lacks CREATE_NAMESPACE")
	execErr(t, nobody, "CREATE TABLE crm.t (a int)", "42501", `lacks CREATE_TABLE on namespace "crm"`)
	execErr(t, nobody, "CREATE TABLE crm.t AS SELECT 1 AS a", "42501", "lacks CREATE_TABLE")
	execErr(t, nobody, "DROP TABLE crm.people", "42501", "lacks DROP")
	execErr(t, nobody, "ALTER TABLE crm.people ADD COLUMN x int", "42501", "lacks MODIFY")
	execErr(t, nobody, "TRUNCATE crm.people", "42501", "lacks MODIFY")
	execErr(t, nobody, "COMMENT ON TABLE crm.people IS 'x'", "42501", "lacks MODIFY")
	execErr(t, nobody, "ALTER TABLE crm.people RENAME TO p2", "42501", "lacks DROP")
	if e.tableExists(t, "crm", "t") || !e.tableExists(t, "crm", "people") {
		t.Fatal("a refused statement changed the catalog")
	}
	// The refusal is audited as denied, with the privilege.
	waitAudit(t, e, func(r audit.Record) bool {
		d := string(r.Detail)
		return r.Outcome == audit.OutcomeDenied && strings.Contains(d, `"privilege":"CREATE_TABLE"`) && strings.Contains(d, `"statement":"CREATE TABLE"`)
	})
	// With CREATE_TABLE on the namespace a principal creates tables, owns
	// them (writes, reads, drops) and still may not touch others'.
	if _, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal("nobody"), Privilege: authz.CreateTable,
		On: authz.NamespaceOf(e.f.Warehouse, catalog.Namespace{"crm"})}); err != nil {
		t.Fatal(err)
	}
	creator := e.as(t, "nobody")
	execTag(t, creator, "CREATE TABLE crm.mine (a int)")
	execTag(t, creator, "INSERT INTO crm.mine VALUES (1)")
	if rows := mustRows(t, creator, "SELECT a FROM crm.mine"); len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	// CTAS reads through the caller's privileges: no SELECT on people.
	execErr(t, creator, "CREATE TABLE crm.copy AS SELECT * FROM crm.people", "42501", "lacks SELECT")
	if e.tableExists(t, "crm", "copy") {
		t.Fatal("a refused CTAS left a table")
	}
	execTag(t, creator, "BEGIN")
	execTag(t, creator, "CREATE TABLE crm.staged (a int)")
	execTag(t, creator, "INSERT INTO crm.staged VALUES (7)")
	execTag(t, creator, "COMMIT")
	execTag(t, creator, "INSERT INTO crm.staged VALUES (8)") // owned after the commit
	execTag(t, creator, "DROP TABLE crm.mine")
	// A read-only token may not change the catalog, whatever its grants.
	execErr(t, e.as(t, "nobody", "catalog:read"), "CREATE TABLE crm.ro (a int)", "42501", "read-only")
}

// waitAudit waits for an audit event of the SQL endpoint that ok accepts.
func waitAudit(t *testing.T, e *env, ok func(audit.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := e.f.App.Store().AuditQuery(context.Background(), audit.Query{Action: "sql.query"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if ok(r) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching audit event in %d events", len(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTransactionAllOrNothing(t *testing.T) {
	e := newEnv(t)
	a := e.createPeople(t, "crm", "a")
	appendPeople(t, a, people(2)...)
	e.createPeople(t, "crm", "b")
	c := e.admin(t)
	ctx := context.Background()
	// A block that fails midway leaves nothing.
	execTag(t, c, "BEGIN")
	execTag(t, c, "INSERT INTO crm.a (id, name) VALUES (10, 'ten')")
	execTag(t, c, "CREATE TABLE crm.made (x int)")
	execTag(t, c, "INSERT INTO crm.made VALUES (1)")
	// Reads inside the block see its own writes.
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 3 {
		t.Fatalf("inside the block: %d rows, want 3", n)
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.made")); n != 1 {
		t.Fatalf("inside the block: %d rows of the new table", n)
	}
	// ... others do not.
	other := e.admin(t)
	if n := len(mustRows(t, other, "SELECT * FROM crm.a")); n != 2 {
		t.Fatalf("outside the block: %d rows, want 2", n)
	}
	// A table the block did not change reads at its latest commit (read
	// committed, PostgreSQL's default).
	if n := len(mustRows(t, c, "SELECT * FROM crm.b")); n != 0 {
		t.Fatalf("b: %d rows", n)
	}
	execTag(t, other, "INSERT INTO crm.b (id) VALUES (100)")
	if n := len(mustRows(t, c, "SELECT * FROM crm.b")); n != 1 {
		t.Fatalf("inside the block, b does not show another session's commit: %d rows", n)
	}
	execTag(t, other, "DELETE FROM crm.b")
	execErr(t, c, "INSERT INTO crm.nothere VALUES (1)", "42P01", "")
	execErr(t, c, "INSERT INTO crm.b (id) VALUES (1)", "25P02", "current transaction is aborted")
	if tag := execTag(t, c, "COMMIT"); tag != "ROLLBACK" {
		t.Fatalf("COMMIT of a failed block: tag %q", tag)
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 2 || e.tableExists(t, "crm", "made") {
		t.Fatalf("a failed block left changes: %d rows, table made %v", n, e.tableExists(t, "crm", "made"))
	}
	// ROLLBACK drops everything.
	execTag(t, c, "START TRANSACTION")
	execTag(t, c, "DELETE FROM crm.a")
	execTag(t, c, "ALTER TABLE crm.a ADD COLUMN extra int")
	execTag(t, c, "ROLLBACK")
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 2 {
		t.Fatalf("after ROLLBACK: %d rows", n)
	}
	if _, ok := e.loadTable(t, "crm", "a").Schema().FindFieldByName("extra"); ok {
		t.Fatal("ROLLBACK kept a schema change")
	}
	// A committed block changes every table in one catalog commit.
	snapsA := len(e.loadTable(t, "crm", "a").Metadata().Snapshots())
	execTag(t, c, "BEGIN")
	execTag(t, c, "INSERT INTO crm.a (id) VALUES (3)")
	execTag(t, c, "UPDATE crm.a SET name = 'one' WHERE id = 1")
	execTag(t, c, "INSERT INTO crm.b (id) VALUES (1), (2)")
	execTag(t, c, "CREATE TABLE crm.made AS SELECT id FROM crm.a")
	execTag(t, c, "ALTER TABLE crm.b SET (note = 'loaded')")
	if tag := execTag(t, c, "END"); tag != "COMMIT" {
		t.Fatalf("tag %q", tag)
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 3 {
		t.Fatalf("a: %d rows", n)
	}
	if rows := mustRows(t, c, "SELECT name FROM crm.a WHERE id = 1"); rows[0][0] != "one" {
		t.Fatalf("a: %v", rows)
	}
	// (Another text than the SELECT above: pgx caches that statement,
	// prepared when made had an int column; made is now a new table with
	// a bigint one, and a cached statement whose result type changed
	// fails, as on PostgreSQL: TestPreparedStatementAfterColumnChange.)
	if n := len(mustRows(t, c, "SELECT id FROM crm.made")); n != 3 {
		t.Fatalf("made: %d rows", n)
	}
	if e.loadTable(t, "crm", "b").Properties()["note"] != "loaded" {
		t.Fatal("the block's ALTER did not commit")
	}
	if n := len(e.loadTable(t, "crm", "a").Metadata().Snapshots()); n != snapsA+2 {
		t.Fatalf("a has %d snapshots, want %d", n, snapsA+2)
	}
	// DROP SCHEMA is no table commit: refused inside a block, which then
	// fails (CREATE SCHEMA in a block: TestCreateSchemaInBlock). DROP TABLE
	// is staged (see txn_rename_test.go): a rolled-back block drops nothing.
	execTag(t, c, "BEGIN")
	execErr(t, c, "DROP SCHEMA crm", "25001", "transaction block")
	execTag(t, c, "ROLLBACK")
	execTag(t, c, "BEGIN")
	execTag(t, c, "DROP TABLE crm.b")
	execTag(t, c, "ROLLBACK")
	if !e.tableExists(t, "crm", "b") {
		t.Fatal("DROP TABLE in a rolled-back block ran")
	}
	// pgx's own transactions (BEGIN ... COMMIT) work.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO crm.b (id) VALUES ($1)", int64(3)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.b")); n != 3 {
		t.Fatalf("b: %d rows", n)
	}
}

func TestTransactionConflict(t *testing.T) {
	e := newEnv(t)
	a := e.createPeople(t, "crm", "a")
	appendPeople(t, a, people(2)...)
	e.createPeople(t, "crm", "b")
	c := e.admin(t)
	execTag(t, c, "BEGIN")
	execTag(t, c, "INSERT INTO crm.b (id) VALUES (1)")
	execTag(t, c, "DELETE FROM crm.a WHERE id = 1")
	// Another session changes a before the block commits.
	execTag(t, e.admin(t), "INSERT INTO crm.a (id) VALUES (99)")
	execErr(t, c, "COMMIT", "40001", "nothing was committed")
	if n := len(mustRows(t, c, "SELECT * FROM crm.b")); n != 0 {
		t.Fatalf("b has %d rows after a failed commit", n)
	}
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 3 {
		t.Fatalf("a has %d rows, want 3", n)
	}
}

func TestTransactionLimit(t *testing.T) {
	e := newEnv(t, func(c *app.Config) { c.SQLMaxTransactionStatements = 3 })
	e.createPeople(t, "crm", "a")
	c := e.admin(t)
	execTag(t, c, "BEGIN")
	for i := range 3 {
		execTag(t, c, "INSERT INTO crm.a (id) VALUES ($1)", int64(i))
	}
	execErr(t, c, "INSERT INTO crm.a (id) VALUES (4)", "54000", "at most 3")
	execTag(t, c, "ROLLBACK")
	if n := len(mustRows(t, c, "SELECT * FROM crm.a")); n != 0 {
		t.Fatalf("%d rows", n)
	}
	// The tables a block changes are bounded by the same limit; the
	// tables it only reads hold nothing.
	for _, n := range []string{"b", "c", "d"} {
		e.createPeople(t, "crm", n)
	}
	execTag(t, c, "BEGIN")
	for _, n := range []string{"a", "b", "c", "d", "a", "b"} {
		mustRows(t, c, "SELECT * FROM crm."+n)
	}
	for _, n := range []string{"a", "b", "c"} {
		execTag(t, c, "INSERT INTO crm."+n+" (id) VALUES (1)")
	}
	execErr(t, c, "INSERT INTO crm.d (id) VALUES (1)", "54000", "at most 3 tables")
	execTag(t, c, "ROLLBACK")
	// Outside a block each statement is its own transaction.
	for i := range 5 {
		execTag(t, c, "INSERT INTO crm.a (id) VALUES ($1)", int64(i))
	}
}

func (e *env) namespaceExists(t *testing.T, ns string) bool {
	t.Helper()
	_, err := e.f.App.Catalog().LoadNamespace(context.Background(), e.f.Warehouse, catalog.Namespace{ns})
	if floe.KindOf(err) == floe.NotFound {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// CREATE SCHEMA inside a block (dbt sends BEGIN; CREATE SCHEMA IF NOT
// EXISTS ...; COMMIT) creates the namespace at once; a block that does not
// commit (ROLLBACK, a failed COMMIT, a connection closed inside it) drops
// it again while it is empty.
func TestCreateSchemaInBlock(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	ctx := context.Background()

	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE SCHEMA IF NOT EXISTS kept")
	execTag(t, c, "CREATE TABLE kept.t (id bigint)")
	execTag(t, c, "INSERT INTO kept.t VALUES (1)")
	execTag(t, c, "COMMIT")
	if !e.namespaceExists(t, "kept") || len(mustRows(t, c, "SELECT * FROM kept.t")) != 1 {
		t.Fatal("the committed block's schema or table is missing")
	}

	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE SCHEMA gone")
	execTag(t, c, "CREATE TABLE gone.t (id bigint)")
	execTag(t, c, "ROLLBACK")
	if e.namespaceExists(t, "gone") {
		t.Fatal("ROLLBACK left the schema the block created")
	}

	// A failed statement fails the block; its ROLLBACK drops the schema.
	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE SCHEMA failed")
	execErr(t, c, "SELECT * FROM failed.nothing", "42P01", "")
	execTag(t, c, "ROLLBACK")
	if e.namespaceExists(t, "failed") {
		t.Fatal("the failed block's ROLLBACK left its schema")
	}

	// IF NOT EXISTS on an existing schema creates nothing, so ROLLBACK
	// drops nothing.
	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE SCHEMA IF NOT EXISTS kept")
	execTag(t, c, "ROLLBACK")
	if !e.namespaceExists(t, "kept") {
		t.Fatal("ROLLBACK dropped a schema the block did not create")
	}

	// A connection closed inside the block rolls it back.
	other := e.admin(t)
	execTag(t, other, "BEGIN")
	execTag(t, other, "CREATE SCHEMA abandoned")
	if !e.namespaceExists(t, "abandoned") {
		t.Fatal("CREATE SCHEMA in a block is not visible at once")
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.namespaceExists(t, "abandoned") {
		if time.Now().After(deadline) {
			t.Fatal("closing the connection inside the block left its schema")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A schema another session filled meanwhile is kept.
	execTag(t, c, "BEGIN")
	execTag(t, c, "CREATE SCHEMA shared")
	third := e.admin(t)
	execTag(t, third, "CREATE TABLE shared.t (id bigint)")
	execTag(t, c, "ROLLBACK")
	if !e.tableExists(t, "shared", "t") {
		t.Fatal("ROLLBACK dropped a schema another session put a table in")
	}
}

// Views are in the session's catalog (pg_views, information_schema), and
// the catalog views tools name (pg_matviews, pg_depend, and
// information_schema qualified by the database) answer, as dbt-postgres
// needs them.
func TestSystemCatalogForDbt(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	execTag(t, c, "CREATE SCHEMA an")
	execTag(t, c, "CREATE TABLE an.src (id bigint, name text)")
	execTag(t, c, "CREATE VIEW an.v AS SELECT id, upper(name) AS shout FROM an.src")
	if rows := mustRows(t, c, "SELECT schemaname, viewname FROM pg_views WHERE schemaname ILIKE 'an'"); len(rows) != 1 || rows[0][1] != "v" {
		t.Fatalf("pg_views: %v", rows)
	}
	rows := mustRows(t, c, "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'an' ORDER BY table_name")
	if len(rows) != 2 || rows[0][0] != "src" || rows[1][0] != "v" || rows[1][1] != "VIEW" {
		t.Fatalf("information_schema.tables: %v", rows)
	}
	rows = mustRows(t, c, `SELECT column_name, data_type FROM "floe".INFORMATION_SCHEMA.columns WHERE table_schema = 'an' AND table_name = 'v' ORDER BY ordinal_position`)
	if len(rows) != 2 || rows[0][0] != "id" || rows[1][0] != "shout" {
		t.Fatalf("floe.INFORMATION_SCHEMA.columns: %v", rows)
	}
	for _, q := range []string{"SELECT matviewname FROM pg_matviews", "SELECT objid, refobjid FROM pg_depend", "SELECT * FROM pg_catalog.pg_matviews"} {
		if rows := mustRows(t, c, q); len(rows) != 0 {
			t.Fatalf("%s: %v", q, rows)
		}
	}
	// The view still answers queries with its own rows.
	execTag(t, c, "INSERT INTO an.src VALUES (1, 'a')")
	if rows := mustRows(t, c, "SELECT shout FROM an.v"); len(rows) != 1 || rows[0][0] != "A" {
		t.Fatalf("an.v: %v", rows)
	}
}

// A statement prepared before its table's columns changed answers as
// PostgreSQL does (0A000 "cached plan must not change result type"), not
// with an internal error; prepared again, it reads the new columns.
func TestPreparedStatementAfterColumnChange(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	ctx := context.Background()
	execTag(t, c, "CREATE SCHEMA p")
	execTag(t, c, "CREATE TABLE p.t (id bigint)")
	execTag(t, c, "INSERT INTO p.t VALUES (1)")
	if _, err := c.Prepare(ctx, "q", "SELECT * FROM p.t"); err != nil {
		t.Fatal(err)
	}
	execTag(t, c, "INSERT INTO p.t VALUES (2)") // a new snapshot, same columns: still fine
	if rows := mustRows(t, c, "q"); len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	execTag(t, c, "ALTER TABLE p.t ADD COLUMN name text")
	_, err := c.Exec(ctx, "q")
	pe := wantCode(t, err, "0A000")
	if pe.Message != "cached plan must not change result type" {
		t.Fatalf("message %q", pe.Message)
	}
	if err := c.Deallocate(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prepare(ctx, "q", "SELECT * FROM p.t"); err != nil {
		t.Fatal(err)
	}
	if rows := mustRows(t, c, "q"); len(rows) != 2 || len(rows[0]) != 2 {
		t.Fatalf("rows %v", rows)
	}
}
