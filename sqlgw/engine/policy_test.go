package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/authz"
)

// policyEnv has crm.people (ids 1..10, odd ids in eu, even in us) in two
// snapshots, an ungranted table crm.secret, and principals:
//   - analyst: SELECT on crm.people where region = 'eu', without ssn;
//   - mixed: SELECT where region = 'eu' (all columns) and SELECT where
//     region = 'us' without ssn;
//   - broken: SELECT with a row filter holding a subquery.
type policyEnv struct {
	*env
	first    int64    // snapshot id of the first append (ids 1..6)
	dataFile string   // path of a data file of crm.people on disk
	hidden   []string // values the analyst must never receive
}

func newPolicyEnv(t *testing.T) *policyEnv {
	e := &policyEnv{env: newEnv(t)}
	tbl := e.createPeople(t, "crm", "people")
	all := people(10)
	tbl = appendPeople(t, tbl, all[:6]...)
	e.first = tbl.CurrentSnapshot().SnapshotID
	tbl = appendPeople(t, tbl, all[6:]...)
	secret := e.createPeople(t, "crm", "secret")
	appendPeople(t, secret, person{id: 1, name: "top-secret-name", ssn: "top-secret-ssn"})
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil || len(tasks) == 0 {
		t.Fatalf("plan: %v", err)
	}
	e.dataFile = e.f.LocalPath(tasks[0].File.FilePath())
	for _, p := range all {
		e.hidden = append(e.hidden, p.ssn)
		if p.region == "us" {
			e.hidden = append(e.hidden, p.name)
		}
	}
	e.hidden = append(e.hidden, "top-secret")
	for _, name := range []string{"analyst", "mixed", "broken", "injector"} {
		e.f.NewPrincipal(t, name)
	}
	e.grant(t, "analyst", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'", ExcludeColumns: []string{"ssn"}})
	e.grant(t, "mixed", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'"})
	e.grant(t, "mixed", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'us'", ExcludeColumns: []string{"ssn"}})
	// Grants are checked when given now; these two stand for filters
	// stored before that, which reads must still refuse.
	e.grantUnchecked(t, "broken", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "id IN (SELECT id FROM crm.secret)"})
	e.grantUnchecked(t, "injector", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "true) THEN ssn END AS leak, (true"})
	return e
}

// as connects as a principal created by newPolicyEnv.
func (e *policyEnv) as(t *testing.T, name string) *pgx.Conn {
	t.Helper()
	p, err := e.f.App.Store().PrincipalByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.f.App.Auth().Issue(context.Background(), p, []string{"catalog"})
	if err != nil {
		t.Fatal(err)
	}
	return e.connect(t, name, tok.AccessToken)
}

// leak reports a hidden value found in the rows or the error.
func (e *policyEnv) leak(rows [][]any, err error) string {
	text := fmt.Sprint(rows)
	if err != nil {
		text += " " + err.Error()
	}
	for _, h := range e.hidden {
		if strings.Contains(text, h) {
			return h
		}
	}
	return ""
}

func TestPolicyFilterAndColumns(t *testing.T) {
	e := newPolicyEnv(t)
	c := e.as(t, "analyst")
	rows, err := c.Query(context.Background(), "SELECT * FROM crm.people ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, fd := range rows.FieldDescriptions() {
		cols = append(cols, fd.Name)
	}
	rows.Close()
	if strings.Join(cols, ",") != "id,name,region,salary" {
		t.Fatalf("columns %v", cols)
	}
	got := mustRows(t, c, "SELECT id, region FROM crm.people ORDER BY id")
	if len(got) != 5 {
		t.Fatalf("rows %v", got)
	}
	for _, r := range got {
		if r[1] != "eu" || r[0].(int64)%2 != 1 {
			t.Fatalf("filtered-out row %v", r)
		}
	}
	// Column masks: mixed sees ssn of eu rows only.
	m := e.as(t, "mixed")
	got = mustRows(t, m, "SELECT id, region, ssn FROM crm.people ORDER BY id")
	if len(got) != 10 {
		t.Fatalf("mixed: %v", got)
	}
	for _, r := range got {
		if r[1] == "us" && r[2] != nil || r[1] == "eu" && r[2] == nil {
			t.Fatalf("mixed: row %v", r)
		}
	}
	// No grant: the authz denial.
	_, err = queryRows(t, c, "SELECT * FROM crm.secret")
	pe := wantCode(t, err, "42501")
	if !strings.Contains(pe.Message, `principal "analyst" lacks SELECT on table "crm.secret"`) {
		t.Fatalf("denial: %s", pe.Message)
	}
	// A row filter that is not a plain predicate denies (fail closed).
	for _, who := range []string{"broken", "injector"} {
		_, err = queryRows(t, e.as(t, who), "SELECT count(*) FROM crm.people")
		wantCode(t, err, "42501")
	}
	// Revoking takes effect on a statement prepared before.
	if _, err := c.Prepare(context.Background(), "n", "SELECT count(*) FROM crm.people"); err != nil {
		t.Fatal(err)
	}
	grants, err := e.f.App.Authz().ListGrants(context.Background(), func(g *authz.Grant) bool { return g.Grantee.Name == "analyst" })
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants %v %v", grants, err)
	}
	if err := e.f.App.Authz().Revoke(context.Background(), grants[0]); err != nil {
		t.Fatal(err)
	}
	_, err = queryRows(t, c, "n")
	wantCode(t, err, "42501")
}

// TestAdversarial runs queries that try to get past the analyst's filter
// (region = 'eu', no ssn) or out of the engine's views. None may return a
// hidden value, in rows or in errors; refused ones must fail with the
// given SQLSTATE.
func TestAdversarial(t *testing.T) {
	e := newPolicyEnv(t)
	c := e.as(t, "analyst")
	for _, tc := range []struct {
		sql  string
		code string // "" : must succeed
	}{
		{"SELECT * FROM crm.people", ""},
		{"SELECT ssn FROM crm.people", "42703"},
		{"SELECT people.ssn FROM crm.people", "42703"},
		{"SELECT * FROM crm.people WHERE ssn = 'ssn-002'", "42703"},
		{"SELECT count(*), max(name), string_agg(name, ',') FROM crm.people", ""},
		{"SELECT * FROM crm.people WHERE region = 'us'", ""},
		{"SELECT * FROM crm.people WHERE region <> 'eu' OR true", ""},
		{"WITH x AS (SELECT * FROM crm.people) SELECT * FROM x", ""},
		{"SELECT * FROM crm.people UNION ALL SELECT * FROM crm.people", ""},
		{"SELECT (SELECT string_agg(name, ',') FROM crm.people)", ""},
		{"SELECT a.name, b.name FROM crm.people a JOIN crm.people b ON a.id + 1 = b.id", ""},
		{"SELECT * FROM crm.people p1, LATERAL (SELECT p1.name) x", ""},
		{fmt.Sprintf("SELECT * FROM crm.people AT (VERSION => %d)", e.first), ""},
		{"SELECT * FROM crm.people WHERE CAST(name AS INTEGER) = 1", "22P02"},
		{"SELECT CAST(name AS INTEGER) FROM crm.people", "22P02"},
		{"SELECT * FROM crm.people ORDER BY CAST(name AS INTEGER)", "22P02"},
		{"SELECT error(name) FROM crm.people", "42501"},
		{"SELECT * FROM crm.secret", "42501"},
		{"SELECT * FROM floe.crm.secret", "42501"},
		{`SELECT * FROM "crm"."secret"`, "42501"},
		{"SELECT * FROM crm.people, crm.secret", "42501"},
		{"SELECT * FROM read_parquet('" + e.dataFile + "')", "42501"},
		{"SELECT * FROM '" + e.dataFile + "'", "42P01"},
		{`SELECT * FROM "` + e.dataFile + `"`, "42P01"},
		{"SELECT * FROM read_csv('/etc/passwd')", "42501"},
		{"SELECT * FROM read_text('/etc/passwd')", "42501"},
		{"SELECT * FROM glob('/**')", "42501"},
		{"SELECT * FROM query_table('crm.people')", "42501"},
		{"SELECT * FROM query('SELECT 1')", "42501"},
		{"SELECT * FROM range(10)", "42501"},
		{"SELECT * FROM duckdb_tables()", "42501"},
		{"SELECT * FROM duckdb_views()", "42501"},
		{"SELECT * FROM duckdb_settings()", "42501"},
		{"SELECT * FROM duckdb_databases()", "42501"},
		{"SELECT * FROM pragma_database_list", "42P01"},
		{"SELECT getenv('HOME')", "42501"},
		{"SELECT current_setting('allowed_directories')", "42501"},
		{"SELECT * FROM memory.main.x", "42501"},
		{"SELECT * FROM system.main.duckdb_tables", "42501"},
		{"SELECT * FROM information_schema.tables", ""},
		{"SELECT * FROM information_schema.columns", ""},
		{"SELECT * FROM pg_catalog.pg_class", ""},
		{"SELECT * FROM pg_catalog.pg_settings", "42501"},
		{"COPY (SELECT * FROM crm.people) TO '/tmp/x.csv'", "42501"},
		{"COPY crm.people FROM '/tmp/x.csv'", "42501"},
		{"ATTACH '/tmp/x.db' AS x", "42501"},
		{"DETACH memory", "42501"},
		{"INSTALL httpfs", "42501"},
		{"LOAD parquet", "42501"},
		{"SET threads = 1", "42501"},
		{"SET enable_external_access = true", "42501"},
		{"RESET lock_configuration", "42501"},
		{"PRAGMA database_list", "42501"},
		{"CALL duckdb_tables()", "42501"},
		{"CREATE TABLE crm.x AS SELECT * FROM crm.people", "42501"}, // no CREATE_TABLE
		{"CREATE TABLE x AS SELECT * FROM crm.people", "3F000"},     // no schema
		{"CREATE VIEW v AS SELECT 1", "3F000"},                      // no schema
		{"CREATE VIEW crm.v AS SELECT * FROM crm.people", "42501"},  // no CREATE_VIEW
		{"CREATE MACRO m(x) AS x", "0A000"},
		{"EXPORT DATABASE '/tmp/exp'", "42501"},
		{"IMPORT DATABASE '/tmp/exp'", "42501"},
		{"USE memory", "42501"},
		{"INSERT INTO crm.people VALUES (1, 'x', 'eu', 'y', 1)", "42501"}, // no MODIFY (and a data filter)
		{"DELETE FROM crm.people", "42501"},
		{"UPDATE crm.people SET name = 'x'", "42501"},
		{"MERGE INTO crm.people t USING crm.secret s ON t.id = s.id WHEN MATCHED THEN DELETE", "42501"},
		{"EXPLAIN SELECT * FROM crm.people", "0A000"},
		{"DESCRIBE crm.people", "0A000"},
		{"SUMMARIZE crm.people", "0A000"},
		{"SHOW TABLES", "42704"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
				rows, err := queryRows(t, c, tc.sql, mode)
				if h := e.leak(rows, err); h != "" {
					t.Fatalf("leaked %q: rows %v err %v", h, rows, err)
				}
				if tc.code == "" {
					if err != nil {
						t.Fatalf("%v", err)
					}
					for _, r := range rows {
						for _, v := range r {
							if v == "us" {
								t.Fatalf("a us row: %v", r)
							}
						}
					}
					continue
				}
				wantCode(t, err, tc.code)
			}
		})
	}
	// The catalog lists only what the analyst may see, and no ssn.
	got := mustRows(t, c, "SELECT table_schema, table_name, column_name FROM information_schema.columns ORDER BY 1, 2, 3")
	var listed []string
	for _, r := range got {
		listed = append(listed, fmt.Sprintf("%s.%s.%s", r...))
	}
	if strings.Join(listed, " ") != "crm.people.id crm.people.name crm.people.region crm.people.salary" {
		t.Fatalf("information_schema.columns: %v", listed)
	}
}
