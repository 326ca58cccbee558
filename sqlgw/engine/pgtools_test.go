package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/floe-lake/floe/authz"
)

// TestSessionFunctions checks the functions tools call to learn who and
// where they are: the principal, the warehouse, a PostgreSQL-style
// version, never DuckDB's answers (duckdb, memory, main, v1.x).
func TestSessionFunctions(t *testing.T) {
	e := newEnv(t)
	e.createPeople(t, "crm", "people")
	cred := e.f.NewPrincipal(t, "analyst")
	e.grant(t, "analyst", authz.Select, "crm", "people", nil)
	toks := map[string]string{"admin": e.f.Token(t), "analyst": e.f.TokenFor(t, cred.ClientID, cred.Secret)}
	for _, who := range []string{"admin", "analyst"} {
		c := e.connect(t, who, toks[who])
		for _, tc := range []struct {
			sql, want string
		}{
			{"SELECT current_user", who},
			{"SELECT session_user", who},
			{"SELECT user", who},
			{"SELECT current_role", who},
			{"SELECT pg_catalog.current_user()", who},
			{"SELECT current_database()", e.f.Warehouse},
			{"SELECT pg_catalog.current_database()", e.f.Warehouse},
			{"SELECT current_catalog", e.f.Warehouse},
			{"SELECT datname FROM pg_catalog.pg_database", e.f.Warehouse},
			{"SELECT string_agg(DISTINCT catalog_name, ',') FROM information_schema.schemata", e.f.Warehouse},
			{"SELECT string_agg(DISTINCT table_catalog, ',') FROM information_schema.tables", e.f.Warehouse},
			{"SELECT left(version(), 16)", "PostgreSQL 16.0 "},
			{"SELECT strpos(version(), 'Floe') > 0", "true"},
			{"SELECT pg_catalog.version() LIKE 'PostgreSQL 16%'", "true"},
			{"SELECT pg_backend_pid() > 0", "true"},
			{"SELECT coalesce(current_schema(), 'none')", "none"},
			{"SELECT current_schemas(true)::VARCHAR", "[pg_catalog]"},
			{"SELECT has_table_privilege('crm.people', 'SELECT')", "true"},
			{"SELECT has_schema_privilege('crm', 'USAGE')", "true"},
			{"SELECT has_database_privilege(current_database(), 'CONNECT')", "true"},
			{"SELECT pg_catalog.pg_get_userbyid(10)", "floe"},
			{"SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_catalog.pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')", "crm"},
			{"SELECT string_agg(schema_name, ',' ORDER BY schema_name) FROM information_schema.schemata WHERE schema_name NOT IN ('pg_catalog', 'information_schema')", "crm"},
			{"SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = current_user", "1"},
		} {
			rows, err := queryRows(t, c, tc.sql)
			if err != nil {
				t.Errorf("%s as %s: %v", tc.sql, who, err)
				continue
			}
			if len(rows) != 1 || len(rows[0]) != 1 || fmt.Sprint(rows[0][0]) != tc.want {
				t.Errorf("%s as %s = %v, want %q", tc.sql, who, rows, tc.want)
			}
		}
		// A column named user is the column when quoted, as in PostgreSQL.
		if rows := mustRows(t, c, `SELECT "user" FROM (SELECT 'col' AS "user") s`); fmt.Sprint(rows[0][0]) != "col" {
			t.Errorf(`quoted "user" = %v, want the column`, rows)
		}
		// SHOW answers what tools ask for.
		for name, want := range map[string]string{"server_version": "16.0", "server_version_num": "160000"} {
			rows := mustRows(t, c, "SHOW "+name)
			if !strings.HasPrefix(fmt.Sprint(rows[0][0]), want) {
				t.Errorf("SHOW %s = %v, want %s...", name, rows, want)
			}
		}
	}
}

// TestSessionFunctionsNamesQuoted checks that the principal's name reaches
// current_user as data, never as SQL: a name with a quote is returned as
// it is.
func TestSessionFunctionsNamesQuoted(t *testing.T) {
	e := newEnv(t)
	name := "o'brien"
	cred := e.f.NewPrincipal(t, name)
	c := e.connect(t, name, e.f.TokenFor(t, cred.ClientID, cred.Secret))
	rows := mustRows(t, c, "SELECT current_user, session_user")
	if fmt.Sprint(rows[0][0]) != name || fmt.Sprint(rows[0][1]) != name {
		t.Fatalf("current_user = %v, want %q", rows, name)
	}
}

// TestPsqlMetaCommands runs psql's meta-commands tools and people use
// first: none errors, and they show Floe's objects, not DuckDB's.
func TestPsqlMetaCommands(t *testing.T) {
	e := newEnv(t)
	tbl := e.createPeople(t, "crm", "people")
	appendPeople(t, tbl, people(3)...)
	e.createPeople(t, "hr", "staff")
	cred := e.f.NewPrincipal(t, "analyst")
	e.grant(t, "analyst", authz.Select, "crm", "people", &authz.DataFilter{ExcludeColumns: []string{"ssn"}})
	toks := map[string]string{"admin": e.f.Token(t), "analyst": e.f.TokenFor(t, cred.ClientID, cred.Secret)}
	for _, c := range []struct {
		who  string
		cmd  string
		want []string
		not  []string
	}{
		{"admin", `\l`, []string{e.f.Warehouse, "UTF8", "(1 row)"}, []string{"memory", "system", "temp"}},
		{"admin", `\dn`, []string{"crm", "hr", "(2 rows)"}, []string{"main"}},
		{"analyst", `\dn`, []string{"crm", "(1 row)"}, []string{"main", "hr"}},
		{"admin", `\dn+`, []string{"crm", "hr"}, []string{"main"}},
		{"admin", `\dt`, []string{"people", "staff"}, nil},
		{"analyst", `\dt *.*`, []string{"people"}, []string{"staff"}},
		{"admin", `\d+ crm.people`, []string{`Table "crm.people"`, "salary", "double precision"}, nil},
		{"analyst", `\d+ crm.people`, []string{`Table "crm.people"`, "salary"}, []string{"ssn"}},
		{"admin", `\df`, []string{"List of functions"}, nil},
		{"admin", `\dv`, []string{"Did not find any relations"}, nil},
		{"admin", `\du`, []string{"admin"}, nil},
		{"analyst", `\conninfo`, []string{`database "` + e.f.Warehouse + `" as user "analyst"`}, nil},
	} {
		out, err := e.psql(t, c.who, toks[c.who], "-c", c.cmd)
		if err != nil {
			t.Errorf("%s as %s: %v\n%s", c.cmd, c.who, err, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s as %s: no %q in\n%s", c.cmd, c.who, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s as %s: %q in\n%s", c.cmd, c.who, w, out)
			}
		}
	}
}

// TestQualifiedCatalogColumns checks SQLAlchemy's spelling of catalog
// columns, schema.view.column, on views the engine patches.
func TestQualifiedCatalogColumns(t *testing.T) {
	e := newEnv(t)
	e.createPeople(t, "crm", "people")
	c := e.admin(t)
	for _, q := range []string{
		"SELECT pg_catalog.pg_namespace.nspname FROM pg_catalog.pg_namespace WHERE pg_catalog.pg_namespace.nspname = 'crm'",
		"SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class WHERE pg_catalog.pg_class.relname = 'people'",
		"SELECT information_schema.tables.table_schema FROM information_schema.tables WHERE information_schema.tables.table_name = 'people'",
	} {
		rows := mustRows(t, c, q)
		if len(rows) != 1 {
			t.Errorf("%s: %v, want one row", q, rows)
		}
	}
}

// TestSavepoints checks the savepoints drivers take (psycopg wraps its
// type lookups in one): SAVEPOINT and RELEASE work inside a transaction,
// ROLLBACK TO SAVEPOINT is refused, and a session holds a bounded number.
func TestSavepoints(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	ctx := context.Background()
	exec := func(sql string) error { _, err := c.Exec(ctx, sql); return err }
	if err := exec("SAVEPOINT a"); err == nil || !strings.Contains(err.Error(), "25P01") {
		t.Fatalf("SAVEPOINT outside a transaction: %v", err)
	}
	for _, q := range []string{"BEGIN", "SAVEPOINT a", "SELECT 1", "SAVEPOINT b", "RELEASE SAVEPOINT a", "COMMIT"} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := exec("BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := exec("RELEASE SAVEPOINT a"); err == nil || !strings.Contains(err.Error(), "3B001") {
		t.Fatalf("RELEASE of a savepoint of the last transaction: %v", err)
	}
	_ = exec("ROLLBACK")
	_ = exec("BEGIN")
	_ = exec("SAVEPOINT s")
	if err := exec("ROLLBACK TO SAVEPOINT s"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Fatalf("ROLLBACK TO SAVEPOINT: %v", err)
	}
	_ = exec("ROLLBACK")
	_ = exec("BEGIN")
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		err = exec(fmt.Sprintf("SAVEPOINT s%d", n))
	}
	if err == nil || !strings.Contains(err.Error(), "54000") || n != 65 {
		t.Fatalf("after %d savepoints: %v", n, err)
	}
	_ = exec("ROLLBACK")
}

// TestJSONBuildObject checks json_build_object with parameter keys, as
// SQLAlchemy's get_columns sends it, and that a statement whose result
// DuckDB describes only once it has the parameters (to_json of one) is
// refused with an error instead of ending the session.
func TestJSONBuildObject(t *testing.T) {
	e := newEnv(t)
	c := e.admin(t)
	rows := mustRows(t, c, `SELECT 1 AS a, json_build_object($1::VARCHAR, 1, 'b', true, 'c', NULL, 'd', 'x"y', 'e', 2.5)::VARCHAR AS b`, "k\"1")
	if got := fmt.Sprint(rows[0][1]); got != `{"k\"1":1,"b":true,"c":null,"d":"x\"y","e":2.5}` {
		t.Errorf("json_build_object = %s", got)
	}
	// Created on first use, once per session (a second CREATE would fail).
	for range 2 {
		if rows := mustRows(t, c, "SELECT json_build_object('a', 1)::VARCHAR, to_regtype('int8') = 20"); fmt.Sprint(rows) != `[[{"a":1} true]]` {
			t.Errorf("json_build_object, to_regtype: %v", rows)
		}
	}
	if _, err := queryRows(t, c, "SELECT 1 AS a, to_json($1::VARCHAR) AS b", "x"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Errorf("to_json of a parameter: %v", err)
	}
	if rows := mustRows(t, c, "SELECT 2"); fmt.Sprint(rows) != "[[2]]" {
		t.Errorf("the session after the refusal: %v", rows)
	}
}

// TestRegclassParameter checks CAST($1 AS regclass), which SQLAlchemy's
// get_table_comment sends with the parameter 'pg_catalog.pg_class'.
func TestRegclassParameter(t *testing.T) {
	e := newEnv(t)
	e.createPeople(t, "crm", "people")
	c := e.admin(t)
	rows := mustRows(t, c, "SELECT c.relname, d.description FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_description d "+
		"ON c.oid = d.objoid AND d.classoid = CAST($1 AS REGCLASS) WHERE c.relname = $2", "pg_catalog.pg_class", "people")
	if len(rows) != 1 || rows[0][1] != nil {
		t.Fatalf("rows %v", rows)
	}
	rows = mustRows(t, c, "SELECT CAST($1 AS regclass) = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'people')", "crm.people")
	if fmt.Sprint(rows) != "[[true]]" {
		t.Fatalf("regclass of crm.people: %v", rows)
	}
}

// TestQualifiedTableColumns checks columns qualified by the table's full
// name, as pandas' read_sql_table and SQLAlchemy write them.
func TestQualifiedTableColumns(t *testing.T) {
	e := newEnv(t)
	appendPeople(t, e.createPeople(t, "crm", "people"), people(3)...)
	c := e.admin(t)
	for _, q := range []string{
		"SELECT crm.people.id FROM crm.people WHERE crm.people.id > 1 ORDER BY crm.people.id",
		"SELECT floe.crm.people.id FROM floe.crm.people WHERE floe.crm.people.id > 1 ORDER BY 1",
		"SELECT people.id FROM crm.people WHERE people.id > 1 ORDER BY 1",
	} {
		if rows := mustRows(t, c, q); fmt.Sprint(rows) != "[[2] [3]]" {
			t.Errorf("%s: %v", q, rows)
		}
	}
	// An alias hides the table's name, as in PostgreSQL.
	if _, err := queryRows(t, c, "SELECT crm.people.id FROM crm.people p"); err == nil {
		t.Error("crm.people.id with the table aliased p: no error")
	}
}
