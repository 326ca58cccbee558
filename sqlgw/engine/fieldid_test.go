package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
)

// The attacks of issue 14 leak 2: data filters and column tags follow the
// column (its Iceberg field id), not its name, so that renaming, dropping
// and re-adding columns never widens what a filtered principal reads.

// fieldEnv is crm.people (ten people, odd ids in eu) with a principal per
// kind of restriction; the table's owner changes the schema afterwards.
type fieldEnv struct {
	*policyEnv
	tbl *table.Table
}

func newFieldEnv(t *testing.T) *fieldEnv {
	pe := newPolicyEnv(t)
	e := &fieldEnv{policyEnv: pe}
	tbl, err := e.lk.LoadTable(context.Background(), e.f.Warehouse, peopleID)
	if err != nil {
		t.Fatal(err)
	}
	e.tbl = tbl
	for _, name := range []string{"noSSN", "euOnly", "nameOnly", "tagged", "nsNoSSN"} {
		e.f.NewPrincipal(t, name)
	}
	e.grant(t, "noSSN", authz.Select, "crm", "people", &authz.DataFilter{ExcludeColumns: []string{"ssn"}})
	e.grant(t, "euOnly", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'"})
	e.grant(t, "nameOnly", authz.Select, "crm", "people", &authz.DataFilter{IncludeColumns: []string{"id", "name"}})
	ctx := context.Background()
	az := e.f.App.Authz()
	sec := authz.Table(e.f.Warehouse, peopleID)
	if err := az.SetTags(ctx, authz.TagTarget{On: sec}, map[string]string{"sensitivity": "low"}); err != nil {
		t.Fatal(err)
	}
	if err := az.SetTags(ctx, authz.TagTarget{On: sec, Column: "ssn"}, map[string]string{"sensitivity": "high"}); err != nil {
		t.Fatal(err)
	}
	if _, err := az.Grant(ctx, authz.Grant{Grantee: authz.Principal("tagged"), Privilege: authz.Select,
		On: authz.Warehouse(e.f.Warehouse), TagExpr: "sensitivity = low"}); err != nil {
		t.Fatal(err)
	}
	if _, err := az.Grant(ctx, authz.Grant{Grantee: authz.Principal("nsNoSSN"), Privilege: authz.Select,
		On: authz.NamespaceOf(e.f.Warehouse, catalog.Namespace{"crm"}), AllTables: true,
		Filter: &authz.DataFilter{ExcludeColumns: []string{"ssn"}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

var peopleID = catalog.Ident{Namespace: catalog.Namespace{"crm"}, Name: "people"}

// evolve applies one schema change as the table's owner would.
func (e *fieldEnv) evolve(t *testing.T, change func(u *table.UpdateSchema)) {
	t.Helper()
	tbl, err := e.lk.LoadTable(context.Background(), e.f.Warehouse, peopleID)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	u := tx.UpdateSchema(true, false)
	change(u)
	if err := u.Commit(); err != nil {
		t.Fatal(err)
	}
	if e.tbl, err = tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ssnLeak returns an ssn value found in rows or err.
func ssnLeak(rows [][]any, err error) string {
	text := fmt.Sprint(rows)
	if err != nil {
		text += " " + err.Error()
	}
	if i := strings.Index(text, "ssn-0"); i >= 0 {
		return text[i:min(len(text), i+7)]
	}
	return ""
}

// columnNames returns the column names a query returns.
func columnNames(t *testing.T, c *pgx.Conn, sql string) []string {
	t.Helper()
	// The simple protocol: pgx keeps the columns of a statement it prepared.
	rows, err := c.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var cols []string
	for _, fd := range rows.FieldDescriptions() {
		cols = append(cols, fd.Name)
	}
	return cols
}

// TestFieldIDRenameExcluded: renaming an excluded column does not show it,
// for a grant on the table, a namespace grant and a column tag, whether
// the principal read the table before the rename or not.
func TestFieldIDRenameExcluded(t *testing.T) {
	for _, readFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("readFirst=%v", readFirst), func(t *testing.T) {
			e := newFieldEnv(t)
			who := []string{"noSSN", "nsNoSSN", "tagged"}
			if readFirst {
				for _, p := range who {
					rows, err := queryRows(t, e.as(t, p), "SELECT * FROM crm.people")
					if err != nil || ssnLeak(rows, nil) != "" || len(rows) != 10 {
						t.Fatalf("%s before: %v %v", p, rows, err)
					}
				}
			}
			e.evolve(t, func(u *table.UpdateSchema) { u.RenameColumn([]string{"ssn"}, "tax_id") })
			for _, p := range who {
				c := e.as(t, p)
				rows, err := queryRows(t, c, "SELECT * FROM crm.people ORDER BY id")
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if h := ssnLeak(rows, err); h != "" {
					t.Fatalf("%s read the renamed column: %q in %v", p, h, rows)
				}
				if len(rows) != 10 {
					t.Fatalf("%s: %d rows", p, len(rows))
				}
				if cols := columnNames(t, c, "SELECT * FROM crm.people"); strings.Join(cols, ",") != "id,name,region,salary" {
					t.Fatalf("%s: columns %v", p, cols)
				}
				_, err = queryRows(t, c, "SELECT tax_id FROM crm.people")
				wantCode(t, err, "42703")
				// Time travel to a snapshot from before the rename.
				rows, err = queryRows(t, c, fmt.Sprintf("SELECT * FROM crm.people AT (VERSION => %d)", e.first))
				if err != nil || ssnLeak(rows, err) != "" {
					t.Fatalf("%s time travel: %v %v", p, rows, err)
				}
			}
		})
	}
}

// TestFieldIDRowFilterColumnDropped: a row filter whose column was
// dropped fails closed, even when a new column takes the old name.
func TestFieldIDRowFilterColumnDropped(t *testing.T) {
	e := newFieldEnv(t)
	c := e.as(t, "euOnly")
	if rows := mustRows(t, c, "SELECT id FROM crm.people"); len(rows) != 5 {
		t.Fatalf("before: %v", rows)
	}
	dropAndReAddRegion(t, e, c, "region")
}

// dropAndReAddRegion drops the column named dropped, adds a new "region"
// column holding 'eu' in every row, and checks that the row filter of c's
// principal on region fails closed: 42501 naming the column, the table and
// the grant, and no rows.
func dropAndReAddRegion(t *testing.T, e *fieldEnv, c *pgx.Conn, dropped string) {
	t.Helper()
	e.evolve(t, func(u *table.UpdateSchema) { u.DeleteColumn([]string{dropped}) })
	e.evolve(t, func(u *table.UpdateSchema) {
		u.AddColumn([]string{"region"}, iceberg.PrimitiveTypes.String, "", false, nil)
	})
	if _, err := e.admin(t).Exec(context.Background(), "UPDATE crm.people SET region = 'eu'"); err != nil {
		t.Fatal(err)
	}
	rows, err := queryRows(t, c, "SELECT id FROM crm.people")
	pe := wantCode(t, err, "42501")
	if len(rows) != 0 {
		t.Fatalf("rows after drop and re-add: %v", rows)
	}
	for _, want := range []string{"no longer exists", `"region"`, "crm.people", "grant"} {
		if !strings.Contains(pe.Message, want) {
			t.Fatalf("error %q does not say %q", pe.Message, want)
		}
	}
}

// TestFieldIDRowFilterColumnRenamed: a rename of the row filter's column
// keeps the filter on it; dropping it after the rename fails closed.
func TestFieldIDRowFilterColumnRenamed(t *testing.T) {
	e := newFieldEnv(t)
	c := e.as(t, "euOnly")
	e.evolve(t, func(u *table.UpdateSchema) { u.RenameColumn([]string{"region"}, "area") })
	rows := mustRows(t, c, "SELECT id, area FROM crm.people ORDER BY id")
	if len(rows) != 5 {
		t.Fatalf("after rename: %v", rows)
	}
	for _, r := range rows {
		if r[1] != "eu" {
			t.Fatalf("after rename: %v", rows)
		}
	}
	dropAndReAddRegion(t, e, c, "area")
	// The grant listing warns the grantor.
	az := e.f.App.Authz()
	pol, err := az.Policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	grants := pol.Grants(func(g *authz.Grant) bool { return g.Grantee.Name == "euOnly" })
	if len(grants) != 1 {
		t.Fatalf("grants %v", grants)
	}
	if w := az.FilterWarnings(context.Background(), pol, &grants[0]); len(w) != 1 || !strings.Contains(w[0], `"region"`) {
		t.Fatalf("warnings %q", w)
	}
	for _, g := range pol.Grants(func(g *authz.Grant) bool { return g.Grantee.Name == "noSSN" }) {
		if w := az.FilterWarnings(context.Background(), pol, &g); len(w) != 0 {
			t.Fatalf("warnings for a sound grant: %q", w)
		}
	}
}

// TestFieldIDIncluded: a renamed included column stays included under its
// new name; a column added later is not included, even under the name of
// an included column that was dropped.
func TestFieldIDIncluded(t *testing.T) {
	e := newFieldEnv(t)
	c := e.as(t, "nameOnly")
	if cols := columnNames(t, c, "SELECT * FROM crm.people"); strings.Join(cols, ",") != "id,name" {
		t.Fatalf("before: %v", cols)
	}
	e.evolve(t, func(u *table.UpdateSchema) { u.RenameColumn([]string{"name"}, "full_name") })
	if cols := columnNames(t, c, "SELECT * FROM crm.people"); strings.Join(cols, ",") != "id,full_name" {
		t.Fatalf("after rename: %v", cols)
	}
	// ssn becomes "name": still not included.
	e.evolve(t, func(u *table.UpdateSchema) { u.RenameColumn([]string{"ssn"}, "name") })
	e.evolve(t, func(u *table.UpdateSchema) {
		u.AddColumn([]string{"phone"}, iceberg.PrimitiveTypes.String, "", false, nil)
	})
	rows, err := queryRows(t, c, "SELECT * FROM crm.people")
	if h := ssnLeak(rows, err); h != "" || err != nil {
		t.Fatalf("leak %q: %v %v", h, rows, err)
	}
	if cols := columnNames(t, c, "SELECT * FROM crm.people"); strings.Join(cols, ",") != "id,full_name" {
		t.Fatalf("after add: %v", cols)
	}
}

// TestFieldIDRemoveSchemas: once the old schemas are removed from the
// metadata, the filters still hide the renamed column, for a grant on the
// table, a namespace grant and a column tag, whether the principals read
// the table before the schema changes or not.
func TestFieldIDRemoveSchemas(t *testing.T) {
	for _, readFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("readFirst=%v", readFirst), func(t *testing.T) {
			e := newFieldEnv(t)
			who := []string{"noSSN", "nsNoSSN", "tagged"}
			if readFirst {
				for _, p := range who {
					mustRows(t, e.as(t, p), "SELECT * FROM crm.people")
				}
			}
			e.evolve(t, func(u *table.UpdateSchema) { u.RenameColumn([]string{"ssn"}, "tax_id") })
			// A snapshot under the new schema, then the old snapshots and
			// schemas removed: no trace of the name "ssn" is left.
			if _, err := e.admin(t).Exec(context.Background(), "UPDATE crm.people SET salary = salary + 1"); err != nil {
				t.Fatal(err)
			}
			tbl, err := e.lk.LoadTable(context.Background(), e.f.Warehouse, peopleID)
			if err != nil {
				t.Fatal(err)
			}
			var oldSchemas []int
			for _, s := range tbl.Metadata().Schemas() {
				if s.ID != tbl.Schema().ID {
					oldSchemas = append(oldSchemas, s.ID)
				}
			}
			var oldSnaps []int64
			for _, s := range tbl.Metadata().Snapshots() {
				if s.SnapshotID != tbl.CurrentSnapshot().SnapshotID {
					oldSnaps = append(oldSnaps, s.SnapshotID)
				}
			}
			if len(oldSchemas) == 0 || len(oldSnaps) == 0 {
				t.Fatal("no old schema or snapshot")
			}
			_, err = e.f.App.Catalog().CommitTable(context.Background(), e.f.Warehouse, catalog.TableCommit{
				Ident: peopleID, Updates: table.Updates{table.NewRemoveSnapshotsUpdate(oldSnaps, false), table.NewRemoveSchemasUpdate(oldSchemas)}})
			if err != nil {
				t.Fatal(err)
			}
			tbl, err = e.lk.LoadTable(context.Background(), e.f.Warehouse, peopleID)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tbl.Metadata().Schemas()); n != 1 {
				t.Fatalf("%d schemas left", n)
			}
			for _, p := range who {
				rows, err := queryRows(t, e.as(t, p), "SELECT * FROM crm.people")
				if h := ssnLeak(rows, err); h != "" || err != nil {
					t.Fatalf("%s: leak %q: %v %v", p, h, rows, err)
				}
			}
		})
	}
}

// TestFieldIDGrantAfterChange: a filter granted after a drop and re-add
// binds to the column the name has when it is granted.
func TestFieldIDGrantAfterChange(t *testing.T) {
	e := newFieldEnv(t)
	e.evolve(t, func(u *table.UpdateSchema) { u.DeleteColumn([]string{"region"}) })
	e.evolve(t, func(u *table.UpdateSchema) {
		u.AddColumn([]string{"region"}, iceberg.PrimitiveTypes.String, "", false, nil)
	})
	if _, err := e.admin(t).Exec(context.Background(), "UPDATE crm.people SET region = 'eu' WHERE id <= 3"); err != nil {
		t.Fatal(err)
	}
	e.f.NewPrincipal(t, "late")
	e.grant(t, "late", authz.Select, "crm", "people", &authz.DataFilter{RowFilter: "region = 'eu'"})
	rows := mustRows(t, e.as(t, "late"), "SELECT id FROM crm.people ORDER BY id")
	if fmt.Sprint(rows) != "[[1] [2] [3]]" {
		t.Fatalf("rows %v", rows)
	}
	// The grant made before the drop still fails closed.
	_, err := queryRows(t, e.as(t, "euOnly"), "SELECT id FROM crm.people")
	wantCode(t, err, "42501")
}
