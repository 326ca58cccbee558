package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit/bypass"
	"github.com/floe-lake/floe/lake"
)

// TestSecondWall: a table whose metadata references files outside its
// location (committed before the catalog checked, simulated here by a
// commit below the catalog's checks) is not read by the SQL endpoint: the
// query fails with SQLSTATE 42501 naming the file and the table location,
// over pgwire and over the HTTP query API, for SELECT and DML alike, and
// the foreign rows are never served.
func TestSecondWall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	hr := appendPeople(t, e.createPeople(t, "hr", "payroll"), people(3)...)
	files, err := lake.CurrentDataFiles(ctx, hr)
	if err != nil {
		t.Fatal(err)
	}
	foreign := files[0].FilePath()

	own := e.createPeople(t, "sandbox", "mine")
	raw := lake.New(bypass.Tables{Cat: e.f.App.Catalog(), Store: e.f.App.Store(), IO: e.f.App.Objects().FileIO()},
		lake.NewBucketFS(e.f.App.Objects()), lake.Options{})
	mine, err := raw.LoadTable(ctx, e.f.Warehouse, catalog.Ident{Namespace: catalog.Namespace{"sandbox"}, Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.AppendFiles(ctx, mine, files, nil); err != nil {
		t.Fatal(err)
	}
	loc := own.Location()

	c := e.admin(t)
	for _, sql := range []string{
		"SELECT * FROM sandbox.mine",
		"SELECT count(*) FROM sandbox.mine",
		"SELECT ssn FROM sandbox.mine WHERE id = 1",
		"DELETE FROM sandbox.mine WHERE id = 1",
	} {
		rows, err := queryRows(t, c, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: rows %v, err %v; want an ErrorResponse", sql, rows, err)
		}
		if pe.Code != "42501" || !strings.Contains(pe.Message, foreign) || !strings.Contains(pe.Message, loc) {
			t.Errorf("%s: %s %q, want 42501 naming %s and %s", sql, pe.Code, pe.Message, foreign, loc)
		}
	}

	r := e.f.Do(t, "POST", "/api/v1/query", map[string]any{"sql": "SELECT * FROM sandbox.mine"})
	if r.Status != 403 || !strings.Contains(string(r.Body), foreign) || !strings.Contains(string(r.Body), loc) || strings.Contains(string(r.Body), "ssn-") {
		t.Errorf("HTTP query: %d %s", r.Status, r.Body)
	}

	// The wall stops only what lies outside: the source table still reads.
	if got := mustRows(t, c, "SELECT count(*) FROM hr.payroll"); len(got) != 1 || got[0][0] != int64(3) {
		t.Errorf("hr.payroll: %v", got)
	}
}
