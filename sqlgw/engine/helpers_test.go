package engine_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/floe-lake/floe"
	"github.com/floe-lake/floe/authz"
	"github.com/floe-lake/floe/catalog"
	"github.com/floe-lake/floe/internal/testkit"
	"github.com/floe-lake/floe/lake"
)

// env is a running Floe with its SQL endpoint and a writer of its tables.
type env struct {
	f  *testkit.Floe
	lk *lake.Lake
}

func newEnv(t testing.TB, opts ...testkit.Option) *env {
	t.Helper()
	f := testkit.Start(t, opts...)
	if f.SQLAddr == "" {
		t.Fatal("the SQL endpoint is not running")
	}
	return &env{f: f, lk: lake.New(f.App.Catalog(), lake.NewBucketFS(f.App.Objects()), lake.Options{})}
}

// person is a row of the people tables the tests create.
type person struct {
	id     int64
	name   string
	region string
	ssn    string
	salary float64
}

func peopleSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "ssn", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 5, Name: "salary", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// createPeople creates namespace ns (if needed) and table ns.name in the
// default warehouse with the people schema.
func (e *env) createPeople(t testing.TB, ns, name string) *table.Table {
	t.Helper()
	return e.createPeopleWith(t, ns, name, nil)
}

// createPeopleWith is createPeople with table properties.
func (e *env) createPeopleWith(t testing.TB, ns, name string, props map[string]string) *table.Table {
	t.Helper()
	ctx := context.Background()
	cat := e.f.App.Catalog()
	wh := e.f.Warehouse
	nsp := catalog.Namespace{ns}
	if err := cat.CreateNamespace(ctx, wh, nsp, nil); err != nil && !isExists(err) {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, wh, nsp, catalog.CreateTableRequest{Name: name, Schema: peopleSchema(), Properties: props}); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lk.LoadTable(ctx, wh, catalog.Ident{Namespace: nsp, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func isExists(err error) bool { return floe.KindOf(err) == floe.AlreadyExists }

// appendPeople commits rows to tbl as one snapshot and returns the table
// as committed.
func appendPeople(t testing.TB, tbl *table.Table, rows ...person) *table.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for _, p := range rows {
		b.Field(0).(*array.Int64Builder).Append(p.id)
		b.Field(1).(*array.StringBuilder).Append(p.name)
		b.Field(2).(*array.StringBuilder).Append(p.region)
		b.Field(3).(*array.StringBuilder).Append(p.ssn)
		b.Field(4).(*array.Float64Builder).Append(p.salary)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := lake.AppendTable(context.Background(), tbl, at, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// renameColumn renames a top-level column of tbl in one commit and
// returns the table as committed.
func renameColumn(t testing.TB, tbl *table.Table, from, to string) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).RenameColumn([]string{from}, to).Commit(); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// people returns n people with ids 1..n in regions eu and us alternately.
func people(n int) []person {
	out := make([]person, n)
	for i := range out {
		id := int64(i + 1)
		region := "eu"
		if id%2 == 0 {
			region = "us"
		}
		out[i] = person{id: id, name: fmt.Sprintf("person-%d", id), region: region, ssn: fmt.Sprintf("ssn-%03d", id), salary: float64(1000 * id)}
	}
	return out
}

// connect opens a pgx connection as user with token as the password.
func (e *env) connect(t testing.TB, user, token string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, token), Host: e.f.SQLAddr, Path: "/floe", RawQuery: "sslmode=disable"}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// admin connects as the bootstrap admin.
func (e *env) admin(t *testing.T) *pgx.Conn {
	return e.connect(t, "admin", e.f.Token(t))
}

// grant grants priv on the table ns.name to principal, with a filter.
func (e *env) grant(t *testing.T, principal string, priv authz.Privilege, ns, name string, f *authz.DataFilter) {
	t.Helper()
	id := catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name}
	if _, err := e.f.App.Authz().Grant(context.Background(), authz.Grant{Grantee: authz.Principal(principal), Privilege: priv,
		On: authz.Table(e.f.Warehouse, id), Filter: f}); err != nil {
		t.Fatal(err)
	}
}

// grantUnchecked stores a grant as it is, without the checks Grant makes
// when it is given: a filter that a version before grant validation
// accepted (a subquery, an injection attempt), which the engine must
// still refuse when it reads.
func (e *env) grantUnchecked(t *testing.T, principal string, priv authz.Privilege, ns, name string, f *authz.DataFilter) {
	t.Helper()
	id := catalog.Ident{Namespace: catalog.Namespace{ns}, Name: name}
	g := authz.Grant{Grantee: authz.Principal(principal), Privilege: priv, On: authz.Table(e.f.Warehouse, id), Filter: f,
		CreatedAt: time.Now()}
	g.ID = g.Key()
	if err := e.f.App.Store().PutGrant(context.Background(), g); err != nil {
		t.Fatal(err)
	}
}

// queryRows runs sql and returns every row as []any.
func queryRows(t *testing.T, c *pgx.Conn, sql string, args ...any) ([][]any, error) {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// mustRows is queryRows failing the test on error.
func mustRows(t *testing.T, c *pgx.Conn, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := queryRows(t, c, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}
